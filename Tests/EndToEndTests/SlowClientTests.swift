// Clients that stop reading never make the owner wait (issue 21, RULES.md: "whatever a client of Earshot does ...
// an unplug is corked as fast with such a client as without"). `earshot play` plays the position sweep on
// headphones while `earshot events` followers are stopped with SIGSTOP (as a pager left on its first page, or a
// terminal suspended with Ctrl-Z), a flood of control requests makes thousands of log lines, and a control client
// sends requests without reading its replies; then the headphones are unplugged. The measurement is the unplug
// politeness test's (`expectSpeakersQuietAfterUnplug`): what the speakers' monitor recorded of our audio, at most
// 10 ms and a graph period; a client that held the owner longer lets a moved stream play on there (a stream the
// server killed plays nothing, held or not). Status must answer promptly throughout, the owner's slowest handling
// stays within HandlingTimeTests' bound, and a stopped follower, once continued, reads `... N events dropped` where
// its lines are missing.
// The service's own standard error is such a client too: a pipe nobody reads must not stop the owner either.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Slow clients never make the owner wait", .serialized)
struct SlowClientTests {
    /// How many log lines the flood makes (one `volume` request, one decision, one line).
    static let floodEvents = 2_000
    /// The marker a follower reads where lines are missing (a regular expression is not Sendable: made when used).
    static var marker: Regex<Substring> { /\.\.\. [0-9]+ events dropped/ }

