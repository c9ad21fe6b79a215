// The MPD front-end's translation, with a fake owner: each MPD command becomes the CLI's request (pause 1 is `pause`,
// pause 0 the user's `play`, bare pause the old toggle), and the owner's status becomes MPD's lines.
import EarshotJSON
import Foundation
import MPDProtocol
import SystemSupport
import Testing
@testable import EarshotClients
@testable import EarshotService

@Suite("MPD session")
struct MPDSessionTests {
    /// A fake owner that records requests and answers `status` and `queue` from fixed values.
    final class FakeOwner: Sendable {
        let asked = LockedValue<[ControlRequest]>([])
        var status: [String: Any] { [
            "playback": "paused", "volume": 70, "repeat": "track", "shuffle": true, "trackIndex": 1, "trackCount": 2,
            "positionMs": 12_345, "durationMs": 30_000,
        ] }

        func ask(_ request: ControlRequest) -> String {
            asked.withLock { $0.append(request) }
            switch request {
            case .status: return ControlReply.success(["status": status])
            case .queue:
                return ControlReply.success(["queue": ["/m/a.mp3", "/m/b.mp3"], "current": 1, "ids": [5, 9],
                                             "versions": [2, 3], "version": 3])
            case .seek: return ControlReply.failure("nothing to seek in")
            // The owner resolves ids: 5 and 9 are its entries.
            case .byID(.play(let id)), .byID(.delete(let id)), .byID(.move(let id, _)), .byID(.seek(let id, _)):
                return [5, 9].contains(id) ? ControlReply.success() : ControlReply.failure("No such song")
            default: return ControlReply.success()
            }
        }
    }

    func run(_ line: String, _ owner: FakeOwner) -> String {
        var session = MPDSession(ask: owner.ask)
        let batch = MPDBatch(entries: [MPDRequest.parse(Array(line.utf8))], isList: false, listOK: false)
        return batch.reply { session.run($0) }
    }

