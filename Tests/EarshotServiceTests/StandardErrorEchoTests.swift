// The event log's echo on standard error (issue 21): recording a line never waits for standard error. A write that
// stalls (a pipe nobody reads) holds only the echo's own thread; lines beyond its bound are dropped and marked with
// `... N lines dropped`, and every line is either written or counted in a marker.
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import EarshotClients
import EarshotService
import EarshotTestSupport

@Suite("Standard error's echo")
struct StandardErrorEchoTests {
    /// Bytes written to the stand-in for standard error.
    private final class Written: Sendable {
        let bytes = Mutex<[UInt8]>([])
        var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
    }

    /// An echo of `capacity` lines whose writes each wait for a turn of `gate`, as a standard error nobody reads.
    private static func stalledEcho(
        capacity: Int, gate: DispatchSemaphore, into written: Written
    ) -> StandardErrorEcho {
        StandardErrorEcho(capacity: capacity) { bytes in
            gate.wait()
            written.bytes.withLock { $0 += bytes }
        }
    }

    /// A log echoing (or not) to `echo`, with no followers.
    private static func log(echoing: Bool, to echo: StandardErrorEcho) -> EventLog {
        EventLog(echoToStandardError: echoing, followerCapacity: 16, stuckLimit: .seconds(30), standardError: echo)
    }

    @Test("a stalled standard error: recording goes on, what does not fit is dropped and counted in a marker")
    func stalledWriterDropsAndMarks() throws {
        let gate = DispatchSemaphore(value: 0)
        let written = Written()
        let echo = Self.stalledEcho(capacity: 8, gate: gate, into: written)
        let log = Self.log(echoing: true, to: echo)
        // 500 lines against a writer that writes nothing until the gate opens below: a wait for it would not return.
        #expect(returnsWhileStuck { for number in 0..<500 { log.record("test", ["line": "\(number)"]) } },
                "recording waited for a stalled standard error")
        #expect(!echo.drain(timeout: .milliseconds(50)), "standard error took lines while stalled")

        for _ in 0..<600 { gate.signal() }
        #expect(echo.drain(timeout: .seconds(10)))
        log.tellUser("after the stall\n")
        #expect(echo.drain(timeout: .seconds(10)))

        let lines = written.text.split(separator: "\n")
        let shown = lines.filter { $0.contains(" test line=") }.count
        let markers = lines.compactMap { line -> Int? in
            guard let match = line.wholeMatch(of: /\.\.\. ([0-9]+) lines dropped/) else { return nil }
            return Int(match.1)
        }
        // One stall, so one or two markers: the writer thread may take its first batch (and the marker of what was
        // dropped until then) before the recording ends, and block on writing it while the queue fills again.
        #expect((1...2).contains(markers.count), "\(markers)")
        #expect(shown + markers.reduce(0, +) == 500, "\(shown) lines shown, \(markers) dropped")
        // One batch being written when the stall began, and a full queue behind it.
        #expect(shown <= 2 * 8, "more lines than the bound got through: \(shown)")
        #expect(lines.last == "after the stall", "\(lines.suffix(3))")
    }

    @Test("a standard error that keeps up loses nothing, in order, and the user's messages come in between")
    func keepingUpLosesNothing() throws {
        let written = Written()
        let echo = StandardErrorEcho(capacity: 8) { bytes in written.bytes.withLock { $0 += bytes } }
        let log = Self.log(echoing: true, to: echo)
        for number in 0..<5 {
            log.record("test", ["line": "\(number)"])
            #expect(echo.drain(timeout: .seconds(10)))
        }
        log.tellUser("a message\n")
        #expect(echo.drain(timeout: .seconds(10)))
        // Each line without its time stamp.
        let lines = written.text.split(separator: "\n").map {
            $0.split(separator: " ").dropFirst().joined(separator: " ")
        }
        #expect(lines.prefix(5) == (0..<5).map { "test line=\($0)" }[...], "\(lines)")
        #expect(written.text.hasSuffix("a message\n"))
        #expect(!written.text.contains("dropped"))
    }

    @Test("with the echo off, log lines stay off standard error and the user's messages still reach it")
    func echoOff() throws {
        let written = Written()
        let echo = StandardErrorEcho(capacity: 8) { bytes in written.bytes.withLock { $0 += bytes } }
        let log = Self.log(echoing: false, to: echo)
        log.record("test", ["line": "0"])
        log.tellUser("a message\n")
        #expect(echo.drain(timeout: .seconds(10)))
        #expect(written.text == "a message\n")
    }
}
