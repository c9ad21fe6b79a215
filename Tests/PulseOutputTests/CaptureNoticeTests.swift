// Cards, sources and capture streams as a real server reports them (the private server scripts/test starts). The
// test servers have no Bluetooth and no cards, only null sinks with their monitors, so this checks the copying and
// the notices; what a profile switch means is tested with recorded shapes in ProfileSwitchTranslatorTests.
import EarshotTestSupport
import Foundation
import PulseOutput
import Testing

@Suite("Cards, sources and capture streams on the private sound server")
struct CaptureNoticeTests {
    @Test("A recording of a monitor is listed and noticed as a capture stream on a monitor source, then its removal")
    func monitorRecording() async throws {
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer("EarshotCaptureNoticeTests", notices: notices)
        try connection.subscribe()
        // Neither test server has a card; asking must still work.
        _ = try connection.cards()
        let monitors = Set(try connection.sources().filter(\.isMonitor).map(\.index))
        #expect(!monitors.isEmpty, "every null sink has a monitor source")

        // parec records the monitor of `headphones` (a few seconds, into the runner's output file) until it is killed.
        let recorder = try ChildProcess("parec", ["-d", "headphones.monitor", "--raw"])
        defer {
            recorder.kill()
            recorder.removeOutputFiles()
        }

        // pipewire-pulse may describe a new stream before it is linked: wait for the description on a monitor.
        let seen = await notices.waitFor(.seconds(5)) { notice in
            guard case .sourceOutputChanged(let capture) = notice else { return false }
            return monitors.contains(capture.sourceIndex)
        }
        let capture = try #require(seen.flatMap { found -> SourceOutputSnapshot? in
            if case .sourceOutputChanged(let capture) = found.notice { return capture }
            return nil
        })
        #expect(try connection.sourceOutputs().contains { $0.index == capture.index })

        recorder.kill()
        #expect(await notices.waitFor(.sourceOutputRemoved(capture.index)))
    }
}
