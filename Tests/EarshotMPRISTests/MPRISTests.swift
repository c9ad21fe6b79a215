// MPRIS on a private session bus, driven by the real playerctl and watched with dbus-monitor.
// A stand-in player answers commands the way the Player will: it updates the snapshot, then replies.
import Foundation
import Testing

import EarshotTestSupport
import TrackPaths
@testable import EarshotMPRIS

/// Stands in for the Player: records every command and publishes the state change it implies.
final class FakePlayer: @unchecked Sendable {
    // Unchecked Sendable: every mutable property is guarded by `lock`.
    private let lock = NSLock()
    private var commands: [MPRISCommand] = []
    private var snapshot: MPRISSnapshot
    // Weak: the server's handler holds this player, so a strong reference back would be a cycle that outlives
    // the test (AddressSanitizer's leak check reported it).
    private weak var server: MPRISServer?
    /// Replies to give instead of `.done`, by command.
    private var refusals: [MPRISCommand: String] = [:]

    /// A player showing `snapshot`.
    init(_ snapshot: MPRISSnapshot) {
        self.snapshot = snapshot
    }

    /// Connects the player to the server it updates.
    func attach(_ server: MPRISServer) {
        lock.withLock { self.server = server }
        server.update(lock.withLock { snapshot })
    }

    /// Makes `command` fail with `message`.
    func refuse(_ command: MPRISCommand, with message: String) {
        lock.withLock { refusals[command] = message }
    }

    /// The commands received so far, in order.
    var received: [MPRISCommand] { lock.withLock { commands } }

    /// The handler: called on the bus thread.
    func handle(_ command: MPRISCommand) -> MPRISReply {
        let (server, published, refusal) = lock.withLock { () -> (MPRISServer?, MPRISSnapshot, String?) in
            commands.append(command)
            if let refusal = refusals[command] { return (self.server, snapshot, refusal) }
            switch command {
            case .play: snapshot.playbackStatus = .playing
            case .pause: snapshot.playbackStatus = .paused
            case .stop: snapshot.playbackStatus = .stopped
            case .playPause: snapshot.playbackStatus = snapshot.playbackStatus == .playing ? .paused : .playing
            case .next:
                snapshot.trackId = MPRISSnapshot.trackId(4)
                snapshot.title = "All Blues"
            case .setVolume(let volume): snapshot.volume = volume
            case .setLoopStatus(let loop): snapshot.loopStatus = loop
            case .setShuffle(let on): snapshot.shuffle = on
            case .previous, .seek, .setPosition, .openUri, .quit: break
            }
            return (self.server, snapshot, nil)
        }
        if let refusal { return .refused(refusal) }
        if case .pause = command {
            // The Player answers Pause only once the stream is really corked: a short, real wait.
            usleep(50_000)
        }
        server?.update(published)
        return .done
    }
}

@Suite("MPRIS over sd-bus", .serialized)
struct MPRISTests {
    /// A paused player on track 3 with full metadata, able to do everything.
    static let track = MPRISSnapshot(
        playbackStatus: .paused, trackId: MPRISSnapshot.trackId(3), title: "Blue in Green",
        artists: ["Miles Davis", "Bill Evans"], album: "Kind of Blue", albumArtist: "Miles Davis", trackNumber: 3,
        artPath: "/cache/earshot/art/ab cd.jpg", filePath: "/music/Kind of Blue/03 Blue in Green.mp3",
        lengthMicroseconds: 337_000_000, volume: 0.8, canGoNext: true, canGoPrevious: true, canPlay: true,
        canPause: true, canSeek: true)

    /// A bus, a server on it with a fake player, and playerctl's path.
    private func startServer(
        _ snapshot: MPRISSnapshot = MPRISTests.track, position: Int64 = 42_500_000
    ) throws -> (PrivateSessionBus, MPRISServer, FakePlayer, String) {
        let playerctl = try ProcessRunner.requireTool("playerctl", package: "playerctl")
        let bus = try PrivateSessionBus()
        let player = FakePlayer(snapshot)
        let server = MPRISServer(busAddress: bus.address, positionProvider: { position }, handler: player.handle)
        player.attach(server)
        try server.start()
        return (bus, server, player, playerctl)
    }

