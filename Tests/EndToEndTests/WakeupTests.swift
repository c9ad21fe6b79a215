// A paused service wakes for nothing (issue 21): no timer is armed while paused, no Swift task sleeps, and no
// libdispatch worker pool exists, whose monitor would wake the process once a second for as long as it runs. Counted,
// not timed: the voluntary context switches of every thread of `earshot serve` (MPRIS on) over a few seconds of
// pause, after the server has settled (pipewire-pulse suspends an idle node some seconds after the cork, and tells
// its clients). The service runs as its users' does: a music library watched (issue 36) and MPD's protocol served
// (issue 37) with MPD's default of 100 clients connected and idling (issue 37's aim: no wake-up more than without
// them), each of which must sleep too once the scan and the loudness pass are done.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("A paused service wakes for nothing", .serialized)
struct WakeupTests {
    /// MPD clients connected and idling: MPD's default `max_connections`, and Earshot's (`MPDServer.clientLimit`).
    static let idlingClients = 100

    @Test("paused with MPRIS, a watched library and MPD on: no thread wakes in 5 s, each thread is ours or libpulse's")
    func pausedServiceSleeps() async throws {
        try await ServiceHarness.run { harness in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
            let track = try Fixtures.copy(try harness.privatePositionTrack(), to: music, named: "track.mp3")
            let socket = harness.root.appendingPathComponent("mpd.socket").path
            try harness.writeConfiguration(#"{"musicDirectories": ["\#(music.path)"], "mpdListen": ["\#(socket)"]}"#)
            let service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "1 s of the track was heard") {
                $0.playback == "playing" && $0.positionMs >= 1000
            }
            try harness.earshotChecked(["pause"])
            try await harness.waitForStatus(of: service, "paused and corked") {
                $0.playback == "paused" && $0.corked
            }
            // The scan and the loudness pass run at idle priority: a generous wait, then a strict check.
            let settled = try eventually(timeout: .seconds(120), interval: .milliseconds(200)) {
                let status = try harness.requestChecked(["command": "status"])["status"] as? [String: Any]
                let library = status?["library"] as? [String: Any] ?? [:]
                return library["scanning"] as? Bool == false && library["tracks"] as? Int == 1
                    && library["gainsToMeasure"] as? Int == 0
            }
            #expect(settled, "the library scanned the track and measured its loudness")
            // A hundred MPD clients waiting in `idle`, as status bars and phone remotes do.
            let idlers = try (0..<Self.idlingClients).map { _ in try Self.idlingMPDClient(socket) }
            defer { for idler in idlers { close(idler) } }
            // Let the server settle: a pipewire-pulse node is suspended a few seconds after it went quiet.
            try await Task.sleep(for: .seconds(8))
            let pid = service.processIdentifier
            let before = try Self.voluntarySwitches(of: pid)
            try await Task.sleep(for: .seconds(5))
            let after = try Self.voluntarySwitches(of: pid)
            let woke = after.compactMap { thread, count in
                count > (before[thread] ?? 0) ? "\(thread.name): \(count - (before[thread] ?? 0))" : nil
            }
            print("[measure] paused 5 s, voluntary context switches by thread: \(woke.isEmpty ? "none" : "\(woke)")")
            #expect(woke.isEmpty, "threads woke while paused: \(woke)")
            // Every thread the service starts names itself `earshot-...`; libpulse's is `threaded-ml`; the main thread
            // keeps the process's name. A libdispatch worker (`com.apple...`, `...qos...`) or another unnamed thread
            // would be a pool that should not exist.
            let strangers = after.keys.map(\.name).filter { $0 != "threaded-ml" && !$0.hasPrefix("earshot") }
            #expect(strangers.isEmpty, "threads that are not Earshot's: \(strangers)")
            #expect(after.keys.filter { $0.name == "earshot" }.count == 1, "one main thread")
            // The idlers were asleep, not gone: each hears the play that follows.
            try harness.earshotChecked(["play"])
            let heard = idlers.filter { Self.readLine($0, timeoutMilliseconds: 10_000) == "changed: player" }.count
            #expect(heard == idlers.count, "\(heard) of \(idlers.count) idling MPD clients heard the play")
            _ = await harness.stopService(service)
        }
    }

    /// A connection to the MPD socket at `path` that read the greeting and sent `idle`; the caller closes it.
    private static func idlingMPDClient(_ path: String) throws -> Int32 {
        let descriptor = try UnixSocket.connect(path: path)
        guard let greeting = readLine(descriptor, timeoutMilliseconds: 10_000), greeting.hasPrefix("OK MPD ") else {
            close(descriptor)
            throw ToolkitError("no MPD greeting on \(path)")
        }
        let request = Array("idle\n".utf8)
        guard write(descriptor, request, request.count) == request.count else {
            close(descriptor)
            throw ToolkitError("idle not sent: errno \(errno)")
        }
        return descriptor
    }

    /// One line from `descriptor`, read a byte at a time (nothing past it is taken), or nil after the timeout.
    private static func readLine(_ descriptor: Int32, timeoutMilliseconds: Int32) -> String? {
        var line: [UInt8] = []
        while true {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, timeoutMilliseconds) == 1 else { return nil }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// A thread of the process: its id and its name (`comm`).
    private struct ThreadName: Hashable {
        var id: String
        var name: String
    }

    /// Every thread's voluntary context switches so far, from /proc/PID/task/*/status.
    private static func voluntarySwitches(of pid: pid_t) throws -> [ThreadName: Int] {
        let tasks = "/proc/\(pid)/task"
        var counts: [ThreadName: Int] = [:]
        for id in try FileManager.default.contentsOfDirectory(atPath: tasks) {
            guard let status = try? String(contentsOfFile: "\(tasks)/\(id)/status", encoding: .utf8) else { continue }
            let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { return nil }
                return (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces))
            }, uniquingKeysWith: { first, _ in first })
            guard let name = fields["Name"], let count = fields["voluntary_ctxt_switches"].flatMap(Int.init) else {
                continue
            }
            counts[ThreadName(id: id, name: name)] = count
        }
        return counts
    }
}
