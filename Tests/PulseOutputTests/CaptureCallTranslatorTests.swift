// Calls inferred from microphone captures through the translator (issue 20): what counts, the delay, and what ends a
// call. Capture shapes as the servers report them (PLATFORM.md, "Calls as real applications make them"): Chromium's
// capture ("Chromium input", opened corked, uncorked while recording), a level meter (`peaks`), a recording of a
// monitor, PulseAudio's module-loopback (owner module, no client), a pipewire-pulse filter half (`node.link-group`).
import EarshotCore
import PulseOutput
import Testing

/// Sources and captures of a desktop: a microphone, a sink's monitor, and echo-cancel's virtual source.
enum Desk {
    static let microphone = SourceSnapshot(index: 1, cardIndex: 0)
    static let headphonesMonitor = SourceSnapshot(index: 2, cardIndex: nil, monitorOfSinkIndex: 5)
    static let echoCancelSource = SourceSnapshot(index: 3, cardIndex: nil)

    static func chromium(_ index: UInt32 = 20, client: UInt32 = 7, source: UInt32 = 1, corked: Bool = false)
        -> SourceOutputSnapshot {
        SourceOutputSnapshot(index: index, sourceIndex: source, mediaRole: nil, clientIndex: client,
                             applicationName: "Chromium input", applicationBinary: "chrome", processID: 4000,
                             corked: corked)
    }

    static func at(_ milliseconds: Int64) -> Moment { Moment(milliseconds: milliseconds) }
    static let delay = CallTiming.standard.microphoneProbeMilliseconds

    /// A translator that knows the three sources.
    static func translator(_ settings: CallDetectionSettings = CallDetectionSettings(ownProcessID: 99))
        -> JudgedTranslator {
        var translator = JudgedTranslator(callDetection: settings)
        for source in [microphone, headphonesMonitor, echoCancelSource] {
            #expect(translator.sourceChanged(source, at: at(0)) == [])
        }
        return translator
    }
}

@Suite("Calls inferred from microphone captures")
struct CaptureCallTranslatorTests {
    let call = InterruptionSource.microphoneCapture(client: 7)