    @Test("playerctl lists, reads and drives Earshot")
    func playerctlDrivesTheServer() throws {
        let (bus, server, player, playerctl) = try startServer()
        defer { server.stop() }
        func ctl(_ arguments: String...) throws -> CommandResult {
            try bus.run(playerctl, ["-p", "earshot"] + arguments)
        }

        #expect(try bus.run(playerctl, ["-l"]).standardOutput.trimmed == "earshot")
        #expect(try ctl("status").standardOutput.trimmed == "Paused")

        #expect(try ctl("play-pause").status == 0)
        #expect(try ctl("status").standardOutput.trimmed == "Playing")
        #expect(try ctl("pause").status == 0)
        #expect(try ctl("pause").status == 0)
        #expect(try ctl("status").standardOutput.trimmed == "Paused")
        #expect(player.received == [.playPause(.user), .pause(.user), .pause(.user)])

        #expect(try ctl("metadata", "title").standardOutput.trimmed == "Blue in Green")
        #expect(try ctl("metadata", "artist").standardOutput.trimmed == "Miles Davis, Bill Evans")
        #expect(try ctl("metadata", "album").standardOutput.trimmed == "Kind of Blue")
        #expect(try ctl("metadata", "mpris:length").standardOutput.trimmed == "337000000")
        // playerctl prints object paths in GVariant's text form, quoted.
        #expect(try ctl("metadata", "mpris:trackid").standardOutput.trimmed == "'/org/earshot/track/3'")
        #expect(try ctl("metadata", "xesam:url").standardOutput.trimmed
                    == "file:///music/Kind%20of%20Blue/03%20Blue%20in%20Green.mp3")
        #expect(try ctl("position").standardOutput.trimmed == "42.500000")
        #expect(try ctl("metadata", "xesam:albumArtist").standardOutput.trimmed == "Miles Davis")
        #expect(try ctl("metadata", "xesam:trackNumber").standardOutput.trimmed == "3")
        #expect(try ctl("metadata", "mpris:artUrl").standardOutput.trimmed == "file:///cache/earshot/art/ab%20cd.jpg")

        #expect(try ctl("next").status == 0)
        #expect(player.received.last == .next)
        #expect(try ctl("metadata", "title").standardOutput.trimmed == "All Blues")

        #expect(try ctl("volume").standardOutput.trimmed == "0.800000")
        #expect(try ctl("volume", "0.5").status == 0)
        #expect(player.received.last == .setVolume(0.5))
        #expect(try ctl("volume").standardOutput.trimmed == "0.500000")

