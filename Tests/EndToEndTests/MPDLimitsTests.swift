// The MPD front-end's per-connection limits end to end (issue 37): each refuses or closes a connection as MPD does,
// and is counted in Earshot's own `status` (`mpd` in --json, the "MPD clients" line in the text), its log carrying
// the kind only. Raw sockets, as a confused or hostile client would talk.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPD limits", .serialized)
struct MPDLimitsTests {
    /// Starts a service serving MPD on `mpd.socket` in its folder (and `extra` configuration keys, each with a leading
    /// comma); runs `body` with the harness, the service and the socket's path.
    static func withMPDService(
        _ extra: String = "", _ body: (ServiceHarness, ChildProcess, String) async throws -> Void
    ) async throws {
        try await ServiceHarness.run { harness in
            let socket = harness.root.appendingPathComponent("mpd.socket").path
            try harness.writeConfiguration(#"{"mpdListen": ["\#(socket)"]\#(extra)}"#)
            let service = try await harness.startService()
            try await body(harness, service, socket)
        }
    }

    /// The MPD front-end's figures in Earshot's status: clients connected, refused for too many, closed by limit.
    static func figures(_ harness: ServiceHarness) throws -> (clients: Int, refused: Int, closed: [String: Int]) {
        let mpd = try #require(try MPDClientTests.status(harness)["mpd"] as? [String: Any])
        let refused = (mpd["refused"] as? [String: Any])?["tooManyClients"] as? Int ?? -1
        return (mpd["clients"] as? Int ?? -1, refused, (mpd["closed"] as? [String: Any] ?? [:]).compactMapValues {
            $0 as? Int
        })
    }

    /// Waits (one generous timeout) until the figures satisfy `condition`.
    static func waitForFigures(
        _ harness: ServiceHarness, _ description: String,
        _ condition: @escaping ((clients: Int, refused: Int, closed: [String: Int])) -> Bool
    ) async throws {
        try await waitUntil(description, timeout: .seconds(60), interval: .milliseconds(100)) {
            condition(try figures(harness))
        }
    }

    /// A connection to the MPD socket at `path` (a read waits 30 s at most), and whether the greeting came (false:
    /// closed at once).
    static func connect(_ path: String) throws -> (descriptor: Int32, greeted: Bool) {
        let descriptor = try UnixSocket.connect(path: path)
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (descriptor, readLine(descriptor).hasPrefix("OK MPD "))
    }

    /// One line from `descriptor`, read a byte at a time; what came when it closed or 30 s passed.
    static func readLine(_ descriptor: Int32) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        return String(decoding: line, as: UTF8.self)
    }