    /// Runs `body` with the server to itself, both sinks recorded, and `earshot play` on the sweep, heard for 1.5 s.
    private func scenario(_ body: (EarshotPlayer, URL, [MonitorRecorder]) async throws -> Void) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let track = try Fixtures.copy(try Fixtures.positionTrack(seconds: 20), to: scratch,
                                              named: PrivateNames.fileName)
                try await withMonitorRecorders { recorders in
                    let player = try EarshotPlayer(playing: [track], in: scratch)
                    defer { player.kill() }
                    _ = try await player.waitUntilHeard(milliseconds: 1500)
                    try await body(player, scratch, recorders)
                }
            }
        }
    }

    /// Starts `count` `earshot events` followers of `player` and waits until each has shown a line.
    private func startFollowers(_ count: Int, of player: EarshotPlayer) async throws -> [ChildProcess] {
        var followers: [ChildProcess] = []
        for _ in 0..<count {
            followers.append(try TestEnvironment.launchEarshot(["events"], environment: player.environment))
        }
        try await waitUntil("\(count) followers show a line", timeout: .seconds(30)) {
            // Asked again until every follower is connected: one volume request makes one line for each.
            try player.control(["volume", "100"])
            return followers.allSatisfy { $0.standardOutput().contains("userVolume") }
        }
        return followers
    }

    /// Sends `floodEvents` volume requests in batches on the control socket, reading every reply. A player that
    /// stops answering is an issue, and the test goes on to the unplug, to measure what that costs.
    private func flood(_ player: EarshotPlayer, label: String) throws {
        let socket = try #require(player.environment["EARSHOT_SOCKET"])
        let request = Array(#"{"command":"volume","percent":100}"#.utf8) + [UInt8(ascii: "\n")]
        let batch = 100
        let started = ContinuousClock.now
        do {
            for _ in 0..<(Self.floodEvents / batch) {
                let replies = try ControlSocketProbe.exchange(
                    path: socket, payload: Array([[UInt8]](repeating: request, count: batch).joined()),
                    replies: batch, timeout: .seconds(10))
                #expect(replies.allSatisfy { ControlSocketProbe.parse($0).ok == true })
            }
        } catch {
            Issue.record("the player stopped answering during the flood: \(error)")
            return
        }
        report("\(label): \(Self.floodEvents) requests answered in", (ContinuousClock.now - started).seconds * 1000)
    }

    /// Unplugs the headphones, waits for the output loss, and checks that the speakers got at most 10 ms of us (and a
    /// graph period), that status then answers within a second, and that the owner never took long over one handling.
    private func unplugAndMeasure(
        _ player: EarshotPlayer, _ recorders: [MonitorRecorder], label: String, log: (() -> String)? = nil
    ) async throws {
        let (sent, sentDate) = (ContinuousClock.now, Date())
        try ServerControl.unplug(sink: TestEnvironment.headphones)
        do {
            let lost = try await player.waitForStatus("paused for the lost output", timeout: .seconds(10)) {
                $0.pauseReason == "outputLost"
            }
            #expect(lost.playback == "paused", "\(lost)")
            let asked = ContinuousClock.now
            let settled = try player.status()
            let answeredIn = ContinuousClock.now - asked
            report("\(label): status answered in", answeredIn.seconds * 1000)
            #expect(answeredIn < .seconds(1), "status took \(answeredIn)")
            #expect(settled.pauseReason == "outputLost", "\(settled)")
            report("\(label): the owner's slowest handling", Double(settled.slowestHandlingMicros) / 1000)
            #expect(settled.slowestHandlingMicros < HandlingTimeTests.handlingBound, "\(settled)")
        } catch {
            // Still measured below: what a frozen owner lets through is the point.
            Issue.record("the player did not report the unplug: \(String(describing: error).prefix(300))")
        }
        try await Task.sleep(for: .milliseconds(1500))
        let recordings = try await stopRecorders(recorders)
        try await player.expectSpeakersQuietAfterUnplug(
            recordings[1], sent: sent, sentDate: sentDate, label: label, log: log)
    }

    /// Continues `followers` and waits until each shows the drop marker and is still connected.
    private func continueAndExpectMarker(_ followers: [ChildProcess]) async throws {
        for follower in followers { follower.signal(SIGCONT) }
        try await waitUntil("every continued follower shows the drop marker", timeout: .seconds(20)) {
            followers.allSatisfy { $0.standardOutput().contains(Self.marker) }
        }
        for follower in followers {
            #expect(follower.isRunning, "a continued follower ended: \(follower.standardError())")
        }
    }

    @Test("a stopped follower, 2000 events, an unplug: 10 ms and a period on speakers, status answers, marker later")
    func stoppedFollower() async throws {
        try await scenario { player, scratch, recorders in
            let followers = try await startFollowers(1, of: player)
            defer { for follower in followers { follower.kill() } }
            followers[0].signal(SIGSTOP)
            try flood(player, label: "one stopped follower")
            try await unplugAndMeasure(player, recorders, label: "one stopped follower")
            try await continueAndExpectMarker(followers)
            #expect(player.standardError.contains("follower dropped="), "the service did not say it dropped lines")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("50 followers, half stopped, and a client that never reads its replies: the unplug is corked at once")
    func crowdOfSlowClients() async throws {
        try await scenario { player, scratch, recorders in
            let followers = try await startFollowers(50, of: player)
            defer { for follower in followers { follower.kill() } }
            let stopped = Array(followers.prefix(25))
            for follower in stopped { follower.signal(SIGSTOP) }
            // A client that sends requests and never reads a reply: it fills its socket both ways.
            let socket = try #require(player.environment["EARSHOT_SOCKET"])
            let deaf = try UnixSocket.connect(path: socket)
            defer { close(deaf) }
            let request = Array(#"{"command":"status"}"#.utf8) + [UInt8(ascii: "\n")]
            var sentRequests = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let sent = request.withUnsafeBytes {
                    send(deaf, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                }
                if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                try #require(sent == request.count, "sending to the control socket: errno \(errno)")
                sentRequests += 1
            }
            report("requests a deaf client got in before its socket filled", Double(sentRequests), unit: "")
            try flood(player, label: "50 followers, 25 stopped")
            try await unplugAndMeasure(player, recorders, label: "50 followers, 25 stopped, a deaf client")
            try await continueAndExpectMarker(stopped)
            // The followers that kept reading still follow: a request made now reaches every one of them (one that
            // was behind at the unplug may have lost that line, with a marker).
            let reading = Array(followers.suffix(25))
            try player.control(["volume", "99"])
            try await waitUntil("every reading follower shows a request made after the unplug", timeout: .seconds(20)) {
                reading.allSatisfy { $0.standardOutput().contains("kind=userVolume(99%)") }
            }
            let sawUnplug = reading.filter { $0.standardOutput().contains("kind=outputLost(") }.count
            report("reading followers that saw the unplug's line", Double(sawUnplug), unit: "of 25")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("`earshot events` with a blocked standard output keeps reading: it drops and marks, the service does not")
    func blockedStandardOutput() async throws {
        try await scenario { player, scratch, recorders in
            // A FIFO opened for reading first (without blocking), so the follower's open of it for writing does not
            // wait; then nobody reads it during the flood, as a pager left on its first page.
            let fifo = scratch.appendingPathComponent("pager.fifo")
            try #require(mkfifo(fifo.path, 0o600) == 0, "mkfifo: errno \(errno)")
            let pager = open(fifo.path, O_RDONLY | O_NONBLOCK)
            try #require(pager >= 0, "opening the FIFO: errno \(errno)")
            defer { close(pager) }
            let follower = try ChildProcess(try TestEnvironment.earshotBinary.path, ["events"],
                                            environment: player.environment, standardOutput: fifo)
            defer { follower.kill() }
            var shown = ""
            try await waitUntil("the follower shows a line", timeout: .seconds(20)) {
                try player.control(["volume", "100"])
                shown += Self.drain(pager)
                return shown.contains("userVolume")
            }
            try flood(player, label: "a follower whose output is blocked")
            try await unplugAndMeasure(player, recorders, label: "a follower whose output is blocked")
            // The pager reads again: what fitted, then the marker (the unplug came while the pager still stood, so
            // its line may be among those dropped), and new lines still come.
            try await waitUntil("the follower shows its own drop marker", timeout: .seconds(20)) {
                shown += Self.drain(pager)
                return shown.contains(Self.marker)
            }
            try player.control(["volume", "99"])
            try await waitUntil("the follower is still connected", timeout: .seconds(20)) {
                shown += Self.drain(pager)
                return shown.contains("kind=userVolume(99%)")
            }
            #expect(follower.isRunning)
            let log = player.standardError
            #expect(!log.contains("follower dropped="), "the service dropped lines for a follower that reads")
            #expect(!log.contains("follower disconnected="), "the service disconnected a follower that reads")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("a standard error nobody reads: status answers, the unplug is corked at once, and it reads a marker later")
    func unreadStandardError() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let track = try Fixtures.copy(try Fixtures.positionTrack(seconds: 20), to: scratch,
                                              named: PrivateNames.fileName)
                // Read end opened first (without blocking), so that the player's open for writing does not wait; then
                // nobody reads until after the unplug: the flood's lines fill the pipe's 64 KiB several times over.
                let fifo = scratch.appendingPathComponent("stderr.fifo")
                try #require(mkfifo(fifo.path, 0o600) == 0, "mkfifo: errno \(errno)")
                let reader = open(fifo.path, O_RDONLY | O_NONBLOCK)
                try #require(reader >= 0, "opening the FIFO: errno \(errno)")
                defer { close(reader) }
                try await withMonitorRecorders { recorders in
                    let player = try EarshotPlayer(playing: [track], in: scratch, standardError: fifo)
                    defer { player.kill() }
                    _ = try await player.waitUntilHeard(milliseconds: 1500)
                    // The event log read by a follower that keeps up, for the moment Earshot decided the loss (a
                    // figure reported): the standard error's own lines are not read until after the unplug.
                    let follower = try await startFollowers(1, of: player)[0]
                    defer { follower.kill() }
                    try flood(player, label: "standard error unread")
                    // Caught up with the flood before the unplug, so that it has room for the decision's line.
                    try player.control(["volume", "98"])
                    try await waitUntil("the follower shows the last request", timeout: .seconds(20)) {
                        follower.standardOutput().contains("kind=userVolume(98%)")
                    }
                    try await unplugAndMeasure(player, recorders, label: "standard error unread") {
                        follower.standardOutput()
                    }
                    var shown = ""
                    try await waitUntil("standard error shows the drop marker", timeout: .seconds(20)) {
                        shown += Self.drain(reader)
                        return shown.contains(/\.\.\. [0-9]+ lines dropped/)
                    }
                    try player.control(["volume", "99"])
                    try await waitUntil("a line recorded after the reading shows", timeout: .seconds(20)) {
                        shown += Self.drain(reader)
                        return shown.contains("kind=userVolume(99%)")
                    }
                    for secret in PrivateNames.secrets + [scratch.path] where !secret.isEmpty {
                        #expect(!shown.contains(secret), "the log names \(secret)")
                    }
                }
            }
        }
    }

    /// Everything the FIFO's read end holds now, without waiting.
    private static func drain(_ descriptor: Int32) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }
}