    @Test("A browser call: corked at first, counts once it has run the delay, ends when it goes")
    func browserCall() {
        var translator = Desk.translator()
        #expect(translator.sourceOutputChanged(Desk.chromium(corked: true), at: Desk.at(100)) == [])
        #expect(translator.deadline == nil, "a corked capture waits for nothing")
        #expect(translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(200)) == [])
        #expect(translator.deadline == Desk.at(200 + Desk.delay))
        // A notice before the deadline changes nothing; the timer's expiry at the deadline begins the call.
        #expect(translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(300)) == [])
        #expect(translator.timerExpired(at: Desk.at(200 + Desk.delay)) == [
            .interruptionBegan(call, at: Desk.at(200 + Desk.delay))])
        #expect(translator.deadline == nil)
        #expect(translator.activeCalls == [7])
        #expect(translator.sourceOutputRemoved(20, at: Desk.at(9_000)) == [
            .interruptionEnded(call, resumeAllowed: true, at: Desk.at(9_000))])
        #expect(translator.activeCalls.isEmpty)
    }

    @Test("A probe shorter than the delay never counts: no event, and no timer left armed")
    func shortProbe() {
        var translator = Desk.translator()
        #expect(translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(0)) == [])
        #expect(translator.sourceOutputRemoved(20, at: Desk.at(Desk.delay - 1)) == [])
        #expect(translator.deadline == nil)
        #expect(translator.timerExpired(at: Desk.at(Desk.delay)) == [])
        // Corking before the delay restarts it: a cork and uncork are a new capture's start.
        #expect(translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(1_000)) == [])
        #expect(translator.sourceOutputChanged(Desk.chromium(corked: true), at: Desk.at(1_100)) == [])
        #expect(translator.sourceOutputChanged(Desk.chromium(), at: Desk.at(1_200)) == [])
        #expect(translator.timerExpired(at: Desk.at(1_000 + Desk.delay)) == [])
        #expect(translator.deadline == Desk.at(1_200 + Desk.delay))
    }

    @Test("One application, two captures: one call, ending with the last; corking ends it like a removal")
    func oneCallPerApplication() {
        var translator = Desk.translator()
        _ = translator.sourceOutputChanged(Desk.chromium(20), at: Desk.at(0))
        _ = translator.sourceOutputChanged(Desk.chromium(21, source: 3), at: Desk.at(0))
        #expect(translator.timerExpired(at: Desk.at(Desk.delay)) == [
            .interruptionBegan(call, at: Desk.at(Desk.delay))])
        #expect(translator.sourceOutputRemoved(20, at: Desk.at(1_000)) == [])
        #expect(translator.sourceOutputChanged(Desk.chromium(21, source: 3, corked: true), at: Desk.at(2_000)) == [
            .interruptionEnded(call, resumeAllowed: true, at: Desk.at(2_000))])
    }

    @Test("Not calls: a level meter, a monitor recording, a module's loopback, a filter half, ourselves, ignored names")
    func notCalls() {
        var translator = Desk.translator(CallDetectionSettings(ignoredApplications: ["Nerd-Dictation"],
                                                               ownProcessID: 99))
        let notCalls: [(SourceOutputSnapshot, CaptureExclusion)] = [
            (SourceOutputSnapshot(index: 30, sourceIndex: 1, mediaRole: nil, isLevelMeter: true, clientIndex: 8,
                                  applicationName: "PulseAudio Volume Control"), .levelMeter),
            (SourceOutputSnapshot(index: 31, sourceIndex: 1, mediaRole: nil, clientIndex: 8,
                                  applicationName: "GNOME Settings", isMonitorStream: true), .levelMeter),
            (SourceOutputSnapshot(index: 32, sourceIndex: 2, mediaRole: nil, clientIndex: 9,
                                  applicationName: "parec"), .recordsOutput),
            (SourceOutputSnapshot(index: 33, sourceIndex: 1, mediaRole: nil, clientIndex: 9,
                                  applicationName: "OBS", capturesSink: true), .recordsOutput),
            (SourceOutputSnapshot(index: 34, sourceIndex: 1, mediaRole: nil, ownerModuleIndex: 14), .moduleStream),
            (SourceOutputSnapshot(index: 35, sourceIndex: 1, mediaRole: nil, clientIndex: 10,
                                  applicationName: "pipewire", linkGroup: "filter-chain-1"), .filterStream),
            (SourceOutputSnapshot(index: 36, sourceIndex: 1, mediaRole: nil, clientIndex: 11,
                                  applicationName: "Earshot", processID: 99), .ownProcess),
            (SourceOutputSnapshot(index: 37, sourceIndex: 1, mediaRole: nil, clientIndex: 12,
                                  applicationName: "Dictation", applicationBinary: "nerd-dictation"),
             .ignoredApplication),
            (SourceOutputSnapshot(index: 38, sourceIndex: 1, mediaRole: nil), .noClient),
            (SourceOutputSnapshot(index: 39, sourceIndex: 77, mediaRole: nil, clientIndex: 13), .unknownSource),
        ]
        for (capture, reason) in notCalls {
            #expect(translator.sourceOutputChanged(capture, at: Desk.at(0)) == [])
            #expect(translator.callExclusion(of: capture) == reason, "\(capture.index)")
        }
        #expect(translator.deadline == nil)
        #expect(translator.timerExpired(at: Desk.at(60_000)) == [])
        #expect(translator.activeCalls.isEmpty)
    }

    @Test("A capture of echo-cancel's virtual source counts like one of the device")
    func virtualMicrophone() {
        var translator = Desk.translator()
        _ = translator.sourceOutputChanged(Desk.chromium(source: 3), at: Desk.at(0))
        #expect(translator.callExclusion(of: Desk.chromium(source: 3)) == nil)
        #expect(translator.timerExpired(at: Desk.at(Desk.delay)) == [
            .interruptionBegan(call, at: Desk.at(Desk.delay))])
    }

    @Test("callDetection: knownApps counts only known calling applications; roles counts none")
    func detectionModes() {
        var known = Desk.translator(CallDetectionSettings(detection: .knownApps))
        let recorder = SourceOutputSnapshot(index: 40, sourceIndex: 1, mediaRole: nil, clientIndex: 8,
                                            applicationName: "Audacity", applicationBinary: "audacity")
        let discord = SourceOutputSnapshot(index: 41, sourceIndex: 1, mediaRole: nil, clientIndex: 9,
                                           applicationName: "WEBRTC VoiceEngine", applicationBinary: "Discord")
        #expect(known.callExclusion(of: recorder) == .unknownApplication)
        #expect(known.callExclusion(of: discord) == nil)
        #expect(known.callExclusion(of: Desk.chromium()) == nil)
        _ = known.sourceOutputChanged(recorder, at: Desk.at(0))
        _ = known.sourceOutputChanged(discord, at: Desk.at(0))
        #expect(known.timerExpired(at: Desk.at(Desk.delay)) == [
            .interruptionBegan(.microphoneCapture(client: 9), at: Desk.at(Desk.delay))])

        var roles = Desk.translator(CallDetectionSettings(detection: .roles))
        #expect(roles.sourceOutputChanged(Desk.chromium(), at: Desk.at(0)) == [])
        #expect(roles.deadline == nil)
        #expect(roles.callExclusion(of: Desk.chromium()) == .detectionOff)
    }

    @Test("Captures already running when our stream opens count at once")
    func listedAtOpen() {
        var translator = Desk.translator()
        #expect(translator.sourceOutputListed(Desk.chromium(), at: Desk.at(50)) == [
            .interruptionBegan(call, at: Desk.at(50))])
        // A listed level meter is still no call.
        let meter = SourceOutputSnapshot(index: 30, sourceIndex: 1, mediaRole: nil, isLevelMeter: true, clientIndex: 8)
        #expect(translator.sourceOutputListed(meter, at: Desk.at(50)) == [])
    }
}
