// MPD's protocol end to end (issue 37): `earshot serve` with `mpdListen` on a free loopback port and a private socket,
// driven by the real mpc and by python3-mpd, each command checked against Earshot's own `status`. Every MPD command is
// the user speaking through the same requests as the CLI: `pause` pauses, `play` is the user's play, and the rules
// decide. A missing client is a failure, never a skip (scripts/test installs mpc and python3-mpd).
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPD clients", .serialized)
struct MPDClientTests {
    /// A loopback port nobody listens on now (the kernel's choice; never MPD's 6600).
    static func freePort() throws -> Int {
        let (descriptor, port) = try boundPort()
        close(descriptor)
        return port
    }

    /// A socket bound to a loopback port of the kernel's choice, and the port; the caller closes it.
    static func boundPort() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ToolkitError("socket(): \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw ToolkitError("no free loopback port: errno \(errno)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Starts a service serving MPD on a free port and `mpd.socket` in its folder, with two 30 s tracks loaded and
    /// playing; runs `body` with the harness, the port and the socket path.
    static func withPlayingService(
        _ body: (ServiceHarness, ChildProcess, Int, String) async throws -> Void
    ) async throws {
        _ = try ProcessRunner.requireTool("mpc", package: "mpc")
        try await ServiceHarness.run { harness in
            let port = try freePort()
            let socket = harness.root.appendingPathComponent("mpd.socket").path
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            try harness.writeConfiguration(#"""
                {"fadeMs": 0, "mpdListen": ["127.0.0.1:\#(port)", "\#(socket)"], "musicDirectories": ["\#(music.path)"]}
                """#)
            let first = try Fixtures.copy(try Fixtures.tone(frequency: 440, seconds: 30), to: music, named: "a.mp3")
            let second = try Fixtures.copy(try Fixtures.tone(frequency: 660, seconds: 30), to: music, named: "b.mp3")
            let service = try await harness.startService()
            try harness.earshotChecked(["play", first.path, second.path])
            try await harness.waitForStatus(of: service, "playing the queue") { $0.playback == "playing" }
            try await body(harness, service, port, socket)
        }
    }

    /// Runs mpc against `host` (a socket path or 127.0.0.1) and `port`; throws unless it succeeds.
    @discardableResult
    static func mpc(_ host: String, _ port: Int, _ arguments: [String]) throws -> String {
        try ProcessRunner.run("mpc", ["-h", host, "-p", "\(port)"] + arguments, timeout: .seconds(30))
            .requireSuccess().standardOutput
    }

    /// Earshot's own status object, asked on its control socket.
    static func status(_ harness: ServiceHarness) throws -> [String: Any] {
        try #require(try harness.requestChecked(["command": "status"])["status"] as? [String: Any])
    }

    @Test("mpc on the port and the socket: pause, play, toggle, next, prev, volume, repeat, random, status, current")
    func mpcDrivesThePlayer() async throws {
        try await Self.withPlayingService { harness, service, port, socket in
            let tcp = "127.0.0.1"
            #expect(try Self.mpc(socket, port, ["status"]).contains("[playing] #1/2"))
            try Self.mpc(socket, port, ["pause"])
            let paused = try await harness.waitForStatus(of: service, "paused by mpc") { $0.playback == "paused" }
            #expect(paused.pauseReason == "user", "\(paused)")
            #expect(try Self.mpc(tcp, port, ["status"]).contains("[paused]"))
            try Self.mpc(tcp, port, ["play"])
            try await harness.waitForStatus(of: service, "playing after mpc play") { $0.playback == "playing" }
            try Self.mpc(tcp, port, ["toggle"])
            try await harness.waitForStatus(of: service, "paused by mpc toggle") { $0.playback == "paused" }
            try Self.mpc(tcp, port, ["toggle"])
            try await harness.waitForStatus(of: service, "playing after mpc toggle") { $0.playback == "playing" }
            try Self.mpc(socket, port, ["next"])
            try await harness.waitForStatus(of: service, "on the second track") { $0.trackIndex == 1 }
            #expect(try Self.mpc(socket, port, ["current"]).contains("b.mp3"))
            try Self.mpc(socket, port, ["prev"])
            try await harness.waitForStatus(of: service, "back on the first track") { $0.trackIndex == 0 }
            try Self.mpc(socket, port, ["volume", "40"])
            try await harness.waitForStatus(of: service, "volume 40") { $0.volume == 40 }
            #expect(try Self.mpc(socket, port, ["volume"]).contains("40%"))
            try Self.mpc(socket, port, ["repeat", "on"])
            try Self.mpc(socket, port, ["random", "on"])
            let modes = try Self.status(harness)
            #expect(modes["repeat"] as? String == "queue", "\(modes)")
            #expect(modes["shuffle"] as? Bool == true, "\(modes)")
            let shown = try Self.mpc(socket, port, ["status"])
            #expect(shown.contains("repeat: on") && shown.contains("random: on"), "\(shown)")
            try Self.mpc(socket, port, ["repeat", "off"])
            #expect(try Self.status(harness)["repeat"] as? String == "off")
            #expect(try Self.mpc(socket, port, ["playlist"]).split(separator: "\n").count == 2)
        }
    }

    @Test("mpc's library verbs: update, search, find and list (with filter expressions), add (a missing file refused)")
    func mpcLibrary() async throws {
        try await Self.withPlayingService { harness, _, port, socket in
            try await LibraryTests.waitForTracks(2, harness)
            try Self.mpc(socket, port, ["update"])
            try await LibraryTests.waitForTracks(2, harness)
            #expect(try Self.mpc(socket, port, ["search", "any", "b"]) == "b.mp3\n")
            #expect(try Self.mpc(socket, port, ["list", "album"]).isEmpty)
            // MPD's filter expressions, as mpc passes them: find exact, search without case; a regex refused.
            #expect(try Self.mpc(socket, port, ["find", "(file == 'b.mp3')"]) == "b.mp3\n")
            #expect(try Self.mpc(socket, port, ["find", "(file == 'B.mp3')"]).isEmpty)
            #expect(try Self.mpc(socket, port, ["search", "((file contains 'B.') AND (!(base 'x')))"]) == "b.mp3\n")
            let regex = try ProcessRunner.run("mpc", ["-h", socket, "find", "(file =~ 'b')"], timeout: .seconds(30))
            #expect(!regex.succeeded && regex.standardError.contains("no regular expressions"),
                    "\(regex.standardError)")
            #expect(try Self.mpc(socket, port, ["listall"]) == "a.mp3\nb.mp3\n")
            // listallinfo and count through python3-mpd: the library's files with their times, counted.
            let script = """
                import mpd, sys
                client = mpd.MPDClient()
                client.connect(sys.argv[1])
                files = [(entry["file"], entry["time"]) for entry in client.listallinfo()]
                assert files == [("a.mp3", "30"), ("b.mp3", "30")], files
                counted = client.count("file", "b.mp3")
                assert counted == {"songs": "1", "playtime": "30"}, counted
                grouped = client.count("group", "artist")
                # One group: python3-mpd gives its object alone.
                assert grouped == {"artist": "", "songs": "2", "playtime": "60"}, grouped
                print("ok")
                """
            #expect(try ProcessRunner.run("/usr/bin/python3", ["-c", script, socket], timeout: .seconds(30))
                .requireSuccess().standardOutput == "ok\n")
            try Self.mpc(socket, port, ["clear"])
            try Self.mpc(socket, port, ["add", "b.mp3"])
            let queue = try #require(try harness.requestChecked(["command": "queue"])["queue"] as? [String])
            #expect(queue.count == 1 && queue[0].hasSuffix("/b.mp3"), "\(queue)")
            let refused = try ProcessRunner.run("mpc", ["-h", socket, "add", "missing.mp3"], timeout: .seconds(30))
            #expect(!refused.succeeded && refused.standardError.contains("No such song"), "\(refused.standardError)")
        }
    }

    @Test("a port another program holds: said once in the log and in status; the socket still serves")
    func portTaken() async throws {
        _ = try ProcessRunner.requireTool("mpc", package: "mpc")
        try await ServiceHarness.run { harness in
            // Another program (a real MPD, say) listens on the port.
            let (holder, port) = try Self.boundPort()
            defer { close(holder) }
            try #require(listen(holder, 4) == 0)
            let socket = harness.root.appendingPathComponent("mpd.socket").path
            try harness.writeConfiguration(#"{"mpdListen": ["127.0.0.1:\#(port)", "\#(socket)"]}"#)
            let service = try await harness.startService()
            let status = try Self.status(harness)
            #expect(status["mpdUnavailable"] as? [String] == ["tcp 127.0.0.1:\(port): port taken"], "\(status)")
            #expect(try harness.earshotChecked(["status"]).standardOutput.contains("MPD's protocol: not served on tcp"))
            #expect(try Self.mpc(socket, port, ["status"]).contains("volume:"))
            let said = service.standardError().components(separatedBy: "mpd listen=tcp state=unavailable").count - 1
            #expect(said == 1, "\(service.standardError())")
        }
    }

    @Test("python3-mpd: command lists, list_OK, errors with their index, unknown commands, pause 1 is never a toggle")
    func protocolThroughPythonMPD() async throws {
        try await Self.withPlayingService { harness, service, port, socket in
            let script = """
                import mpd, sys
                client = mpd.MPDClient()
                client.timeout = 30
                client.connect(sys.argv[1])
                assert client.mpd_version.startswith("0.23"), client.mpd_version
                client.ping()
                client.pause(1)
                client.pause(1)
                assert client.status()["state"] == "pause", client.status()
                client.command_list_ok_begin()
                client.ping()
                client.status()
                client.setvol(30)
                replies = client.command_list_end()
                assert len(replies) == 3 and replies[1]["state"] == "pause", replies
                assert client.status()["volume"] == "30", client.status()
                try:
                    client.command_list_ok_begin()
                    client.ping()
                    client.setvol(101)
                    client.ping()
                    client.command_list_end()
                    raise SystemExit("no error for setvol 101")
                except mpd.CommandError as error:
                    assert "[2@1] {setvol}" in str(error), str(error)
                try:
                    client.sticker_list("song", "a.mp3")
                    raise SystemExit("no error for sticker")
                except mpd.CommandError as error:
                    assert "[5@0] {} unknown command" in str(error), str(error)
                client.pause(0)
                print("ok")
                """
            // Debian's own Python, where python3-mpd installs (another python3 may come first in PATH).
            let python = "/usr/bin/python3"
            guard try ProcessRunner.run(python, ["-c", "import mpd"]).succeeded else {
                throw ToolkitError("python3-mpd is needed for the MPD protocol tests: apt-get install python3-mpd")
            }
            let result = try ProcessRunner.run(python, ["-c", script, socket], timeout: .seconds(60))
            try #require(result.succeeded && result.standardOutput.contains("ok"), "\(result.standardError)")
            let playing = try await harness.waitForStatus(of: service, "pause 0 plays") { $0.playback == "playing" }
            #expect(playing.volume == 30)
            _ = port
        }
    }
}

/// An MPD client waiting in `idle player` (the library's first scan is `update`, not waited for here), on the
/// protocol's own lines (Python's standard library: python3-mpd's client has no split idle), started as a process of
/// its own: it prints `idling` once its `idle` is sent, then the subsystems `idle` reported, comma-separated, then
/// `noidle` once a second idle ended by `noidle` gave its OK.
struct IdlingClient {
    let process: ChildProcess

    init(socket: String) throws {
        let script = """
            import socket, sys
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(sys.argv[1])
            stream = connection.makefile("rb", buffering=0)
            def reply():
                lines = []
                while True:
                    line = stream.readline().decode().rstrip("\\n")
                    if line == "OK" or line.startswith("ACK") or line == "":
                        return lines, line
                    lines.append(line)
            assert stream.readline().startswith(b"OK MPD "), "greeting"
            connection.sendall(b"idle player\\n")
            print("idling", flush=True)
            lines, end = reply()
            assert end == "OK", end
            print(",".join(sorted(line.split(": ", 1)[1] for line in lines)), flush=True)
            connection.sendall(b"idle\\nnoidle\\n")
            # A bare OK; or, when more changed since, the changes (and noidle, no longer idling, is ignored).
            lines, end = reply()
            assert end == "OK" and all(line.startswith("changed: ") for line in lines), (lines, end)
            connection.sendall(b"ping\\n")
            assert reply() == ([], "OK"), "ping"
            print("noidle", flush=True)
            """
        process = try ChildProcess("/usr/bin/python3", rawArguments: [
            Array("-c".utf8), Array(script.utf8), Array(socket.utf8),
        ])
    }

    /// Waits (one generous timeout) until the client has printed `count` lines; returns them.
    func lines(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let lines = process.standardOutput().split(separator: "\n").map(String.init)
            if lines.count >= count { return lines }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw ToolkitError("the idling client printed \(lines); stderr: \(process.standardError())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

@Suite("MPD clients and the rules", .serialized)
struct MPDIdleTests {
    @Test("an idling client hears `player` when the CLI pauses; noidle ends the next idle with its OK")
    func idleHearsThePlayer() async throws {
        try await MPDClientTests.withPlayingService { harness, service, _, socket in
            let client = try IdlingClient(socket: socket)
            defer { client.process.kill() }
            _ = try await client.lines(1)
            try harness.earshotChecked(["pause"])
            let lines = try await client.lines(3)
            #expect(lines[1].split(separator: ",").contains("player"), "\(lines)")
            #expect(lines[2] == "noidle", "\(lines)")
            _ = service
        }
    }

    @Test("a call while an MPD client idles: the client hears `player`, the music pauses for the call")
    func callReachesIdleClient() async throws {
        try await MPDClientTests.withPlayingService { harness, service, _, socket in
            let client = try IdlingClient(socket: socket)
            defer { client.process.kill() }
            _ = try await client.lines(1)
            let call = try ServerControl.startPhoneCall(wav: try Fixtures.phoneCall(seconds: 3))
            defer { call.kill() }
            let lines = try await client.lines(2)
            #expect(lines[1].split(separator: ",").contains("player"), "\(lines)")
            let paused = try await harness.waitForStatus(of: service, "paused for the call") { $0.playback == "paused" }
            #expect(paused.pauseReason != "user", "\(paused)")
        }
    }
}