    @Test("pause 1, pause 0 and bare pause are the CLI's pause, play and toggle; the rest as the CLI sends them")
    func transport() {
        let owner = FakeOwner()
        for line in ["pause 1", "pause 0", "pause", "stop", "next", "previous", "setvol 20", "repeat 1", "random 0"] {
            #expect(run(line, owner) == "OK\n", "\(line)")
        }
        #expect(owner.asked.withLock { $0 } == [
            // `repeat 1` under the owner's repeat of one track (MPD's repeat with single) leaves it as it is.
            .pause, .play, .toggle, .stop, .next, .previous, .volume(percent: 20), .status, .shuffle(on: false),
        ])
    }

    @Test("status and currentsong in MPD's words, from the owner's status and queue")
    func status() {
        let owner = FakeOwner()
        #expect(run("status", owner) == """
            volume: 70\nrepeat: 1\nrandom: 1\nsingle: 1\nconsume: 0\nplaylist: 1\nplaylistlength: 2\nstate: pause
            song: 1\nsongid: 2\nelapsed: 12.345\nduration: 30.000\nOK\n
            """)
        #expect(run("currentsong", owner) == "file: /m/b.mp3\nPos: 1\nId: 9\nOK\n")
        #expect(run("playlistinfo 0", owner) == "file: /m/a.mp3\nPos: 0\nId: 5\nOK\n")
        #expect(run("getvol", owner) == "volume: 70\nOK\n")
    }

    @Test("relative volume and seeks from the owner's status; refusals carry the owner's reason")
    func relative() {
        let owner = FakeOwner()
        #expect(run("volume +50", owner) == "OK\n")
        #expect(owner.asked.withLock { $0.last } == .volume(percent: 100))
        #expect(run("seekcur +5", owner) == "ACK [52@0] {seekcur} nothing to seek in\n")
        #expect(owner.asked.withLock { $0.last } == .seek(seconds: 17.345))
        // Another track's seek chooses it first (the rules' jump), then seeks.
        #expect(run("seek 0 10", owner) == "ACK [52@0] {seek} nothing to seek in\n")
        #expect(owner.asked.withLock { Array($0.suffix(2)) } == [.jump(index: 0), .seek(seconds: 10)])
    }

    @Test("idle's changes: the player, the mixer, the options and the queue from two statuses; queue events by line")
    func idleChanges() {
        let before: [String: Any] = ["playback": "playing", "trackIndex": 0, "volume": 50, "repeat": "off",
                                     "shuffle": false, "trackCount": 2, "pauseReason": JSONNull()]
        var after = before
        #expect(MPDChanges.changes(from: before, to: after).isEmpty)
        after["playback"] = "paused"
        after["pauseReason"] = "call"
        #expect(MPDChanges.changes(from: before, to: after) == [.player])
        after["volume"] = 40
        after["shuffle"] = true
        after["trackCount"] = 3
        #expect(MPDChanges.changes(from: before, to: after) == [.player, .mixer, .options, .playlist])
        var single = before
        single["single"] = "oneshot"
        #expect(MPDChanges.changes(from: before, to: single) == [.options])
        var consume = before
        consume["consume"] = true
        #expect(MPDChanges.changes(from: before, to: consume) == [.options])
        #expect(MPDChanges.changes(line: "T event kind=queueReplaced(2 tracks, at 0) playback=idle") == [.playlist])
        #expect(MPDChanges.changes(line: "T event kind=userSeek(1000ms) playback=playing") == [.player])
        #expect(MPDServer.changedLines([.player, .mixer]) == "changed: mixer\nchanged: player\nOK\n")
    }

    @Test("the queue by ids and positions: the rules' jump and edits; plchanges by version; bad ids and indexes")
    func queueCommands() {
        let owner = FakeOwner()
        for line in ["playid 9", "play 0", "deleteid 5", "delete 0:", "move 1 0", "moveid 9 0", "swapid 5 9",
                     "swap 0 1", "shuffle", "prio 3 0:2", "consume 0", "single 0"] {
            #expect(run(line, owner) == "OK\n", "\(line)")
        }
        #expect(owner.asked.withLock { $0.filter { if case .queue = $0 { false } else if case .status = $0 { false }
                                                    else { true } } } == [
            // Ids go to the owner as ids, resolved there in the same step; positions as positions.
            .byID(.play(id: 9)), .jump(index: 0), .byID(.delete(id: 5)),
            .edit(.delete(start: 0, end: 2), paths: []), .edit(.move(start: 1, end: 2, to: 0), paths: []),
            .byID(.move(id: 9, to: 0)), .byID(.swap(first: 5, second: 9)),
            .edit(.swap(first: 0, second: 1), paths: []), .edit(.shuffle(start: 0, end: 2, seed: 0), paths: []),
            .consume(on: false), .single(.off),
            // `single 0` under repeat track: back to the queue's repeat.
            .repeatMode(.queue),
        ])
        #expect(run("plchanges 2", owner) == "file: /m/b.mp3\nPos: 1\nId: 9\nOK\n")
        #expect(run("plchangesposid 0", owner) == "cpos: 0\nId: 5\ncpos: 1\nId: 9\nOK\n")
        #expect(run("playlistid 9", owner) == "file: /m/b.mp3\nPos: 1\nId: 9\nOK\n")
        #expect(run("playlistid 7", owner) == "ACK [50@0] {playlistid} No such song\n")
        #expect(run("deleteid 7", owner) == "ACK [50@0] {deleteid} No such song\n")
        #expect(run("seekid 7 3", owner) == "ACK [50@0] {seekid} No such song\n")
        #expect(run("moveid 9 0", owner) == "OK\n")
        // Single and consume are Earshot's own (rules 35-37); `repeat 1` leaves a repeat of one track as it is.
        let modes = FakeOwner()
        for line in ["consume 1", "single oneshot", "single 1", "repeat 1"] {
            #expect(run(line, modes) == "OK\n", "\(line)")
        }
        #expect(modes.asked.withLock { $0.filter { if case .status = $0 { false } else { true } } } == [
            .consume(on: true), .single(.oneshot), .single(.on),
        ])
        #expect(run("consume oneshot", owner) == "ACK [2@0] {consume} Boolean (0/1) expected: oneshot\n")
    }

    @Test("a configured password: only password, ping, close and commands before it; the wrong one refused")
    func password() {
        let owner = FakeOwner()
        var session = MPDSession(ask: owner.ask, password: "sesame")
        func run(_ line: String) -> String {
            MPDBatch(entries: [MPDRequest.parse(Array(line.utf8))], isList: false, listOK: false)
                .reply { session.run($0) }
        }
        #expect(run("status") == "ACK [4@0] {status} you don't have permission for \"status\"\n")
        #expect(session.refusal(of: "idle") != nil)
        #expect(run("ping") == "OK\n")
        #expect(run("password wrong") == "ACK [3@0] {password} incorrect password\n")
        #expect(run("password sesame") == "OK\n")
        #expect(run("getvol") == "volume: 70\nOK\n")
        #expect(session.refusal(of: "idle") == nil)
        #expect(owner.asked.withLock { $0 } == [.status])
    }

    @Test("the one output: disabling is the user's pause, enabling starts nothing; replay_gain_mode is replaygain")
    func outputsAndReplayGain() {
        let owner = FakeOwner()
        let outputs = MPDOutputSwitch()
        var session = MPDSession(ask: owner.ask, outputSwitch: outputs)
        func run(_ line: String) -> String {
            MPDBatch(entries: [MPDRequest.parse(Array(line.utf8))], isList: false, listOK: false)
                .reply { session.run($0) }
        }
        #expect(run("outputs") == "outputid: 0\noutputname: Earshot\nplugin: pulse\noutputenabled: 1\nOK\n")
        #expect(run("disableoutput 0") == "OK\n")
        #expect(session.changed == [.output])
        #expect(run("outputs").contains("outputenabled: 0"))
        #expect(run("enableoutput 0") == "OK\n")
        #expect(run("toggleoutput 0") == "OK\n")
        #expect(run("disableoutput 1") == "ACK [50@0] {disableoutput} No such audio output\n")
        #expect(run("replay_gain_mode album") == "OK\n")
        #expect(run("replay_gain_mode loud") == "ACK [2@0] {replay_gain_mode} Unrecognized replay gain mode\n")
        #expect(owner.asked.withLock { $0.filter { $0 != .status } } == [.pause, .pause, .replayGain(.album)])
    }

    @Test("commands MPD has that this server does not answer are MPD's unknown command, never a silent OK")
    func unknown() {
        let owner = FakeOwner()
        #expect(run("sticker list song a.mp3", owner) == "ACK [5@0] {} unknown command \"sticker\"\n")
        #expect(owner.asked.withLock { $0 }.isEmpty)
        // Every command the parser knows is answered.
        #expect(MPDCommand.names.allSatisfy(MPDSession.answered.contains))
        #expect(MPDSession.answered.filter { $0 != "noidle" }.allSatisfy(MPDCommand.names.contains))
        #expect(MPDSession.answered == MPDSession.answered.sorted())
    }
}

@Suite("MPD stored playlists, on disk")
struct MPDStoredPlaylistFileTests {
    @Test("save, list, read, modify, rename and remove .m3u files; bad names, missing and existing playlists refused")
    func files() throws {
        let directory = "/tmp/earshot-playlists-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let playlists = MPDStoredPlaylists(directory: directory + "/deep")
        #expect(playlists.list().isEmpty)
        #expect(playlists.write("one", ["/m/a.mp3", "/m/b.mp3"], mustBeNew: true) .done)
        #expect(playlists.write("one", [], mustBeNew: true) .failure == .exists)
        #expect(playlists.list().map(\.name) == ["one"])
        #expect(playlists.read("one") == .success(["/m/a.mp3", "/m/b.mp3"]))
        #expect(playlists.read("two") .failure == .noSuchPlaylist)
        #expect(playlists.read("a/b") .failure == .badName)
        #expect(playlists.rename("one", to: "two") .done)
        #expect(playlists.modify("two") { $0.remove(at: 0); return .success(()) } .done)
        #expect(playlists.read("two") == .success(["/m/b.mp3"]))
        #expect(playlists.remove("two") .done)
        #expect(playlists.remove("two") .failure == .noSuchPlaylist)
        #expect(MPDStoredPlaylists.timestamp(0) == "1970-01-01T00:00:00Z")
    }
}

extension Result {
    /// Whether it succeeded.
    var done: Bool { if case .success = self { true } else { false } }
    /// Its failure, nil on success.
    var failure: Failure? { if case .failure(let failure) = self { failure } else { nil } }
}
