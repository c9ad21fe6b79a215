// The standard streams the service writes for its user: recording a line never waits for standard error (issue 21),
// nor drawing the progress line for standard output (issue 35). A write that stalls (a pipe nobody reads, a terminal
// stopped with Ctrl-S) holds only the stream's own writer thread; lines beyond its bound are dropped and marked with
// `... N lines dropped`, and every line is either written or counted in a marker.
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

@testable import EarshotClients
import EarshotService
import EarshotTestSupport

@Suite("The standard streams' writers")
struct StandardStreamWriterTests {
    /// Bytes written to the stand-in for standard error.
    private final class Written: Sendable {
        let bytes = Mutex<[UInt8]>([])
        var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
    }

    /// An echo of `capacity` lines whose writes each wait for a turn of `gate`, as a standard error nobody reads.
    private static func stalledEcho(
        capacity: Int, gate: DispatchSemaphore, into written: Written
    ) -> StandardStreamWriter {
        .standardError(capacity: capacity) { bytes in
            gate.wait()
            written.bytes.withLock { $0 += bytes }
        }
    }

    /// A log echoing (or not) to `echo`, with no followers.
    private static func log(echoing: Bool, to echo: StandardStreamWriter) -> EventLog {
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
        let echo = StandardStreamWriter.standardError(capacity: 8) { bytes in written.bytes.withLock { $0 += bytes } }
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
        let echo = StandardStreamWriter.standardError(capacity: 8) { bytes in written.bytes.withLock { $0 += bytes } }
        let log = Self.log(echoing: false, to: echo)
        log.record("test", ["line": "0"])
        log.tellUser("a message\n")
        #expect(echo.drain(timeout: .seconds(10)))
        #expect(written.text == "a message\n")
    }

    @Test("a terminal stopped with Ctrl-S: the progress line returns at once, and is drawn when the terminal goes on")
    func stoppedTerminalHoldsOnlyTheWriter() throws {
        // A pseudo-terminal as `earshot play`'s standard output, stopped as Ctrl-S stops one: tcflow's TCOOFF is the
        // kernel's same stop of the terminal's output, made at once rather than when the typed input is processed.
        // From then on a write(2) to it waits until the output goes on (Ctrl-Q, TCOON).
        let controller = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(controller >= 0)
        defer { close(controller) }
        // posix_openpt's steps, which Swift's Glibc module leaves out: unlock the terminal and ask its number
        // (TIOCSPTLCK and TIOCGPTN, the same on every Linux architecture with the generic ioctl numbers).
        var locked: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(controller, 0x4004_5431, &locked) == 0 && ioctl(controller, 0x8004_5430, &number) == 0)
        let terminal = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        try #require(terminal >= 0)
        defer { close(terminal) }
        try #require(tcflow(terminal, TCOOFF) == 0)

        let output = StandardStreamWriter(descriptor: terminal, threadName: "test-stdout", capacity: 8)
        let log = EventLog(echoToStandardError: false, followerCapacity: 16, stuckLimit: .seconds(30),
                           standardError: .standardError(capacity: 8) { _ in }, standardOutput: output)
        // Four minutes of progress lines at the player's 4 Hz: a draw that waited for the terminal would not return.
        #expect(returnsWhileStuck {
            for second in 0..<1_000 { log.showProgress("\r[1/1] \(second) playing\u{1B}[K") }
            log.showProgress("\n")
        }, "the progress line waited for a stopped terminal")
        #expect(!output.drain(timeout: .milliseconds(200)), "the stopped terminal took the progress line")

        try #require(tcflow(terminal, TCOON) == 0)
        // The terminal takes what waited once it goes on; read it as the user's terminal would show it.
        var shown: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(10)
        while !String(decoding: shown, as: UTF8.self).contains("dropped"), ContinuousClock.now < deadline {
            var ready = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let count = read(controller, &buffer, buffer.count)
            if count > 0 { shown += buffer.prefix(count) }
        }
        #expect(output.drain(timeout: .seconds(10)))
        let text = String(decoding: shown, as: UTF8.self)
        #expect(text.contains("[1/1] 0 playing"), "the first line, queued while stopped: \(text.suffix(200))")
        #expect(text.contains(" lines dropped"), "what did not fit is marked: \(text.suffix(200))")
    }
}
