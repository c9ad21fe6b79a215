// Bluetooth profile switches (rule 17) through the translator, with notice sequences shaped like the servers'.
// No Bluetooth exists on the test machines, so the shapes come from PLATFORM.md ("Today's desktops": the card
// stays, the sink is removed and another appears, the stream is moved) and from the servers' sources as read:
// - PulseAudio 16.1: module-bluez5-device.c (sinks `bluez_sink.ADDR.PROFILE` with property `bluetooth.protocol`;
//   card `bluez_card.ADDR`, `device.bus=bluetooth`, `device.api=bluez`; profiles `a2dp_sink`, `headset_head_unit`,
//   `handsfree_head_unit`, `off`; set_profile_cb unlinks the old sink and creates the new one), pulsecore/card.c
//   (pa_card_set_profile posts CARD CHANGE only after that), pulsecore/sink.c (pa_sink_unlink moves the sink's
//   streams to the default sink) and module-bluetooth-policy.c (a capture stream with media.role=phone on any source
//   switches every Bluetooth card in a2dp_sink to a head unit profile; the last one ending switches back).
// - PipeWire 1.4 spa/plugins/bluez5/bluez5-device.c (profiles `a2dp-sink`, `a2dp-sink-aac`, `headset-head-unit`;
//   node property `api.bluez5.profile`; `device.bus=bluetooth`, `device.api=bluez5`) with WirePlumber 0.5's
//   monitors/bluez.lua (sink node `bluez_output.ADDR.1` under both profiles; loopback source `bluez_input.ADDR`
//   belonging to the device) and device/autoswitch-bluetooth-profile.lua (switch 500 ms after a capture links to
//   that loopback source, back 2 s after the last one goes).
import EarshotCore
import PulseOutput
import Testing

/// A PulseAudio 16 headset: its card, its sinks in both profiles, and what a call adds.
private enum PulseAudioHeadset {
    static let a2dpProfile = CardProfileSnapshot(name: "a2dp_sink", sinkCount: 1, sourceCount: 0)
    static let headUnitProfile = CardProfileSnapshot(name: "handsfree_head_unit", sinkCount: 1, sourceCount: 1)
    static let profiles = [
        a2dpProfile, CardProfileSnapshot(name: "headset_head_unit", sinkCount: 1, sourceCount: 1), headUnitProfile,
        CardProfileSnapshot(name: "off", sinkCount: 0, sourceCount: 0),
    ]

    static func card(_ profile: String) -> CardSnapshot {
        CardSnapshot(index: 7, name: "bluez_card.00_11_22_33_44_55", profiles: profiles, activeProfileName: profile,
                     deviceBus: "bluetooth", deviceAPI: "bluez")
    }

    static func sink(_ index: UInt32, _ profile: String) -> SinkSnapshot {
        SinkSnapshot(name: "bluez_sink.00_11_22_33_44_55.\(profile)", index: index, cardIndex: 7,
                     bluetoothProfile: profile)
    }

    static let a2dpSink = sink(40, "a2dp_sink")
    static let headUnitSink = sink(41, "handsfree_head_unit")
    static let a2dpSinkAgain = sink(42, "a2dp_sink")
    /// The laptop's microphone (card 0), where the call application records.
    static let microphone = SourceSnapshot(index: 3, cardIndex: 0)
    /// The call's capture stream: module-bluetooth-policy switches for its role, whatever source it is on.
    static let callCapture = SourceOutputSnapshot(index: 60, sourceIndex: 3, mediaRole: "phone")
}

/// A PipeWire 1.4 + WirePlumber 0.5 headset, as pipewire-pulse reports it.
private enum WirePlumberHeadset {
    static let profiles = [
        CardProfileSnapshot(name: "off", sinkCount: 0, sourceCount: 0),
        CardProfileSnapshot(name: "a2dp-sink", sinkCount: 1, sourceCount: 0),
        CardProfileSnapshot(name: "a2dp-sink-sbc", sinkCount: 1, sourceCount: 0),
        CardProfileSnapshot(name: "headset-head-unit", sinkCount: 1, sourceCount: 1),
    ]

    static func card(_ profile: String) -> CardSnapshot {
        CardSnapshot(index: 50, name: "bluez_card.00_11_22_33_44_55", profiles: profiles, activeProfileName: profile,
                     deviceBus: "bluetooth", deviceAPI: "bluez5")
    }

