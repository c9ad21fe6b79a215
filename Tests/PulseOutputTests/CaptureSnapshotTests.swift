// What call detection reads of real capture streams (issue 20), on the private server scripts/test starts: a
// `parecord` from a microphone stand-in (PulseAudio's null source `silence`; on pipewire-pulse, which refuses
// module-null-source, a virtual source made with module-null-sink) is a call by every field the judging uses, and a
// `parec` of `headphones.monitor` is a recording of an output.
import EarshotCore
import EarshotTestSupport
import Foundation
import PulseOutput
import Testing

@Suite("Capture streams as call detection reads them on the private sound server", .serialized)
struct CaptureSnapshotTests {
    /// The microphone stand-in's name, made for the test on pipewire-pulse; and the module to unload after, if any.
    func microphone() throws -> (name: String, module: String?) {
        guard try TestEnvironment.soundServerKind() == .pipeWire else { return ("silence", nil) }
        let module = try ServerControl.pactl([
            "load-module", "module-null-sink", "sink_name=earshot_test_mic", "media.class=Audio/Source/Virtual",
            "channel_map=front-left,front-right",
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
        return ("earshot_test_mic", module)
    }

    /// Records from `device` with `program` until the capture it makes is described; returns its last description.
    func capture(
        _ program: String, device: String, on connection: PulseConnection, notices: NoticeRecorder<ConnectionNotice>,
        where accepted: (SourceOutputSnapshot) -> Bool
    ) async throws -> (SourceOutputSnapshot, ChildProcess) {
        let recorder = try ChildProcess(program, ["-d", device, "--raw"])
        // pipewire-pulse may describe a new stream before it is linked (no source yet): wait for the linked one.
        let seen = await notices.waitFor(.seconds(5)) { notice in
            guard case .sourceOutputChanged(let capture) = notice else { return false }
            return capture.processID == recorder.processIdentifier && capture.sourceIndex != UInt32.max
                && accepted(capture)
        }
        guard case .sourceOutputChanged(let described)? = seen?.notice else {
            recorder.kill()
            recorder.removeOutputFiles()
            throw ToolkitError("no capture described for \(program) -d \(device)")
        }
        // The list agrees with the notice.
        let listed = try #require(try connection.sourceOutputs().first { $0.index == described.index })
        #expect(listed.clientIndex == described.clientIndex && listed.processID == described.processID)
        return (listed, recorder)
    }

    @Test("parecord from a microphone is a call; parec of headphones.monitor is a recording of an output")
    func microphoneAndMonitor() async throws {
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer("EarshotCaptureSnapshotTests", notices: notices)
        try connection.subscribe()
        let (microphoneName, module) = try microphone()
        defer { if let module { _ = try? ServerControl.pactl(["unload-module", module]) } }

        // The translator knows every source, as the player's inventory makes it know them.
        var translator = JudgedTranslator()
        let start = Moment(milliseconds: 0)
        for source in try connection.sources() { _ = translator.sourceChanged(source, at: start) }

        let (call, callRecorder) = try await capture("parecord", device: microphoneName, on: connection,
                                                     notices: notices) { !$0.corked }
        defer {
            callRecorder.kill()
            callRecorder.removeOutputFiles()
        }
        // The owner module is module-native-protocol-unix on PulseAudio, none on pipewire-pulse: not judged by.
        #expect(call.clientIndex != nil)
        #expect(call.processID == callRecorder.processIdentifier)
        #expect(call.applicationName != nil && call.applicationBinary != nil)
        #expect(!call.corked && !call.isLevelMeter && !call.isMonitorStream && !call.capturesSink)
        #expect(call.linkGroup == nil)
        #expect(call.mediaRole == nil)
        let source = try #require(try connection.sources().first { $0.index == call.sourceIndex })
        #expect(!source.isMonitor)
        // Sources may have come since the list above (the stand-in on pipewire-pulse): describe them again.
        for source in try connection.sources() { _ = translator.sourceChanged(source, at: start) }
        #expect(translator.callExclusion(of: call) == nil,
                "\(call.applicationName ?? "-") / \(call.applicationBinary ?? "-")")
        #expect(translator.sourceOutputChanged(call, at: Moment(milliseconds: 1_000)) == [])
        #expect(translator.timerExpired(at: Moment(milliseconds: 1_400)) == [
            .interruptionBegan(.microphoneCapture(client: call.clientIndex!), at: Moment(milliseconds: 1_400))])
        // callIgnoreApplications by the binary's name, in any case.
        var ignoring = JudgedTranslator(callDetection: CallDetectionSettings(
            ignoredApplications: [call.applicationBinary!.uppercased()]))
        _ = ignoring.sourceChanged(source, at: start)
        #expect(ignoring.callExclusion(of: call) == .ignoredApplication)

        let (recording, monitorRecorder) = try await capture("parec", device: "headphones.monitor", on: connection,
                                                             notices: notices) { _ in true }
        defer {
            monitorRecorder.kill()
            monitorRecorder.removeOutputFiles()
        }
        #expect(recording.clientIndex != nil)
        #expect(translator.sourceOutputChanged(recording, at: Moment(milliseconds: 2_000)) == [])
        #expect(translator.callExclusion(of: recording) == .recordsOutput)

        // The recorder ends: so does its call.
        callRecorder.kill()
        #expect(await notices.waitFor(.sourceOutputRemoved(call.index)))
        #expect(translator.sourceOutputRemoved(call.index, at: Moment(milliseconds: 3_000)) == [
            .interruptionEnded(.microphoneCapture(client: call.clientIndex!), resumeAllowed: true,
                               at: Moment(milliseconds: 3_000))])
    }

    @Test("A module-loopback from the microphone is a module's or a filter's stream, never a call")
    func loopbackFromMicrophone() async throws {
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer("EarshotCaptureSnapshotTests", notices: notices)
        try connection.subscribe()
        let (microphoneName, module) = try microphone()
        defer { if let module { _ = try? ServerControl.pactl(["unload-module", module]) } }
        let loopback = try ServerControl.pactl([
            "load-module", "module-loopback", "source=\(microphoneName)", "sink=speakers",
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? ServerControl.pactl(["unload-module", loopback]) }

        var translator = JudgedTranslator()
        // Linked to a source: the loopback's capture (PulseAudio: owned by the module with no client; pipewire-pulse:
        // owned by the module, with a client and a `node.link-group`).
        var found: SourceOutputSnapshot?
        try await waitUntil("the loopback's capture is linked", timeout: .seconds(10)) {
            found = try connection.sourceOutputs().first {
                $0.ownerModuleIndex.map(String.init) == loopback && $0.sourceIndex != UInt32.max
            }
            return found != nil
        }
        let capture = try #require(found)
        for source in try connection.sources() { _ = translator.sourceChanged(source, at: Moment(milliseconds: 0)) }
        let exclusion = translator.callExclusion(of: capture)
        #expect(exclusion == .moduleStream || exclusion == .filterStream,
                "client \(String(describing: capture.clientIndex)), link group \(capture.linkGroup ?? "none")")
        #expect(translator.sourceOutputChanged(capture, at: Moment(milliseconds: 10)) == [])
        #expect(translator.timerExpired(at: Moment(milliseconds: 10_000)) == [])
        #expect(translator.deadline == nil)
    }
}