        #expect(try ctl("loop").standardOutput.trimmed == "None")
        #expect(try ctl("shuffle").standardOutput.trimmed == "Off")
        #expect(try ctl("loop", "Track").status == 0)
        #expect(try ctl("loop").standardOutput.trimmed == "Track")
        #expect(try ctl("loop", "Playlist").status == 0)
        #expect(try ctl("loop").standardOutput.trimmed == "Playlist")
        #expect(try ctl("shuffle", "On").status == 0)
        #expect(try ctl("shuffle").standardOutput.trimmed == "On")
        #expect(Array(player.received.suffix(3))
                    == [.setLoopStatus(.track), .setLoopStatus(.playlist), .setShuffle(true)])
    }

    @Test("OpenUri accepts a readable local file or an http(s) stream and refuses anything else with a clear error")
    func openUri() throws {
        let (bus, server, player, playerctl) = try startServer()
        defer { server.stop() }
        let file = bus.directory.path + "/a song.mp3"
        try Data([0xFF, 0xFB, 0x90, 0x00]).write(to: URL(fileURLWithPath: file))
        let uri = "file://" + file.replacingOccurrences(of: " ", with: "%20")

        #expect(try bus.run(playerctl, ["-p", "earshot", "open", uri]).status == 0)
        #expect(player.received == [.openUri(paths: [TrackPath(file)])])

        #expect(try bus.run(playerctl, ["-p", "earshot", "open", "http://127.0.0.1:8000/radio"]).status == 0)
        #expect(player.received.last == .openUri(paths: [TrackPath("http://127.0.0.1:8000/radio")]))
        let ftp = try bus.run(playerctl, ["-p", "earshot", "open", "ftp://x/a.mp3"])
        #expect(ftp.status != 0)
        #expect(ftp.standardError.contains("only file://, http:// and https:// URIs are supported"))
        let missing = try bus.run(playerctl, ["-p", "earshot", "open", "file:///no/such/file.mp3"])
        #expect(missing.status != 0)
        #expect(missing.standardError.contains("No such file or directory"))
        let directory = try bus.run(playerctl, ["-p", "earshot", "open", "file://" + bus.directory.path])
        #expect(directory.status != 0)
        #expect(directory.standardError.contains("not a regular file"))
        #expect(player.received == [.openUri(paths: [TrackPath(file)]),
                                    .openUri(paths: [TrackPath("http://127.0.0.1:8000/radio")])])
    }

    @Test("a refusal from the player reaches the client as a D-Bus error")
    func refusalIsAnError() throws {
        let (bus, server, player, _) = try startServer()
        defer { server.stop() }
        player.refuse(.next, with: "the queue is empty")
        let busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        let result = try bus.run(busctl, [
            "--address=\(bus.address)", "--", "call", MPRISServer.busName, MPRISServer.objectPath,
            MPRISServer.playerInterface, "Next",
        ])
        #expect(result.status != 0)
        #expect(result.standardError.contains("the queue is empty"))
    }

    @Test("SupportedMimeTypes lists the types the server was given: the player's formats")
    func supportedMimeTypes() throws {
        let bus = try PrivateSessionBus()
        let types = ["audio/mpeg", "audio/flac", "audio/ogg", "audio/vorbis", "audio/opus"]
        let server = MPRISServer(busAddress: bus.address, supportedMimeTypes: types) { _ in .done }
        try server.start()
        defer { server.stop() }
        let busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        let result = try bus.run(busctl, [
            "--address=\(bus.address)", "--", "get-property", MPRISServer.busName, MPRISServer.objectPath,
            MPRISServer.rootInterface, "SupportedMimeTypes",
        ])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"as 5 "audio/mpeg" "audio/flac" "audio/ogg" "audio/vorbis" "audio/opus""#)
    }

    @Test("SetPosition and Seek reach the player; a stale track id is ignored")
    func seeking() throws {
        let (bus, server, player, _) = try startServer()
        defer { server.stop() }
        let busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        func call(_ member: String, _ arguments: [String]) throws -> CommandResult {
            try bus.run(busctl, [
                "--address=\(bus.address)", "--", "call", MPRISServer.busName, MPRISServer.objectPath,
                MPRISServer.playerInterface, member,
            ] + arguments)
        }
        #expect(try call("Seek", ["x", "-5000000"]).status == 0)
        #expect(try call("SetPosition", ["ox", "/org/earshot/track/3", "30000000"]).status == 0)
        #expect(try call("SetPosition", ["ox", "/org/earshot/track/9", "1000000"]).status == 0)
        #expect(try call("SetPosition", ["ox", "/org/earshot/track/3", "-1"]).status == 0)
        #expect(try call("SetPosition", ["ox", "/org/earshot/track/3", "999000000"]).status == 0)
        #expect(player.received == [
            .seek(offsetMicroseconds: -5_000_000),
            .setPosition(trackId: "/org/earshot/track/3", positionMicroseconds: 30_000_000),
        ])
    }

    @Test("PropertiesChanged names exactly the changed properties; Seeked carries the position")
    func signals() throws {
        let (bus, server, _, _) = try startServer()
        defer { server.stop() }
        let monitor = try bus.spawn(
            try ProcessRunner.requireTool("dbus-monitor", package: "dbus-bin"),
            ["--address", bus.address, "type='signal',path='/org/mpris/MediaPlayer2'"])
        defer { monitor.kill() }
        // dbus-monitor prints its own NameAcquired/NameLost once it is attached.
        #expect(eventually {
            monitor.standardOutput().contains("NameLost") || monitor.standardOutput().contains("NameAcquired")
        })

        var snapshot = MPRISTests.track
        snapshot.volume = 0.25
        server.update(snapshot)
        server.update(snapshot)  // No change: no signal.
        snapshot.trackId = MPRISSnapshot.trackId(4)
        snapshot.title = "All Blues"
        snapshot.lengthMicroseconds = 693_000_000
        server.update(snapshot)
        snapshot.playbackStatus = .playing
        snapshot.canGoNext = false
        server.update(snapshot)
        snapshot.loopStatus = .track
        snapshot.shuffle = true
        server.update(snapshot)
        server.emitSeeked(positionMicroseconds: 12_000_000)

        #expect(eventually { DBusMonitorLog(monitor.standardOutput()).seeked.count == 1 })
        let log = DBusMonitorLog(monitor.standardOutput())
        // Each update may be coalesced with the next one when they arrive together, but nothing is announced
        // that did not change, and Position never is.
        let changes = log.propertiesChanged
        #expect(!changes.isEmpty)
        let announced = Set(changes.flatMap { $0 })
        #expect(announced == ["Volume", "PlaybackStatus", "Metadata", "CanGoNext", "LoopStatus", "Shuffle"])
        #expect(changes.allSatisfy { !$0.contains("Position") })
        // The track change: PlaybackStatus and Metadata in one signal.
        #expect(changes.contains { $0.contains("Metadata") && $0.contains("PlaybackStatus") })
        #expect(log.seeked == [12_000_000])
    }

    @Test("one update at a time announces only what changed")
    func singleChanges() throws {
        let (bus, server, _, _) = try startServer()
        defer { server.stop() }
        let monitor = try bus.spawn(
            try ProcessRunner.requireTool("dbus-monitor", package: "dbus-bin"),
            ["--address", bus.address, "type='signal',path='/org/mpris/MediaPlayer2'"])
        defer { monitor.kill() }
        #expect(eventually {
            monitor.standardOutput().contains("NameLost") || monitor.standardOutput().contains("NameAcquired")
        })

        var snapshot = MPRISTests.track
        snapshot.volume = 0.25
        server.update(snapshot)
        #expect(eventually { DBusMonitorLog(monitor.standardOutput()).propertiesChanged.count == 1 })
        snapshot.playbackStatus = .playing
        server.update(snapshot)
        #expect(eventually { DBusMonitorLog(monitor.standardOutput()).propertiesChanged.count == 2 })
        snapshot.trackId = MPRISSnapshot.trackId(5)
        snapshot.title = "Flamenco Sketches"
        server.update(snapshot)
        #expect(eventually { DBusMonitorLog(monitor.standardOutput()).propertiesChanged.count == 3 })
        #expect(DBusMonitorLog(monitor.standardOutput()).propertiesChanged == [
            ["Volume"], ["PlaybackStatus"], ["PlaybackStatus", "Metadata"],
        ])
    }

    @Test("a second server on the same bus is refused: the name is taken")
    func secondInstanceRefused() throws {
        let (bus, server, _, _) = try startServer()
        defer { server.stop() }
        let second = MPRISServer(busAddress: bus.address) { _ in .done }
        #expect(throws: MPRISError(operation: "request the name \(MPRISServer.busName)", code: EEXIST)) {
            try second.start()
        }
    }

    @Test("no bus at the address: start throws")
    func noBus() throws {
        let server = MPRISServer(busAddress: "unix:path=/nonexistent/earshot-test-bus") { _ in .done }
        #expect(throws: MPRISError.self) { try server.start() }
    }

    @Test("after the session bus restarts, the server reconnects and takes its name again")
    func reconnects() throws {
        let (bus, server, player, playerctl) = try startServer()
        defer { server.stop() }
        #expect(try bus.run(playerctl, ["-l"]).standardOutput.trimmed == "earshot")
        try bus.restart()
        #expect(eventually(timeout: .seconds(10)) {
            (try? bus.run(playerctl, ["-l"]).standardOutput.trimmed) == "earshot"
        })
        #expect(server.isConnected)
        #expect(try bus.run(playerctl, ["-p", "earshot", "status"]).standardOutput.trimmed == "Paused")
        #expect(try bus.run(playerctl, ["-p", "earshot", "play"]).status == 0)
        #expect(player.received == [.play(.user)])
    }

    @Test("an address naming the daemon's guid still reconnects to the daemon that replaced it")
    func reconnectsPastTheGUID() throws {
        let playerctl = try ProcessRunner.requireTool("playerctl", package: "playerctl")
        let bus = try PrivateSessionBus()
        let pinned = bus.printedAddress
        #expect(pinned.contains(",guid="), "dbus-daemon printed \(pinned)")
        let server = MPRISServer(busAddress: pinned) { _ in .done }
        try server.start()
        defer { server.stop() }
        try bus.restart()
        #expect(bus.printedAddress != pinned, "the new daemon has a guid of its own")
        #expect(eventually(timeout: .seconds(10)) {
            (try? bus.run(playerctl, ["-l"]).standardOutput.trimmed) == "earshot"
        })
        #expect(server.isConnected)
    }

    @Test("a server guid is dropped from every entry of an address, and nothing else")
    func addressForgettingServer() {
        #expect(MPRISServer.addressForgettingServer("unix:path=/run/user/1000/bus,guid=0123abcd")
            == "unix:path=/run/user/1000/bus")
        #expect(MPRISServer.addressForgettingServer("unix:guid=aa,path=/tmp/bus;tcp:host=localhost,port=1,guid=bb")
            == "unix:path=/tmp/bus;tcp:host=localhost,port=1")
        #expect(MPRISServer.addressForgettingServer("unix:path=/run/user/1000/bus")
            == "unix:path=/run/user/1000/bus")
        #expect(MPRISServer.addressForgettingServer("unix:path=/tmp/guid=1") == "unix:path=/tmp/guid=1")
    }

    @Test("Quit reaches the player, and stop() from inside the handler does not deadlock")
    func quit() throws {
        let bus = try PrivateSessionBus()
        let box = ServerBox()
        let server = MPRISServer(busAddress: bus.address) { command in
            if command == .quit { box.server?.stop() }
            return .done
        }
        box.server = server
        try server.start()
        let busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        let result = try bus.run(busctl, [
            "--address=\(bus.address)", "--", "call", MPRISServer.busName, MPRISServer.objectPath,
            MPRISServer.rootInterface, "Quit",
        ])
        #expect(result.status == 0)
        #expect(eventually { !server.isConnected })
        server.stop()
    }
}