    /// The one sink node name under every profile; each recreation has a new index.
    static func sink(_ index: UInt32, _ profile: String) -> SinkSnapshot {
        SinkSnapshot(name: "bluez_output.00_11_22_33_44_55.1", index: index, cardIndex: 50, bluetoothProfile: profile)
    }

    static let a2dpSink = sink(70, "a2dp-sink")
    static let headUnitSink = sink(71, "headset-head-unit")
    static let a2dpSinkAgain = sink(72, "a2dp-sink")
    /// WirePlumber's loopback source for the headset's microphone: a source of the device even during A2DP.
    static let loopbackSource = SourceSnapshot(index: 80, cardIndex: 50)
    /// A browser's call: no media.role, recording from the loopback source.
    static let callCapture = SourceOutputSnapshot(index: 90, sourceIndex: 80, mediaRole: nil)
}

@Suite("Bluetooth profile switches become an interruption, unplugs stay output losses")
struct ProfileSwitchTranslatorTests {
    let speakers = SinkSnapshot(name: "alsa_output.pci-0000_00_1f.3.analog-stereo", index: 2, cardIndex: 0)
    let laptopCard = CardSnapshot(
        index: 0, name: "alsa_card.pci-0000_00_1f.3",
        profiles: [CardProfileSnapshot(name: "output:analog-stereo+input:analog-stereo", sinkCount: 1, sourceCount: 1)],
        activeProfileName: "output:analog-stereo+input:analog-stereo", deviceBus: "pci", deviceAPI: "alsa")
    let now = Moment(milliseconds: 1_000)
    let later = Moment(milliseconds: 61_000)
    let pulseSwitch = InterruptionSource.profileSwitch(card: 7)
    let pipeWireSwitch = InterruptionSource.profileSwitch(card: 50)

    /// A translator that knows the laptop and a PulseAudio headset in A2DP, with our stream on the headset.
    func onPulseAudioHeadset() -> JudgedTranslator {
        var translator = JudgedTranslator()
        #expect(translator.cardChanged(laptopCard, at: now) == [])
        #expect(translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: now) == [])
        #expect(translator.sourceChanged(PulseAudioHeadset.microphone, at: now) == [])
        #expect(translator.ourStreamIsOn(PulseAudioHeadset.a2dpSink, sinkInputIndex: 10, at: now) == [])
        return translator
    }

