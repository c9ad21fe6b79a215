// MPD's commands typed: the argument counts, numbers, ranges and Booleans checked as MPD checks them.
import Testing
@testable import MPDProtocol

@Suite("MPD commands")
struct MPDCommandTests {
    func command(_ line: String) -> Result<MPDCommand, MPDError> {
        MPDRequest.parse(Array(line.utf8)).flatMap(MPDCommand.parse)
    }

    @Test("the transport: play, pause 1 / pause 0 / bare pause, seeks, volume, repeat, random")
    func transport() {
        #expect(command("play") == .success(.play(position: nil)))
        #expect(command("play 3") == .success(.play(position: 3)))
        #expect(command("playid 7") == .success(.playid(id: 7)))
        #expect(command("pause 1") == .success(.pause(true)))
        #expect(command("pause 0") == .success(.pause(false)))
        #expect(command("pause") == .success(.pause(nil)))
        #expect(command("seek 2 30.5") == .success(.seek(position: 2, seconds: 30.5)))
        #expect(command("seekid 4 10") == .success(.seekid(id: 4, seconds: 10)))
        #expect(command("seekcur 12") == .success(.seekcur(.to(seconds: 12))))
        #expect(command("seekcur +5") == .success(.seekcur(.by(seconds: 5))))
        #expect(command("seekcur -2.5") == .success(.seekcur(.by(seconds: -2.5))))
        #expect(command("setvol 55") == .success(.setvol(55)))
        #expect(command("volume -10") == .success(.volume(change: -10)))
        #expect(command("repeat 1") == .success(.repeat(true)))
        #expect(command("random 0") == .success(.random(false)))
        #expect(command("single oneshot") == .success(.single("oneshot")))
        #expect(command("consume 1") == .success(.consume(true)))
        // MPD 0.23's consume takes 0 or 1 only (its `oneshot` came with 0.24); single names its three modes.
        #expect(command("consume oneshot") == .failure(MPDError(.argument, command: "consume",
                                                                "Boolean (0/1) expected: oneshot")))
        #expect(command("single 2") == .failure(MPDError(.argument, command: "single",
                                                         "Unrecognized single mode, expected 0, 1, or oneshot")))
    }

    @Test("the queue and the library: ranges, positions, filters kept as sent")
    func queueAndLibrary() {
        #expect(command("playlistinfo") == .success(.playlistinfo(nil)))
        #expect(command("playlistinfo 3") == .success(.playlistinfo(MPDRange(start: 3, end: 4))))
        #expect(command("playlistinfo 2:5") == .success(.playlistinfo(MPDRange(start: 2, end: 5))))
        #expect(command("delete 2:") == .success(.delete(MPDRange(start: 2, end: nil))))
        #expect(command("add \"Jazz/So What.mp3\"") == .success(.add(uri: "Jazz/So What.mp3", position: nil)))
        #expect(command("addid a.mp3 +1") == .success(.addid(uri: "a.mp3", position: "+1")))
        #expect(command("lsinfo") == .success(.lsinfo(nil)))
        #expect(command("listfiles") == .success(.listfiles(nil)))
        #expect(command("listfiles \"album/disc 1\"") == .success(.listfiles("album/disc 1")))
        #expect(command("listfiles a b") == .failure(MPDError(.argument, command: "listfiles",
            "too many arguments for \"listfiles\"")))
        #expect(command("search any ros") == .success(.search(["any", "ros"])))
        #expect(command("find \"(album == 'X')\" window 0:2") == .success(.find(["(album == 'X')", "window", "0:2"])))
        #expect(command("list album artist Miles") == .success(.list(tag: "album", ["artist", "Miles"])))
        #expect(command("update Jazz") == .success(.update("Jazz")))
        #expect(command("idle player mixer") == .success(.idle([.player, .mixer])))
        #expect(command("idle") == .success(.idle([])))
    }

    @Test("MPD's refusals: unknown names, argument counts, numbers, Booleans, ranges, volumes, idle events")
    func refusals() {
        #expect(command("frobnicate") == .failure(MPDError(.unknown, "unknown command \"frobnicate\"")))
        // Commands MPD has that Earshot does not answer are unknown here too, never a silent OK.
        #expect(command("sticker get song a.mp3 x") == .failure(MPDError(.unknown, "unknown command \"sticker\"")))
        #expect(command("status 1") == .failure(MPDError(.argument, command: "status",
            "wrong number of arguments for \"status\"")))
        #expect(command("play 1 2") ==
            .failure(MPDError(.argument, command: "play", "too many arguments for \"play\"")))
        #expect(command("seek 1") ==
            .failure(MPDError(.argument, command: "seek", "wrong number of arguments for \"seek\"")))
        #expect(command("find") == .failure(MPDError(.argument, command: "find", "too few arguments for \"find\"")))
        #expect(command("play x") == .failure(MPDError(.argument, command: "play", "Integer expected: x")))
        #expect(command("play -1") == .failure(MPDError(.argument, command: "play", "Number is negative: -1")))
        #expect(command("play 99999999999") ==
            .failure(MPDError(.argument, command: "play", "Number too large: 99999999999")))
        #expect(command("pause 2") == .failure(MPDError(.argument, command: "pause", "Boolean (0/1) expected: 2")))
        #expect(command("repeat on") == .failure(MPDError(.argument, command: "repeat", "Boolean (0/1) expected: on")))
        #expect(command("setvol 101") == .failure(MPDError(.argument, command: "setvol", "Number too large: 101")))
        #expect(command("setvol -1") == .failure(MPDError(.argument, command: "setvol", "Number is negative: -1")))
        #expect(command("seek 0 1e3") == .failure(MPDError(.argument, command: "seek", "Float expected: 1e3")))
        #expect(command("delete 5:2") == .failure(MPDError(.argument, command: "delete", "Malformed range: 5:2")))
        #expect(command("delete a:b") ==
            .failure(MPDError(.argument, command: "delete", "Integer or range expected: a:b")))
        #expect(command("idle nonsense") ==
            .failure(MPDError(.argument, command: "idle", "Unrecognized idle event: nonsense")))
    }

    @Test("`commands` lists every name parse accepts, sorted, and none of the framing's own words")
    func names() {
        #expect(MPDCommand.names == MPDCommand.names.sorted())
        for name in ["ping", "status", "idle", "play", "pause", "setvol", "add", "lsinfo", "list", "update"] {
            #expect(MPDCommand.names.contains(name), "\(name)")
        }
        for name in ["noidle", "command_list_begin", "command_list_end", "sticker"] {
            #expect(!MPDCommand.names.contains(name), "\(name)")
        }
    }
}