/// Holds a server for a handler that needs to reach it.
final class ServerBox: @unchecked Sendable {
    // Unchecked Sendable: written once before the server starts, read on the bus thread afterwards.
    /// The server, once created. Weak: the server's handler holds this box, and the test holds the server.
    weak var server: MPRISServer?
}

/// The signals in dbus-monitor's default output.
struct DBusMonitorLog {
    /// For each PropertiesChanged of the player interface, the names of the changed properties, in order.
    var propertiesChanged: [[String]] = []
    /// The positions of the Seeked signals.
    var seeked: [Int64] = []

    /// Parses everything dbus-monitor printed so far.
    init(_ text: String) {
        let blocks = text.components(separatedBy: "\nsignal ").dropFirst()
        for block in blocks {
            let lines = block.split(separator: "\n").map(String.init)
            guard let header = lines.first else { continue }
            if header.contains("member=PropertiesChanged"),
               lines.count > 1, lines[1].contains(#"string "org.mpris.MediaPlayer2.Player""#) {
                // The changed properties are the first strings of the top-level dict entries (six spaces in).
                var names: [String] = []
                for (index, line) in lines.enumerated()
                where line == "      dict entry(" && index + 1 < lines.count {
                    let key = lines[index + 1].trimmingCharacters(in: .whitespaces)
                    if key.hasPrefix("string \"") { names.append(String(key.dropFirst(8).dropLast())) }
                }
                propertiesChanged.append(names)
            } else if header.contains("member=Seeked"), lines.count > 1 {
                let value = lines[1].trimmingCharacters(in: .whitespaces)
                if value.hasPrefix("int64 "), let position = Int64(value.dropFirst(6)) { seeked.append(position) }
            }
        }
    }
}
