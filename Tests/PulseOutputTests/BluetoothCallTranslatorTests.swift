// A call on a Bluetooth headset made by an application that sets no role (issue 20, item 4): the capture that opens
// the headset's microphone is an inferred call (microphone#N) and brings the profile switch (profile#C).
// The reducer nests the two (rules 3 and 4): paused without an output loss, resumed on the A2DP sink once the capture
// has ended and the switch is back. Notice sequences shaped like the servers' (see ProfileSwitchTranslatorTests for
// the sources read): PulseAudio 16 switches inside the capture's own request (module-bluetooth-policy, for a phone-role
// capture, or any with `auto_switch=2`), WirePlumber 0.5 500 ms after the capture links and back 2 s after it ends.
import EarshotCore
import PulseOutput
import Testing

@Suite("A call on a Bluetooth headset: one call, paused without an output loss")
struct BluetoothCallTranslatorTests {
    let speakers = SinkSnapshot(name: "alsa_output.pci-0000_00_1f.3.analog-stereo", index: 2, cardIndex: 0)

    static func card(_ index: UInt32, _ profile: String, api: String) -> CardSnapshot {
        let profiles = ["a2dp_sink", "handsfree_head_unit", "a2dp-sink", "headset-head-unit", "off"].map {
            CardProfileSnapshot(name: $0, sinkCount: $0 == "off" ? 0 : 1, sourceCount: $0.contains("head") ? 1 : 0)
        }
        return CardSnapshot(index: index, name: "bluez_card.00_11_22_33_44_55", profiles: profiles,
                            activeProfileName: profile, deviceBus: "bluetooth", deviceAPI: api)
    }

    static func at(_ milliseconds: Int64) -> Moment { Moment(milliseconds: milliseconds) }

    /// The reducer fed `events` from a playing player.
    func played(_ events: [Event]) -> (state: PlayerState, commands: [Command]) {
        var state = PlayerState(playback: .playing, queue: QueueCursor(trackCount: 3, index: 0),
                                stream: StreamCondition(isOpen: true, isCorked: false))
        let commands = events.flatMap { state.apply($0) }
        return (state, commands)
    }

