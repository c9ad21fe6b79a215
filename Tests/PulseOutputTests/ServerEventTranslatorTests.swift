// The translation from server notifications to events, with snapshots shaped like what libpulse reports.
import EarshotCore
import PulseOutput
import Testing

@Suite("Server notifications become events")
struct ServerEventTranslatorTests {
    let headphones = SinkSnapshot(name: "headphones", index: 1)
    let speakers = SinkSnapshot(name: "speakers", index: 2)
    let now = Moment(milliseconds: 500)

    func phone(_ index: UInt32, on sink: UInt32, corked: Bool = false, muted: Bool = false,
               role: String? = "phone") -> SinkInputSnapshot {
        SinkInputSnapshot(index: index, sinkIndex: sink, mediaRole: role, corked: corked, muted: muted,
                          clientIndex: 3, applicationName: "paplay")
    }

    func translatorOnHeadphones(scope: InterruptionScope = .session) -> JudgedTranslator {
        var translator = JudgedTranslator(scope: scope)
        #expect(translator.ourStreamIsOn(headphones, sinkInputIndex: 10, at: now) == [])
        return translator
    }

    @Test("A phone stream playing on our sink begins an interruption; its removal ends it")
    func phoneOnOurSink() {
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        // A repeated change notification for the same stream is not a new interruption.
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now) == [])
        #expect(translator.sinkInputRemoved(20, at: now)
            == [.interruptionEnded(.triggerStream(index: 20), resumeAllowed: true, at: now)])
    }

    @Test("With scope sameSink, a phone stream on the other sink is not an interruption (as module-role-cork)")
    func phoneOnOtherSinkSameSinkScope() {
        var translator = translatorOnHeadphones(scope: .sameSink)
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now) == [])
        #expect(translator.sinkInputRemoved(20, at: now) == [])
    }

    @Test("By default (scope session) a phone stream on any sink is an interruption, and its removal ends it")
    func phoneOnOtherSinkSessionScope() {
        #expect(JudgedTranslator().scope == .session)
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        // Moving between sinks is the same call: nothing ends, nothing begins.
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now) == [])
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now) == [])
        #expect(translator.sinkInputRemoved(20, at: now)
            == [.interruptionEnded(.triggerStream(index: 20), resumeAllowed: true, at: now)])
    }

    @Test("Scope session: a call announced before it is linked to a sink (PipeWire 1.4) interrupts at once")
    func unlinkedPhoneSessionScope() {
        // pipewire-pulse 1.4.2 reports a new sink-input first with PA_INVALID_INDEX as its sink, then again linked
        // (seen in PulseIntegrationTests on the private PipeWire 1.4 server).
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(20, on: UInt32.max), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now) == [])
        var sameSink = translatorOnHeadphones(scope: .sameSink)
        #expect(sameSink.sinkInputChanged(phone(21, on: UInt32.max), at: now) == [])
        #expect(sameSink.sinkInputChanged(phone(21, on: 1), at: now)
            == [.interruptionBegan(.triggerStream(index: 21), at: now)])
    }

    @Test("Scope session: a call that began before our stream existed is counted once the stream is on a sink")
    func callBeforeOurStream() {
        var translator = JudgedTranslator()
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        #expect(translator.ourStreamIsOn(headphones, sinkInputIndex: 10, at: now) == [])
        #expect(translator.activeTriggers == [20])
    }

    @Test("Streams that start corked or muted count only once they really play")
    func corkedOrMutedPhone() {
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(20, on: 1, corked: true), at: now) == [])
        #expect(translator.sinkInputChanged(phone(21, on: 1, muted: true), at: now) == [])
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        #expect(translator.sinkInputChanged(phone(20, on: 1, corked: true), at: now)
            == [.interruptionEnded(.triggerStream(index: 20), resumeAllowed: true, at: now)])
    }

    @Test("With scope sameSink, a phone stream moving onto or off our sink begins or ends its interruption")
    func phoneMoves() {
        var translator = translatorOnHeadphones(scope: .sameSink)
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now) == [])
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now)
            == [.interruptionEnded(.triggerStream(index: 20), resumeAllowed: true, at: now)])
    }

    @Test("With scope sameSink, our stream moving to the sink where a call plays begins the interruption")
    func weMoveOntoACall() {
        var translator = translatorOnHeadphones(scope: .sameSink)
        #expect(translator.sinkInputChanged(phone(20, on: 2), at: now) == [])
        #expect(translator.ourStreamIsOn(speakers, sinkInputIndex: 10, at: now)
            == [.interruptionBegan(.triggerStream(index: 20), at: now)])
    }

    @Test("Several calls at once are separate sources")
    func severalCalls() {
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(20, on: 1), at: now).count == 1)
        #expect(translator.sinkInputChanged(phone(21, on: 1), at: now)
            == [.interruptionBegan(.triggerStream(index: 21), at: now)])
        #expect(translator.activeTriggers == [20, 21])
    }

    @Test("Other roles, and our own stream, never interrupt; the trigger roles are configurable")
    func otherRoles() {
        var translator = translatorOnHeadphones()
        #expect(translator.sinkInputChanged(phone(30, on: 1, role: "music"), at: now) == [])
        #expect(translator.sinkInputChanged(phone(31, on: 1, role: nil), at: now) == [])
        #expect(translator.sinkInputChanged(phone(10, on: 1), at: now) == [])
        var custom = JudgedTranslator(triggerRoles: ["phone", "alarm"])
        _ = custom.ourStreamIsOn(headphones, sinkInputIndex: 10, at: now)
        #expect(custom.sinkInputChanged(phone(32, on: 1, role: "alarm"), at: now)
            == [.interruptionBegan(.triggerStream(index: 32), at: now)])
    }

    @Test("Removal of our sink is a device removal; other sinks' removal is nothing")
    func sinkRemoval() {
        var translator = translatorOnHeadphones()
        #expect(translator.sinkRemoved(2, at: now) == [])
        #expect(translator.sinkRemoved(1, at: now) == [.outputLost(.deviceRemoved)])
        #expect(translator.sinkAdded(SinkSnapshot(name: "headphones", index: 5)) == [.outputAppeared])
    }

    @Test("A headphone jack unplug on our sink is an output loss; a replug is an appearance")
    func jack() {
        let headphonesPort = PortSnapshot(name: "analog-output-headphones", type: .headphones,
                                          availability: .yes, availabilityGroup: "Legacy 2", priority: 9900)
        let speakerPort = PortSnapshot(name: "analog-output-speaker", type: .speaker,
                                       availability: .unknown, availabilityGroup: "Legacy 1", priority: 10000)
        let unplugged = PortSnapshot(name: "analog-output-headphones", type: .headphones,
                                     availability: .no, availabilityGroup: "Legacy 2", priority: 9900)
        let card = SinkSnapshot(name: "alsa_output.pci-0000_00_1f.3.analog-stereo", index: 4,
                                ports: [speakerPort, headphonesPort], activePortName: headphonesPort.name)
        var translator = JudgedTranslator()
        _ = translator.ourStreamIsOn(card, sinkInputIndex: 10, at: now)
        var afterUnplug = card
        afterUnplug.ports = [speakerPort, unplugged]
        afterUnplug.activePortName = speakerPort.name
        #expect(translator.sinkChanged(afterUnplug) == [.outputLost(.portUnplugged)])
        #expect(translator.sinkChanged(card) == [.outputAppeared])
    }

    @Test("When our stream is gone, active calls end without permission to resume")
    func streamGone() {
        var translator = translatorOnHeadphones()
        _ = translator.sinkInputChanged(phone(20, on: 1), at: now)
        #expect(translator.ourStreamIsGone(at: now)
            == [.interruptionEnded(.triggerStream(index: 20), resumeAllowed: false, at: now)])
        #expect(translator.sinkRemoved(1, at: now) == [])
    }
}