    /// A translator that knows a WirePlumber headset in A2DP and its loopback source, with our stream on it.
    func onWirePlumberHeadset() -> JudgedTranslator {
        var translator = JudgedTranslator()
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: now) == [])
        #expect(translator.sourceChanged(WirePlumberHeadset.loopbackSource, at: now) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.a2dpSink, sinkInputIndex: 10, at: now) == [])
        return translator
    }

    /// The moment a switch that began waiting at `moment` stops waiting.
    func settled(_ moment: Moment) -> Moment {
        moment.advanced(by: CallTiming.standard.profileSwitchSettleMilliseconds)
    }

    /// The reducer's answer to `events`, from a player that is playing.
    func played(_ events: [Event], from start: PlayerState = PlayerState(
        playback: .playing, queue: QueueCursor(trackCount: 3, index: 0), stream: StreamCondition(isOpen: true,
                                                                                                   isCorked: false))
    ) -> (state: PlayerState, commands: [Command]) {
        var state = start
        let commands = events.flatMap { state.apply($0) }
        return (state, commands)
    }

    @Test("A2DP and Bluetooth are read the same way from both servers' names and properties")
    func namesAndProperties() {
        for name in ["a2dp_sink", "a2dp-sink", "a2dp-sink-aac", "a2dp-duplex"] {
            #expect(CardProfileSnapshot.isA2DP(name), "\(name)")
        }
        for name in ["headset_head_unit", "handsfree_head_unit", "headset-head-unit", "headset-head-unit-msbc", "off",
                     "bap-sink", "output:analog-stereo"] {
            #expect(!CardProfileSnapshot.isA2DP(name), "\(name)")
        }
        #expect(PulseAudioHeadset.card("a2dp_sink").isBluetooth)
        #expect(WirePlumberHeadset.card("off").isBluetooth)
        #expect(!laptopCard.isBluetooth)
        #expect(PulseAudioHeadset.a2dpSink.isA2DP && WirePlumberHeadset.a2dpSinkAgain.isA2DP)
        #expect(!PulseAudioHeadset.headUnitSink.isA2DP && !WirePlumberHeadset.headUnitSink.isA2DP && !speakers.isA2DP)
    }

    @Test("PulseAudio 16: A2DP to HFP for a call and back; the music resumes once our stream is back on A2DP")
    func pulseAudioCallAndBack() {
        var translator = onPulseAudioHeadset()
        var events: [Event] = []
        // The call starts recording; module-bluetooth-policy switches the card at once, inside the same request:
        // SINK REMOVE of our sink, our stream rescued to the default sink, SINK NEW of the head unit sink, CARD CHANGE.
        #expect(translator.sourceOutputChanged(PulseAudioHeadset.callCapture, at: now) == [])
        events += translator.sinkRemoved(40, at: now)
        #expect(events == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        events += translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now)
        #expect(translator.sinkAdded(PulseAudioHeadset.headUnitSink) == [.outputAppeared])
        events += translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: now)
        #expect(translator.profileSwitches == [7: .call])
        // The head unit sink becomes the default and our (corked) stream follows it there.
        events += translator.ourStreamIsOn(PulseAudioHeadset.headUnitSink, sinkInputIndex: 10, at: now)
        #expect(events == [.interruptionBegan(pulseSwitch, at: now)])

        // The call ends: the policy switches back; the head unit sink goes, our stream is rescued again, the new
        // A2DP sink appears (a new index, the old name), the card says a2dp_sink, our stream is moved back.
        #expect(translator.sourceOutputRemoved(60, at: now) == [])
        #expect(translator.sinkRemoved(41, at: later) == [])
        #expect(translator.ourStreamLeftRemovedSink(at: later) == [])
        #expect(translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: later) == [])
        #expect(translator.sinkAdded(PulseAudioHeadset.a2dpSinkAgain) == [.outputAppeared])
        // The A2DP sink being back is not enough: our stream is still on the speakers.
        #expect(translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: later) == [])
        let back = translator.ourStreamIsOn(PulseAudioHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
        #expect(back == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: later)])
        #expect(translator.profileSwitches.isEmpty)

        let outcome = played(events + back)
        #expect(outcome.commands == [.cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)
        #expect(outcome.state.interruptions.isEmpty)
    }

    @Test("PulseAudio 16: the removal overtakes the capture stream's description; the card's change decides")
    func pulseAudioRemovalBeforeCapture() {
        // SINK REMOVE needs no query, so it reaches us before the reply describing the capture stream that caused it.
        var translator = onPulseAudioHeadset()
        #expect(translator.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(translator.profileSwitches == [7: .pending(until: settled(now))])
        #expect(translator.sourceOutputChanged(PulseAudioHeadset.callCapture, at: now) == [])
        #expect(translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: now) == [])
        #expect(translator.profileSwitches == [7: .call])
        #expect(translator.ourStreamIsOn(PulseAudioHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
            == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: later)])
    }

    @Test("WirePlumber 0.5: the device's new profile first, then the node goes; back in the other order")
    func wirePlumberProfileFirst() {
        var translator = onWirePlumberHeadset()
        // 500 ms before the switch, a capture links to the headset's loopback source.
        #expect(translator.sourceOutputChanged(WirePlumberHeadset.callCapture, at: now) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(translator.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.profileSwitches == [50: .call])
        #expect(translator.sinkAdded(WirePlumberHeadset.headUnitSink) == [.outputAppeared])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.headUnitSink, sinkInputIndex: 10, at: now) == [])
        // 2 s after the capture ends: the new A2DP node and our move come before the device's change.
        #expect(translator.sourceOutputRemoved(90, at: now) == [])
        #expect(translator.sinkRemoved(71, at: later) == [])
        #expect(translator.sinkAdded(WirePlumberHeadset.a2dpSinkAgain) == [.outputAppeared])
        #expect(translator.ourStreamLeftRemovedSink(at: later) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
            == [.interruptionEnded(pipeWireSwitch, resumeAllowed: true, at: later)])
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: later) == [])
    }

    @Test("WirePlumber 0.5: the node goes first, then the device's new profile; back with the profile first")
    func wirePlumberNodeFirst() {
        // PLATFORM.md: the order of the node's removal and the device's change is not guaranteed on pipewire-pulse.
        var translator = onWirePlumberHeadset()
        #expect(translator.sourceOutputChanged(WirePlumberHeadset.callCapture, at: now) == [])
        #expect(translator.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.sinkAdded(WirePlumberHeadset.headUnitSink) == [.outputAppeared])
        // The head unit node is seen before the device's change: it is no way back (its own profile says so).
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.headUnitSink, sinkInputIndex: 10, at: now) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(translator.profileSwitches == [50: .call])
        #expect(translator.sourceOutputRemoved(90, at: now) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: later) == [])
        #expect(translator.sinkRemoved(71, at: later) == [])
        #expect(translator.ourStreamLeftRemovedSink(at: later) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
            == [.interruptionEnded(pipeWireSwitch, resumeAllowed: true, at: later)])
    }

    @Test("The headset unplugged during a call (its card goes): output lost, in either order")
    func unplugDuringCall() {
        // PulseAudio: unloading module-bluez5-device unlinks the sink (SINK REMOVE) before freeing the card.
        var pulse = onPulseAudioHeadset()
        #expect(pulse.sourceOutputChanged(PulseAudioHeadset.callCapture, at: now) == [])
        var events = pulse.sinkRemoved(40, at: now)
        #expect(events == [.interruptionBegan(pulseSwitch, at: now)])
        events += pulse.ourStreamLeftRemovedSink(at: now) + pulse.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now)
        let removed = pulse.cardRemoved(7, at: now)
        #expect(removed
            == [.outputLost(.deviceRemoved), .interruptionEnded(pulseSwitch, resumeAllowed: false, at: now)])
        #expect(pulse.profileSwitches.isEmpty)
        let outcome = played(events + removed)
        #expect(outcome.commands == [.cork])
        #expect(outcome.state.playback == .paused(.outputLost(.deviceRemoved)))
        #expect(outcome.state.interruptions.isEmpty)
        #expect(outcome.state.resumeIntent == .none)

        // pipewire-pulse may report the device gone before its node: then the card is unknown at the removal.
        var pipeWire = onWirePlumberHeadset()
        #expect(pipeWire.sourceOutputChanged(WirePlumberHeadset.callCapture, at: now) == [])
        #expect(pipeWire.cardRemoved(50, at: now) == [])
        #expect(pipeWire.sinkRemoved(70, at: now) == [.outputLost(.deviceRemoved)])
        #expect(pipeWire.ourStreamLeftRemovedSink(at: now) == [])
    }

    @Test("A switch with nothing recording is a profile switch too, whichever comes first; `off` is an output loss")
    func noCallNoCapture() {
        // RULES.md: the card staying and leaving A2DP is the switch itself (someone picked the head unit profile by
        // hand, or the session manager switched before the call's capture was described). The card's change first:
        var cardFirst = onPulseAudioHeadset()
        #expect(cardFirst.cardChanged(PulseAudioHeadset.card("headset_head_unit"), at: now) == [])
        #expect(cardFirst.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(cardFirst.profileSwitches == [7: .call])

        // The removal first: pending (and corked) until the card says it left A2DP for a profile with a sink.
        var removalFirst = onPulseAudioHeadset()
        #expect(removalFirst.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(removalFirst.cardChanged(PulseAudioHeadset.card("headset_head_unit"), at: now) == [])
        #expect(removalFirst.profileSwitches == [7: .call])
        let back = removalFirst.ourStreamIsOn(PulseAudioHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
        #expect(back == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: later)])
        let outcome = played([.interruptionBegan(pulseSwitch, at: now)] + back)
        #expect(outcome.commands == [.cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)

        // Monitor recordings and level meters change nothing either way; a card switched off is an unplug.
        var meters = onWirePlumberHeadset()
        #expect(meters.sourceChanged(SourceSnapshot(index: 81, cardIndex: 50, monitorOfSinkIndex: 70), at: now) == [])
        let monitorRecording = SourceOutputSnapshot(index: 91, sourceIndex: 81, mediaRole: nil)
        let meter = SourceOutputSnapshot(index: 92, sourceIndex: 80, mediaRole: nil, isLevelMeter: true)
        #expect(meters.sourceOutputChanged(monitorRecording, at: now) == [])
        #expect(meters.sourceOutputChanged(meter, at: now) == [])
        #expect(meters.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(meters.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        var off = onWirePlumberHeadset()
        #expect(off.sourceOutputChanged(WirePlumberHeadset.callCapture, at: now) == [])
        #expect(off.cardChanged(WirePlumberHeadset.card("off"), at: now) == [])
        #expect(off.sinkRemoved(70, at: now) == [.outputLost(.deviceRemoved)])
        var offAfterRemoval = onWirePlumberHeadset()
        #expect(offAfterRemoval.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(offAfterRemoval.cardChanged(WirePlumberHeadset.card("off"), at: now)
            == [.outputLost(.deviceRemoved), .interruptionEnded(pipeWireSwitch, resumeAllowed: false, at: now)])
    }

    @Test("pipewire-pulse, measured: a bare `pactl set-card-profile` on the fake headset and back, nothing recording")
    func measuredBareSwitch() {
        // The order Earshot's owner handed the translator on 0.3.65 with Tests/FakeCard/headset.c (issue 25): the
        // node goes, the card says headset-head-unit, the new node comes, the server moves our stream off the removed
        // sink (sometimes to the default sink first), the card is described again. Back: the same, with a2dp-sink.
        let headphones = SinkSnapshot(name: "headphones", index: 47)
        var translator = onWirePlumberHeadset()
        var events = translator.sinkRemoved(70, at: now)
        #expect(events == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(translator.sinkAdded(WirePlumberHeadset.headUnitSink) == [.outputAppeared])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        #expect(translator.ourStreamIsOn(headphones, sinkInputIndex: 10, at: now) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.headUnitSink, sinkInputIndex: 10, at: now) == [])
        #expect(translator.profileSwitches == [50: .call])

        #expect(translator.sinkRemoved(71, at: later) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: later) == [])
        #expect(translator.sinkAdded(WirePlumberHeadset.a2dpSinkAgain) == [.outputAppeared])
        #expect(translator.ourStreamLeftRemovedSink(at: later) == [])
        #expect(translator.ourStreamIsOn(headphones, sinkInputIndex: 10, at: later) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: later) == [])
        let back = translator.ourStreamIsOn(WirePlumberHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
        #expect(back == [.interruptionEnded(pipeWireSwitch, resumeAllowed: true, at: later)])
        events += back
        let outcome = played(events)
        #expect(outcome.commands == [.cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)

        // The same switch ending with the card switched off, or removed, is an output loss with no resume.
        for ending in ["off", "removed"] {
            var lost = onWirePlumberHeadset()
            _ = lost.sinkRemoved(70, at: now)
            _ = lost.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now)
            let end = ending == "off" ? lost.cardChanged(WirePlumberHeadset.card("off"), at: later)
                : lost.cardRemoved(50, at: later)
            #expect(end == [.outputLost(.deviceRemoved),
                            .interruptionEnded(pipeWireSwitch, resumeAllowed: false, at: later)], "\(ending)")
            let state = played([.interruptionBegan(pipeWireSwitch, at: now)] + end).state
            #expect(state.playback == .paused(.outputLost(.deviceRemoved)) && state.resumeIntent == .none, "\(ending)")
        }
    }

    @Test("A sink recreated while its card stays on A2DP (a codec switch) is an output loss, not a profile switch")
    func cardNeverLeavesA2DP() {
        // PipeWire offers one A2DP profile per codec (bluez5-device.c: `a2dp-sink-<codec>`); choosing another one
        // recreates the node while the device stays on A2DP. PulseAudio 15+'s codec switch also recreates the sink.
        var translator = onWirePlumberHeadset()
        #expect(translator.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.cardChanged(WirePlumberHeadset.card("a2dp-sink-sbc"), at: now) == [])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        #expect(translator.ourStreamIsOn(WirePlumberHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: now)
            == [.outputLost(.deviceRemoved), .interruptionEnded(pipeWireSwitch, resumeAllowed: false, at: now)])
    }

    @Test("A call's own source nests with the profile switch; the music resumes only when both have ended")
    func callSourceNests() {
        // A call application plays with media.role=phone too (our own detection sees it on any sink, PLATFORM.md);
        // on PulseAudio module-role-cork would also send a cork request: the reducer nests them (rules 3 and 4).
        var translator = onPulseAudioHeadset()
        let phone = SinkInputSnapshot(index: 20, sinkIndex: 40, mediaRole: "phone", corked: false, muted: false,
                                      clientIndex: 3, applicationName: "calls")
        let call = InterruptionSource.triggerStream(index: 20)
        // The call's playback stream and the switch are two sources: the card's change may come before any capture.
        var events = translator.sinkInputChanged(phone, at: now)
        events += translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: now)
        events += translator.sinkRemoved(40, at: now)
        events += translator.ourStreamIsOn(PulseAudioHeadset.headUnitSink, sinkInputIndex: 10, at: now)
        events += translator.sinkInputChanged(
            SinkInputSnapshot(index: 20, sinkIndex: 41, mediaRole: "phone", corked: false, muted: false,
                              clientIndex: 3, applicationName: "calls"), at: now)
        #expect(events == [.interruptionBegan(call, at: now), .interruptionBegan(pulseSwitch, at: now)])
        // The call hangs up before the headset is back on A2DP.
        let hungUp = translator.sinkInputRemoved(20, at: later)
        #expect(hungUp == [.interruptionEnded(call, resumeAllowed: true, at: later)])
        #expect(played(events + hungUp).state.playback == .paused(.interruption))
        #expect(translator.sinkRemoved(41, at: later) == [])
        let back = translator.ourStreamIsOn(PulseAudioHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: later)
        #expect(back == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: later)])
        let outcome = played(events + hungUp + back)
        #expect(outcome.commands == [.fadeOutAndCork, .cork, .uncork, .clearServerMute])
        #expect(outcome.state.playback == .playing)
    }

    @Test("A card that is not Bluetooth: our sink's removal is an output loss even during a call")
    func notBluetooth() {
        // A USB headset is an ALSA card (`device.bus=usb`): its sink goes only when it is unplugged or its profile
        // drops the output, and nothing brings the music back by itself.
        let usbCard = CardSnapshot(
            index: 9, name: "alsa_card.usb-headset",
            profiles: [CardProfileSnapshot(name: "output:analog-stereo", sinkCount: 1, sourceCount: 0),
                       CardProfileSnapshot(name: "input:mono-fallback", sinkCount: 0, sourceCount: 1)],
            activeProfileName: "output:analog-stereo", deviceBus: "usb", deviceAPI: "alsa")
        let usbSink = SinkSnapshot(name: "alsa_output.usb-headset.analog-stereo", index: 30, cardIndex: 9)
        var translator = JudgedTranslator()
        #expect(translator.cardChanged(usbCard, at: now) == [])
        #expect(translator.sourceChanged(SourceSnapshot(index: 31, cardIndex: 9), at: now) == [])
        let phoneCapture = SourceOutputSnapshot(index: 32, sourceIndex: 31, mediaRole: "phone")
        #expect(translator.sourceOutputChanged(phoneCapture, at: now) == [])
        #expect(translator.ourStreamIsOn(usbSink, sinkInputIndex: 10, at: now) == [])
        #expect(usbCard.isBluetooth == false)
        #expect(translator.sinkRemoved(30, at: now) == [.outputLost(.deviceRemoved)])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        // A sink with no card at all (a null sink) is the same.
        var nullSink = JudgedTranslator()
        _ = nullSink.ourStreamIsOn(SinkSnapshot(name: "headphones", index: 1), sinkInputIndex: 10, at: now)
        #expect(nullSink.ourStreamLeftRemovedSink(at: now) == [.outputLost(.deviceRemoved)])
        #expect(nullSink.sinkRemoved(1, at: now) == [])
    }

    @Test("Our stream gone during a switch ends it without a resume, and forgets the server's cards")
    func streamGoneDuringSwitch() {
        // The server died or our stream failed mid-switch: the Player forgets the old server's objects with it.
        var translator = onPulseAudioHeadset()
        #expect(translator.sourceOutputChanged(PulseAudioHeadset.callCapture, at: now) == [])
        #expect(translator.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(translator.ourStreamIsGone(at: later)
            == [.interruptionEnded(pulseSwitch, resumeAllowed: false, at: later)])
        #expect(translator.profileSwitches.isEmpty)
        // A new stream on the headset of a server the translator has not been told about again: cards unknown.
        #expect(translator.ourStreamIsOn(PulseAudioHeadset.a2dpSink, sinkInputIndex: 11, at: later) == [])
        #expect(translator.sinkRemoved(40, at: later) == [.outputLost(.deviceRemoved)])
    }

    @Test("A card switched off during a call turns the switch into an output loss")
    func switchedOffDuringCall() {
        // Both servers have an `off` profile without sinks (module-bluez5-device.c, bluez5-device.c).
        var translator = onWirePlumberHeadset()
        #expect(translator.sourceOutputChanged(WirePlumberHeadset.callCapture, at: now) == [])
        #expect(translator.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(translator.cardChanged(WirePlumberHeadset.card("off"), at: later)
            == [.outputLost(.deviceRemoved), .interruptionEnded(pipeWireSwitch, resumeAllowed: false, at: later)])
    }

    @Test("A headset back on A2DP while the session manager leaves our stream elsewhere: an output loss, in time")
    func backOnA2DPWithoutOurStream() {
        // No server was seen doing this (the report of WirePlumber 0.4.13 doing it was a card it had switched `off`,
        // docs/measured.md), but nothing promises the move back: the call ends, the card is back on A2DP, and our
        // stream stays on the sink it was rescued to. Without an end the switch would hold every later play (rule 9);
        // ended as an unplug, nothing resumes on the sink the stream was left on.
        var translator = onWirePlumberHeadset()
        var events = translator.sinkRemoved(70, at: now)
        events += translator.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now)
        events += translator.ourStreamIsOn(WirePlumberHeadset.headUnitSink, sinkInputIndex: 10, at: now)
        #expect(translator.deadline == nil, "a call profile waits for the call, however long")
        let back = Moment(milliseconds: 30_000)
        events += translator.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: back)
        events += translator.sinkRemoved(71, at: back) + translator.ourStreamLeftRemovedSink(at: back)
        events += translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: back)
        #expect(events == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(translator.profileSwitches == [50: .returning(until: settled(back))])
        #expect(translator.deadline == settled(back))
        let early = Moment(milliseconds: settled(back).milliseconds - 1)
        #expect(translator.timerExpired(at: early) == [])
        let ended = translator.timerExpired(at: settled(back))
        #expect(ended == [.outputLost(.deviceRemoved),
                          .interruptionEnded(pipeWireSwitch, resumeAllowed: false, at: settled(back))])
        #expect(translator.profileSwitches.isEmpty && translator.deadline == nil)

        // Paused, and nothing holds the user's play any more: it plays where the stream is.
        let outcome = played(events + ended)
        #expect(outcome.state.playback == .paused(.outputLost(.deviceRemoved)))
        #expect(outcome.state.interruptions.isEmpty)
        var state = outcome.state
        #expect(state.apply(.userPlay).contains(.uncork))
        #expect(state.playback == .playing)
    }

    @Test("Back on A2DP, our stream reaching the headset before the bound resumes; a second call waits again")
    func backOnA2DPInTime() {
        var translator = onPulseAudioHeadset()
        #expect(translator.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: now) == [])
        #expect(translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: later) == [])
        // The card goes back to the call profile before our stream arrived: no bound while a call profile is on.
        #expect(translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: later) == [])
        #expect(translator.deadline == nil)
        let again = Moment(milliseconds: later.milliseconds + 5_000)
        #expect(translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: again) == [])
        #expect(translator.deadline == settled(again))
        let arrived = Moment(milliseconds: again.milliseconds + 200)
        #expect(translator.ourStreamIsOn(PulseAudioHeadset.a2dpSinkAgain, sinkInputIndex: 10, at: arrived)
            == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: arrived)])
        #expect(translator.deadline == nil)
        #expect(translator.timerExpired(at: settled(again)) == [])
    }

    @Test("A pending switch whose card never leaves A2DP and whose stream never comes back is an output loss")
    func pendingNeverResolved() {
        // Our headset sink went while the card stayed on A2DP, and the server rescued our stream to the speakers for
        // good: no call profile came, so this was no call; the headset's sink is gone for us, an output loss.
        var translator = onPulseAudioHeadset()
        #expect(translator.sinkRemoved(40, at: now) == [.interruptionBegan(pulseSwitch, at: now)])
        #expect(translator.ourStreamLeftRemovedSink(at: now) == [])
        #expect(translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now) == [])
        #expect(translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: now) == [])
        #expect(translator.deadline == settled(now))
        #expect(translator.timerExpired(at: settled(now))
            == [.outputLost(.deviceRemoved), .interruptionEnded(pulseSwitch, resumeAllowed: false, at: settled(now))])
        #expect(translator.profileSwitches.isEmpty)
    }

    @Test("The user moves the paused music to another device during the call: it resumes there when the call ends")
    func movedAwayDuringCall() {
        // PulseAudio 16's own moves between the headset's sinks leave a sink that still exists too, and change nothing.
        var translator = onPulseAudioHeadset()
        var events = translator.sinkRemoved(40, at: now)
        events += translator.ourStreamLeftRemovedSink(at: now) + translator.ourStreamIsOn(speakers, sinkInputIndex: 10,
                                                                                          at: now)
        events += translator.cardChanged(PulseAudioHeadset.card("handsfree_head_unit"), at: now)
        events += translator.ourStreamMovedOffExistingSink()
            + translator.ourStreamIsOn(PulseAudioHeadset.headUnitSink, sinkInputIndex: 10, at: now)
        #expect(translator.profileSwitches == [7: .call])
        // The user's move: off the head unit sink, which stays, to the laptop's speakers.
        events += translator.ourStreamMovedOffExistingSink()
            + translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now)
        #expect(translator.profileSwitches == [7: .movedAway])
        #expect(translator.deadline == nil)
        #expect(events == [.interruptionBegan(pulseSwitch, at: now), .routeChanged, .routeChanged])
        // The call ends: the head unit sink goes (not ours now), the card is back on A2DP; our stream stays put.
        #expect(translator.sinkRemoved(41, at: later) == [])
        let ended = translator.cardChanged(PulseAudioHeadset.card("a2dp_sink"), at: later)
        #expect(ended == [.interruptionEnded(pulseSwitch, resumeAllowed: true, at: later)])
        let outcome = played(events + ended)
        #expect(outcome.state.playback == .playing)
        #expect(outcome.commands == [.cork, .uncork, .clearServerMute])
    }

    @Test("Back on A2DP, a move to another device ends the switch at once; a headset moved away and then gone too")
    func movedAwayAfterReturnOrRemoval() {
        var returning = onWirePlumberHeadset()
        #expect(returning.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(returning.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(returning.cardChanged(WirePlumberHeadset.card("a2dp-sink"), at: later) == [])
        #expect(returning.ourStreamLeftRemovedSink(at: later) == [])
        #expect(returning.ourStreamIsOn(speakers, sinkInputIndex: 10, at: later) == [], "rescued, not chosen")
        #expect(returning.ourStreamMovedOffExistingSink() == [.routeChanged])
        let laptop = SinkSnapshot(name: "alsa_output.usb-dac", index: 3, cardIndex: 1)
        #expect(returning.ourStreamIsOn(laptop, sinkInputIndex: 10, at: later)
            == [.interruptionEnded(pipeWireSwitch, resumeAllowed: true, at: later)])

        var removed = onWirePlumberHeadset()
        #expect(removed.sinkRemoved(70, at: now) == [.interruptionBegan(pipeWireSwitch, at: now)])
        #expect(removed.cardChanged(WirePlumberHeadset.card("headset-head-unit"), at: now) == [])
        #expect(removed.ourStreamIsOn(WirePlumberHeadset.headUnitSink, sinkInputIndex: 10, at: now) == [])
        #expect(removed.ourStreamMovedOffExistingSink() + removed.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now)
            == [.routeChanged])
        // The headset disconnects with the call: our stream is not on it, so that is no loss of our output.
        #expect(removed.cardRemoved(50, at: later)
            == [.interruptionEnded(pipeWireSwitch, resumeAllowed: true, at: later)])
    }
}