    /// Sends `bytes`, stopping quietly where the server closed the connection.
    static func send(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            offset += count
        }
    }

    /// Waits (one generous timeout) until the server closes `descriptor`, reading and dropping what it sends.
    static func waitForClose(_ descriptor: Int32, _ description: String) async throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        try await waitUntil(description, timeout: .seconds(60)) {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 0) == 1 else { return false }
            return chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) } <= 0
        }
    }

    @Test("too many clients, a 1 MB line, a 3 MB command list, a client that does not read: closed and counted")
    func limitsCloseAndCount() async throws {
        try await Self.withMPDService { harness, service, socket in
            // MPD's default max_connections: the 101st is closed before its greeting.
            let admitted = try (0..<100).map { _ in try Self.connect(socket) }
            defer { for client in admitted { close(client.descriptor) } }
            #expect(admitted.allSatisfy { $0.greeted })
            try await Self.waitForFigures(harness, "100 clients connected") { $0.clients == 100 }
            let refused = try Self.connect(socket)
            close(refused.descriptor)
            #expect(!refused.greeted)
            try await Self.waitForFigures(harness, "one client refused") { $0.refused == 1 }
            for client in admitted { close(client.descriptor) }
            try await Self.waitForFigures(harness, "every client gone") { $0.clients == 0 }

            let long = try Self.connect(socket)
            defer { close(long.descriptor) }
            Self.send(long.descriptor, Array(repeating: UInt8(ascii: "a"), count: 1 << 20))
            try await Self.waitForClose(long.descriptor, "the 1 MB line's connection is closed")

            let list = try Self.connect(socket)
            defer { close(list.descriptor) }
            let ping = Array("ping \(String(repeating: "x", count: 95))\n".utf8)
            Self.send(list.descriptor, Array("command_list_begin\n".utf8) + Array(repeating: ping, count: 30_000)
                .flatMap { $0 })
            try await Self.waitForClose(list.descriptor, "the 3 MB command list's connection is closed")

            // 20 000 status requests and nothing read: the replies fill both socket buffers, a send stays blocked.
            let deaf = try Self.connect(socket)
            defer { close(deaf.descriptor) }
            Self.send(deaf.descriptor, Array(repeating: Array("status\n".utf8), count: 20_000).flatMap { $0 })
            try await Self.waitForFigures(harness, "the client that does not read is dropped") {
                $0.closed["notReading"] == 1
            }
            let figures = try Self.figures(harness)
            #expect(figures.refused == 1 && figures.closed["lineTooLong"] == 1
                && figures.closed["commandListTooLong"] == 1, "\(figures)")
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("MPD clients: 0 connected, 1 refused (too many clients), closed: 1 line too long, "
                + "1 command list too long, 1 not reading"), "\(text)")
            // The log names the kinds, once each.
            let log = service.standardError()
            for kind in ["mpd refused=tooManyClients", "mpd closed=lineTooLong", "mpd closed=commandListTooLong",
                         "mpd closed=notReading"] {
                #expect(log.components(separatedBy: kind).count == 2, "\(kind): \(log)")
            }
        }
    }

    @Test("mpdConnectionTimeoutSeconds: a silent client is closed and counted; a client in idle stays")
    func silentClientTimesOut() async throws {
        try await Self.withMPDService(#", "mpdConnectionTimeoutSeconds": 1"#) { harness, service, socket in
            let idler = try Self.connect(socket)
            defer { close(idler.descriptor) }
            Self.send(idler.descriptor, Array("idle\n".utf8))
            // Connected after the idler began its idle: closed for silence only after the idler idled as long.
            let silent = try Self.connect(socket)
            defer { close(silent.descriptor) }
            #expect(idler.greeted && silent.greeted)
            try await Self.waitForClose(silent.descriptor, "the silent client is closed")
            try await Self.waitForFigures(harness, "one connection closed for silence") {
                $0.closed["idleTimeout"] == 1 && $0.clients == 1
            }
            // A client that sends a byte every 0.3 s and never ends a line is as silent (MPD counts whole lines).
            let trickler = try Self.connect(socket)
            defer { close(trickler.descriptor) }
            #expect(trickler.greeted)
            let descriptor = trickler.descriptor
            // Longer than the close is waited for (60 s): without the rule, the wait runs out first.
            let trickle = Task.detached {
                for _ in 0..<300 {
                    guard Glibc.send(descriptor, "s", 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
                    try? await Task.sleep(for: .milliseconds(300))
                }
            }
            defer { trickle.cancel() }
            try await Self.waitForClose(trickler.descriptor, "the client that never ends a line is closed")
            try await Self.waitForFigures(harness, "two connections closed for silence") {
                $0.closed["idleTimeout"] == 2 && $0.clients == 1
            }
            // The idler is still served: noidle ends its idle with OK.
            Self.send(idler.descriptor, Array("noidle\n".utf8))
            #expect(Self.readLine(idler.descriptor) == "OK")
            #expect(try harness.earshotChecked(["status"]).standardOutput.contains("2 idle timeout"))
            #expect(service.standardError().contains("mpd closed=idleTimeout"))
        }
    }
}
