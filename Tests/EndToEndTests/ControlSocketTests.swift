// The control socket under a crowd and under hostile clients (part of issue 7): 50 clients at once, a client
// that never sends, one that hangs up before its reply, a 10 MB line, and a connection from another user. The
// player answers everyone it should, refuses the stranger, and stays responsive throughout.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Control socket under load and abuse", .serialized)
struct ControlSocketTests {
    @Test("50 clients x 100 requests at once, silent and hasty clients and a 10 MB line: all answered, still prompt")
    func crowdAndHostileClients() async throws {
        try await EarshotPlayer.whilePlaying(seconds: 30, heard: 500) { player, scratch in
            let socket = try #require(player.environment["EARSHOT_SOCKET"])

            // A client that connects and never sends, and one that asks and hangs up at once.
            let silent = try UnixSocket.connect(path: socket)
            defer { close(silent) }
            let hasty = try UnixSocket.connect(path: socket)
            _ = Array(#"{"command":"status"}"#.utf8 + [10]).withUnsafeBytes {
                send(hasty, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            close(hasty)

            // 50 clients, each sending 100 requests on its own connection, all at once.
            let request = Array(#"{"command":"status"}"#.utf8) + [UInt8(ascii: "\n")]
            let payload = Array([[UInt8]](repeating: request, count: 100).joined())
            let answered = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let replies = try ControlSocketProbe.exchange(
                            path: socket, payload: payload, replies: 100, timeout: .seconds(60))
                        return replies.filter { ControlSocketProbe.parse($0).ok == true }.count
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(answered == 5_000)

            // A 10 MB line: an error reply, not a buffered 10 MB, and the connection stays usable.
            let huge = [UInt8](repeating: UInt8(ascii: "x"), count: 10 * 1024 * 1024) + [10] + request
            let replies = try ControlSocketProbe.exchange(path: socket, payload: huge, replies: 2,
                                                          timeout: .seconds(30))
            #expect(ControlSocketProbe.parse(replies[0]).error?.contains("longer than") == true, "\(replies)")
            #expect(ControlSocketProbe.parse(replies[1]).ok == true, "\(replies)")

            // Through all of it the player answers promptly and still plays.
            let started = ContinuousClock.now
            let status = try player.status()
            #expect(ContinuousClock.now - started < .seconds(1))
            #expect(status.playback == "playing", "\(status)")
            player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
        }
    }

    @Test("a client of another user is refused even when the socket file would let it in")
    func strangerRefused() async throws {
        try await EarshotPlayer.whilePlaying(seconds: 20, heard: 300) { player, scratch in
            let socket = try #require(player.environment["EARSHOT_SOCKET"])
            #expect(try permissions(of: socket) == 0o600, "the socket is created user-only")
            // Open the file system's door wide, so that only the peer-credential check stands in the way.
            chmod(scratch.path, 0o755)
            chmod(socket, 0o666)
            let stranger = try ProcessRunner.run(
                "setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                            try TestEnvironment.earshotBinary.path, "pause"],
                environment: player.environment, timeout: .seconds(20))
            #expect(stranger.status != 0)
            #expect(stranger.standardError.contains("permission denied"), "\(stranger.standardError)")
            #expect(try player.status().playback == "playing", "a stranger paused the player")
        }
    }

    /// The permission bits of the file at `path`.
    private func permissions(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int) ?? -1
    }
}