    @Test("PulseAudio 16: the switch comes with the capture; the call counts 400 ms later; both end, then resume")
    func pulseAudio() {
        let a2dp = SinkSnapshot(name: "bluez_sink.00_11_22_33_44_55.a2dp_sink", index: 40, cardIndex: 7,
                                bluetoothProfile: "a2dp_sink")
        let headUnit = SinkSnapshot(name: "bluez_sink.00_11_22_33_44_55.handsfree_head_unit", index: 41, cardIndex: 7,
                                    bluetoothProfile: "handsfree_head_unit")
        let a2dpAgain = SinkSnapshot(name: a2dp.name, index: 42, cardIndex: 7, bluetoothProfile: "a2dp_sink")
        let laptopMicrophone = SourceSnapshot(index: 3, cardIndex: 0)
        // A softphone recording with media.role=phone from the laptop's microphone, client 12.
        let capture = SourceOutputSnapshot(index: 60, sourceIndex: 3, mediaRole: "phone", clientIndex: 12,
                                           applicationName: "Linphone")
        let call = InterruptionSource.microphoneCapture(client: 12)
        let profile = InterruptionSource.profileSwitch(card: 7)
        var translator = JudgedTranslator()
        var events = translator.cardChanged(Self.card(7, "a2dp_sink", api: "bluez"), at: Self.at(0))
        events += translator.sourceChanged(laptopMicrophone, at: Self.at(0))
        events += translator.ourStreamIsOn(a2dp, sinkInputIndex: 10, at: Self.at(0))
        #expect(events.isEmpty)

        // SINK REMOVE overtakes the capture's description; the rest of the switch follows.
        events += translator.sinkRemoved(40, at: Self.at(1_000))
        events += translator.sourceOutputChanged(capture, at: Self.at(1_002))
        events += translator.ourStreamLeftRemovedSink(at: Self.at(1_003))
        events += translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: Self.at(1_004))
        events += translator.sinkAdded(headUnit)
        events += translator.cardChanged(Self.card(7, "handsfree_head_unit", api: "bluez"), at: Self.at(1_005))
        events += translator.ourStreamIsOn(headUnit, sinkInputIndex: 10, at: Self.at(1_010))
        #expect(translator.deadline == Self.at(1_402))
        events += translator.timerExpired(at: Self.at(1_402))
        #expect(events == [.interruptionBegan(profile, at: Self.at(1_000)), .outputAppeared,
                           .interruptionBegan(call, at: Self.at(1_402))])

        // The call hangs up: the capture goes first, then the policy switches back and our stream returns to A2DP.
        events += translator.sourceOutputRemoved(60, at: Self.at(60_000))
        #expect(played(events).state.playback == .paused(.interruption), "the switch still holds the player")
        events += translator.sinkRemoved(41, at: Self.at(60_001))
        events += translator.ourStreamLeftRemovedSink(at: Self.at(60_002))
        events += translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: Self.at(60_003))
        events += translator.sinkAdded(a2dpAgain)
        events += translator.cardChanged(Self.card(7, "a2dp_sink", api: "bluez"), at: Self.at(60_004))
        events += translator.ourStreamIsOn(a2dpAgain, sinkInputIndex: 10, at: Self.at(60_010))
        #expect(events.suffix(3) == [.interruptionEnded(call, resumeAllowed: true, at: Self.at(60_000)),
                                     .outputAppeared,
                                     .interruptionEnded(profile, resumeAllowed: true, at: Self.at(60_010))])
        let outcome = played(events)
        #expect(outcome.commands == [.cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)
        #expect(outcome.state.interruptions.isEmpty)
        #expect(!events.contains { if case .outputLost = $0 { return true } else { return false } })
    }

    @Test("WirePlumber 0.5: a browser's capture of the headset counts at 400 ms, the switch follows at 500 ms")
    func wirePlumber() {
        let a2dp = SinkSnapshot(name: "bluez_output.00_11_22_33_44_55.1", index: 70, cardIndex: 50,
                                bluetoothProfile: "a2dp-sink")
        let headUnit = SinkSnapshot(name: a2dp.name, index: 71, cardIndex: 50, bluetoothProfile: "headset-head-unit")
        let a2dpAgain = SinkSnapshot(name: a2dp.name, index: 72, cardIndex: 50, bluetoothProfile: "a2dp-sink")
        // WirePlumber's loopback source for the headset's microphone, a source of the device.
        let headsetInput = SourceSnapshot(index: 80, cardIndex: 50)
        let capture = SourceOutputSnapshot(index: 90, sourceIndex: 80, mediaRole: nil, clientIndex: 33,
                                           applicationName: "Chromium input", applicationBinary: "chrome")
        let call = InterruptionSource.microphoneCapture(client: 33)
        let profile = InterruptionSource.profileSwitch(card: 50)
        var translator = JudgedTranslator()
        var events = translator.cardChanged(Self.card(50, "a2dp-sink", api: "bluez5"), at: Self.at(0))
        events += translator.sourceChanged(headsetInput, at: Self.at(0))
        events += translator.ourStreamIsOn(a2dp, sinkInputIndex: 10, at: Self.at(0))
        // Chromium opens its capture corked and uncorks it to record.
        var corked = capture
        corked.corked = true
        events += translator.sourceOutputChanged(corked, at: Self.at(1_000))
        events += translator.sourceOutputChanged(capture, at: Self.at(1_050))
        events += translator.timerExpired(at: Self.at(1_450))
        #expect(events == [.interruptionBegan(call, at: Self.at(1_450))])
        // 500 ms after the link: the device's profile first, then the node goes (either order is handled).
        events += translator.cardChanged(Self.card(50, "headset-head-unit", api: "bluez5"), at: Self.at(1_550))
        events += translator.sinkRemoved(70, at: Self.at(1_551))
        events += translator.sinkAdded(headUnit)
        events += translator.ourStreamLeftRemovedSink(at: Self.at(1_560))
        events += translator.ourStreamIsOn(headUnit, sinkInputIndex: 10, at: Self.at(1_570))
        #expect(translator.profileSwitches == [50: .call])
        // The tracks are stopped: the capture goes; 2 s later the headset is back on A2DP.
        events += translator.sourceOutputRemoved(90, at: Self.at(30_000))
        #expect(played(events).state.playback == .paused(.interruption), "the switch still holds the player")
        events += translator.sinkRemoved(71, at: Self.at(32_000))
        events += translator.sinkAdded(a2dpAgain)
        events += translator.ourStreamLeftRemovedSink(at: Self.at(32_001))
        events += translator.ourStreamIsOn(a2dpAgain, sinkInputIndex: 10, at: Self.at(32_010))
        events += translator.cardChanged(Self.card(50, "a2dp-sink", api: "bluez5"), at: Self.at(32_020))
        #expect(events == [
            .interruptionBegan(call, at: Self.at(1_450)), .interruptionBegan(profile, at: Self.at(1_551)),
            .outputAppeared, .interruptionEnded(call, resumeAllowed: true, at: Self.at(30_000)), .outputAppeared,
            .interruptionEnded(profile, resumeAllowed: true, at: Self.at(32_010)),
        ])
        let outcome = played(events)
        #expect(outcome.commands == [.fadeOutAndCork, .cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)
    }

    @Test("WirePlumber 0.5: a probe of the headset's microphone shorter than the delay pauses nothing")
    func wirePlumberProbe() {
        let a2dp = SinkSnapshot(name: "bluez_output.00_11_22_33_44_55.1", index: 70, cardIndex: 50,
                                bluetoothProfile: "a2dp-sink")
        var translator = JudgedTranslator()
        var events = translator.cardChanged(Self.card(50, "a2dp-sink", api: "bluez5"), at: Self.at(0))
        events += translator.sourceChanged(SourceSnapshot(index: 80, cardIndex: 50), at: Self.at(0))
        events += translator.ourStreamIsOn(a2dp, sinkInputIndex: 10, at: Self.at(0))
        events += translator.sourceOutputChanged(
            SourceOutputSnapshot(index: 91, sourceIndex: 80, mediaRole: nil, clientIndex: 33), at: Self.at(1_000))
        events += translator.sourceOutputRemoved(91, at: Self.at(1_200))
        #expect(translator.deadline == nil)
        // WirePlumber switches only after 500 ms of a linked capture: nothing else happens.
        #expect(events.isEmpty)
    }

    @Test("The headset unplugged during its call: output lost, and the capture's end brings nothing back")
    func unplugDuringCall() {
        let a2dp = SinkSnapshot(name: "bluez_output.00_11_22_33_44_55.1", index: 70, cardIndex: 50,
                                bluetoothProfile: "a2dp-sink")
        let headUnit = SinkSnapshot(name: a2dp.name, index: 71, cardIndex: 50, bluetoothProfile: "headset-head-unit")
        let capture = SourceOutputSnapshot(index: 90, sourceIndex: 80, mediaRole: nil, clientIndex: 33)
        var translator = JudgedTranslator()
        var events = translator.cardChanged(Self.card(50, "a2dp-sink", api: "bluez5"), at: Self.at(0))
        events += translator.sourceChanged(SourceSnapshot(index: 80, cardIndex: 50), at: Self.at(0))
        events += translator.ourStreamIsOn(a2dp, sinkInputIndex: 10, at: Self.at(0))
        events += translator.sourceOutputChanged(capture, at: Self.at(1_000))
        events += translator.timerExpired(at: Self.at(1_400))
        events += translator.cardChanged(Self.card(50, "headset-head-unit", api: "bluez5"), at: Self.at(1_500))
        events += translator.sinkRemoved(70, at: Self.at(1_501))
        events += translator.ourStreamLeftRemovedSink(at: Self.at(1_502))
        events += translator.ourStreamIsOn(headUnit, sinkInputIndex: 10, at: Self.at(1_503))
        // Unplugged: the sink, the loopback source and the card go; the capture is killed last.
        events += translator.sinkRemoved(71, at: Self.at(9_000))
        events += translator.sourceRemoved(80, at: Self.at(9_001))
        events += translator.cardRemoved(50, at: Self.at(9_002))
        events += translator.sourceOutputRemoved(90, at: Self.at(9_003))
        let outcome = played(events)
        #expect(events.contains(.outputLost(.deviceRemoved)))
        #expect(outcome.commands == [.fadeOutAndCork, .cork])
        #expect(outcome.state.playback == .paused(.outputLost(.deviceRemoved)))
        #expect(outcome.state.interruptions.isEmpty)
        #expect(translator.activeCalls.isEmpty && translator.profileSwitches.isEmpty)
    }
}
