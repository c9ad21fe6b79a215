// The control protocol's parser and the queue input expansion: pure functions, tested without a socket.
import Foundation
import Testing
import TrackPaths
@testable import EarshotService
@testable import EarshotStorage

@Suite("Control requests")
struct ControlProtocolTests {
    /// `/music/` + 0xFF 0xFE + `.mp3`: not UTF-8 at all.
    static let invalid = TrackPath(bytes: Array("/music/".utf8) + [0xFF, 0xFE] + Array(".mp3".utf8))!
    /// `/music/caf` + 0xE9 (Latin-1 é) + `.mp3`.
    static let latin1 = TrackPath(bytes: Array("/music/caf".utf8) + [0xE9] + Array(".mp3".utf8))!

    func parse(_ text: String) -> Result<ControlRequest, ControlRequestError> {
        ControlRequest.parse(Array(text.utf8))
    }

    @Test("Every verb parses, and a request survives its own JSON line")
    func roundTrip() throws {
        let requests: [ControlRequest] = [
            .play, .pause, .toggle, .stop, .next, .previous, .seek(seconds: 30.5), .volume(percent: 80), .status,
            .events, .clear, .queue, .load(paths: ["/a b.mp3", "/ü.mp3"], play: true), .add(paths: ["/x.mp3"]),
            .load(paths: ["/y.mp3"], play: false), .add(paths: [Self.latin1, "/z.mp3", Self.invalid]),
            .repeatMode(.off), .repeatMode(.track), .repeatMode(.queue), .shuffle(on: true), .shuffle(on: false),
            .single(.off), .single(.on), .single(.oneshot), .consume(on: true), .consume(on: false),
            .byID(.play(id: 5)), .byID(.delete(id: 0)), .byID(.move(id: 7, to: 2)), .byID(.swap(first: 1, second: 9)),
            .byID(.seek(id: 3, seconds: 12.5)),
            .replayGain(.off), .replayGain(.track), .replayGain(.album), .replayGain(.auto),
            .update(path: nil, rescan: false), .update(path: "Jazz/Miles", rescan: true), .update(path: Self.latin1,
            rescan: false), .browse(path: nil), .browse(path: "Sigur Rós"), .libraryQuery(verb: "search",
            words: ["any", "ros"]), .libraryQuery(verb: "findadd", words: ["album", "Kind of Blue"]),
            .libraryQuery(verb: "list", words: ["album"]),
            .libraryQuery(verb: "search", words: ["any", "x"], tags: true),
        ]
        for request in requests {
            #expect(try parse(request.jsonLine).get() == request)
        }
        #expect(try parse(#"{"command":"resume"}"#).get() == .play)
    }

    @Test("A seek with more digits than a Double holds survives its own JSON line (fuzzing regression)")
    func longDecimalSeek() throws {
        // Found by scripts/fuzz: Foundation parsed the long decimal one unit in the last place away from the
        // shortest form the request is written back as. Seeks are rounded to milliseconds, the player's step.
        let request = try parse(#"{"command":"seek","seconds":30.577777777777777777}"#).get()
        #expect(request == .seek(seconds: 30.578))
        #expect(try parse(request.jsonLine).get() == request)
    }

    @Test("Malformed requests get a reason, never a crash", arguments: [
        ("", "not valid JSON"),
        ("not json", "not valid JSON"),
        ("[1,2]", "must be a JSON object"),
        (#"{"cmd":"play"}"#, "needs a string field 'command'"),
        (#"{"command":5}"#, "needs a string field 'command'"),
        (#"{"command":"paws"}"#, "unknown command 'paws'"),
        (#"{"command":"seek"}"#, "seek needs a number"),
        (#"{"command":"seek","seconds":-1}"#, "seek needs a number"),
        (#"{"command":"seek","seconds":true}"#, "seek needs a number"),
        (#"{"command":"volume","percent":151}"#, "from 0 to 150"),
        (#"{"command":"repeat","mode":"all"}"#, "off, track or queue"),
        (#"{"command":"repeat"}"#, "off, track or queue"),
        (#"{"command":"replaygain","mode":"Track"}"#, "off, track, album or auto"),
        (#"{"command":"replaygain"}"#, "off, track, album or auto"),
        (#"{"command":"shuffle","on":"yes"}"#, "Boolean field 'on'"),
        (#"{"command":"single","mode":"once"}"#, "off, on or oneshot"),
        (#"{"command":"consume"}"#, "Boolean field 'on'"),
        (#"{"command":"playid","id":-1}"#, "whole numbers from 0 in 'id'"),
        (#"{"command":"swapid","first":1}"#, "'first', 'second'"),
        (#"{"command":"seekid","id":1,"seconds":-2}"#, "seekid needs"),
        (#"{"command":"load","paths":[]}"#, "non-empty array"),
        (#"{"command":"add","paths":"x"}"#, "non-empty array"),
        (#"{"command":"add","paths":[""]}"#, "non-empty array"),
        (#"{"command":"add","paths":["/a.mp3",5]}"#, "non-empty array"),
        (#"{"command":"add","paths":["/a\u0000b.mp3"]}"#, "non-empty array"),
        (#"{"command":"add","paths":[{"base64":"not base64!"}]}"#, "non-empty array"),
        (#"{"command":"add","paths":[{"base64":"L2EAYg=="}]}"#, "non-empty array"),
        (#"{"command":"add","paths":[{"base64":"L2E=","extra":1}]}"#, "non-empty array"),
        (#"{"command":"add","paths":[{"hex":"2f61"}]}"#, "non-empty array"),
        (#"{"command":"update","path":5}"#, "optional field 'path'"),
        (#"{"command":"ls","path":""}"#, "optional field 'path'"),
        (#"{"command":"search"}"#, "array field 'words' of 1 to 64 strings"),
        (#"{"command":"find","words":["artist",3]}"#, "array field 'words' of 1 to 64 strings"),
        (#"{"command":"find","words":["artist","x"],"tags":1}"#, "optional Boolean field 'tags'"),
    ])
    func malformed(line: String, reason: String) {
        guard case .failure(let error) = parse(line) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(error.message.contains(reason), "\(error.message)")
    }

    @Test("A path that is not UTF-8 travels as a base64 object, byte for byte; a UTF-8 path stays a plain string")
    func nonUTF8Paths() throws {
        let request = ControlRequest.add(paths: ["/music/ü b.mp3", Self.invalid])
        // (JSONSerialization escapes every slash.)
        #expect(request.jsonLine
                    == #"{"command":"add","paths":["\/music\/ü b.mp3",{"base64":"L211c2ljL\/\/+Lm1wMw=="}]}"#)
        // The documented example of the protocol's header comment, as a client would write it by hand.
        let line = #"{"command": "load", "paths": [{"base64": "L211c2ljL2NhZukubXAz"}, "/a.mp3"], "play": false}"#
        #expect(try parse(line).get() == .load(paths: [Self.latin1, "/a.mp3"], play: false))
        guard case .add(let paths) = try parse(request.jsonLine).get() else {
            Issue.record("not an add")
            return
        }
        #expect(paths.map(\.bytes) == [Array("/music/ü b.mp3".utf8), Self.invalid.bytes])
        // Valid UTF-8 given in the object form is the same path as the string form.
        let utf8AsBase64 = #"{"command":"add","paths":[{"base64":"L2EubXAz"}]}"#
        #expect(try parse(utf8AsBase64).get() == .add(paths: ["/a.mp3"]))
        // Paths are compared by bytes: the two Unicode spellings of "é" are two different files on Linux.
        #expect(try parse(#"{"command":"add","paths":["/caf\u00e9"]}"#).get()
                    != parse(#"{"command":"add","paths":["/cafe\u0301"]}"#).get())
    }

    @Test("Invalid UTF-8 and over-long lines are refused; an odd command name is not echoed")
    func hostileBytes() {
        guard case .failure(let utf8) = ControlRequest.parse([0x7B, 0xFF, 0xFE, 0x7D]) else {
            Issue.record("invalid UTF-8 accepted")
            return
        }
        #expect(utf8.message.contains("UTF-8"))
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: ControlRequest.maximumLineBytes + 1)
        guard case .failure(let tooLong) = ControlRequest.parse(long) else {
            Issue.record("an over-long line was accepted")
            return
        }
        #expect(tooLong.message.contains("longer than"))
        guard case .failure(let odd) = parse(#"{"command":"/home/me/secret.mp3"}"#) else {
            Issue.record("odd command accepted")
            return
        }
        #expect(!odd.message.contains("secret"))
    }

    @Test("A queue too long for one line goes as a load and then adds, each line within the limit, nothing lost")
    func longQueueIsSplit() throws {
        // 10 000 tracks of about 60 bytes each: several times the line limit, with names that are not UTF-8.
        let paths = (0..<10_000).map { number in
            number % 7 == 0
                ? TrackPath(bytes: Array("/music/album \(number / 12)/".utf8) + [0xFF, 0xFE] + Array("\(number).mp3".utf8))!
                : TrackPath("/music/\"album\" \\ \(number / 12)/track \(number) \u{2014} a long enough title.mp3")
        }
        let parts = ControlRequest.load(paths: paths, play: true).splitForSending()
        #expect(parts.count > 5)
        var received: [TrackPath] = []
        for (index, part) in parts.enumerated() {
            let line = Array(part.jsonLine.utf8)
            #expect(line.count + 1 <= ControlRequest.maximumLineBytes)
            switch try ControlRequest.parse(line).get() {
            case .load(let batch, let play) where index == 0:
                #expect(play)
                received += batch
            case .add(let batch) where index > 0:
                received += batch
            default:
                Issue.record("part \(index) is neither the first load nor a later add")
            }
        }
        #expect(received == paths)
        // Short requests are sent as they are.
        #expect(ControlRequest.add(paths: ["/a.mp3"]).splitForSending() == [.add(paths: ["/a.mp3"])])
        #expect(ControlRequest.status.splitForSending() == [.status])
    }
}

@Suite("Queue input expansion")
struct QueueInputTests {
    @Test("Files, directories (recursive, natural order) and M3U playlists become absolute paths")
    func expansion() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-queue-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let album = root + "/album"
        try FileManager.default.createDirectory(atPath: album + "/disc 2", withIntermediateDirectories: true)
        for name in ["10 ten.mp3", "2 two.mp3", "1 one.mp3", "cover.jpg", ".hidden.mp3", "disc 2/1 more.mp3"] {
            _ = FileManager.default.createFile(atPath: album + "/" + name, contents: Data([0]))
        }
        try "#EXTM3U\n# a comment\nalbum/2 two.mp3\n\nmissing.mp3\n".write(
            toFile: root + "/list.m3u", atomically: true, encoding: .utf8)

        let expanded = QueueInput.expand(
            ["album", "list.m3u", "nowhere.mp3", "album/./disc 2/../1 one.mp3"], relativeTo: TrackPath(root))
        #expect(expanded.paths == [
            album + "/1 one.mp3", album + "/2 two.mp3", album + "/10 ten.mp3", album + "/disc 2/1 more.mp3",
            album + "/2 two.mp3", album + "/1 one.mp3",
        ].map { TrackPath($0) })
        #expect(expanded.problems.count == 2)
        #expect(expanded.problems.contains { $0.hasPrefix("nowhere.mp3") })
        #expect(expanded.problems.contains { $0.hasPrefix("missing.mp3") })
    }
}

extension QueueInputTests {
    @Test("Names that are not UTF-8 keep their bytes: named, found in a directory, and listed in a playlist")
    func nonUTF8Names() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-raw-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let folder = Array(root.utf8) + Array("/caf".utf8) + [0xE9]
        #expect(try #require(TrackPath(bytes: folder)).withCString { mkdir($0, 0o755) } == 0)
        let names: [[UInt8]] = [
            Array("/2 ".utf8) + [0xFF, 0xFE] + Array(".mp3".utf8),
            Array("/10 ".utf8) + [0xC3] + Array(".mp3".utf8),
            Array("/1 ok.mp3".utf8),
        ]
        for name in names {
            let path = try #require(TrackPath(bytes: folder + name))
            let descriptor = path.withCString { open($0, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644) }
            #expect(descriptor >= 0)
            close(descriptor)
        }
        let listed = folder + names[0]
        let playlist = Array("#EXTM3U\n".utf8) + listed + Array("\nfile://".utf8)
            + Array(TrackPath(bytes: folder + names[1])!.fileURI.utf8.dropFirst("file://".count))
            + Array("\n".utf8)
        try Data(playlist).write(to: URL(fileURLWithPath: root + "/list.m3u"))

        let expanded = QueueInput.expand([TrackPath(bytes: folder)!, "list.m3u"], relativeTo: TrackPath(root))
        #expect(expanded.problems == [])
        #expect(expanded.paths.map(\.bytes) == [folder + names[2], folder + names[0], folder + names[1],
                                                  folder + names[0], folder + names[1]])
        let missing = QueueInput.expand([TrackPath(bytes: Array("gone".utf8) + [0xFF])!], relativeTo: TrackPath(root))
        #expect(missing.problems == [#"gone\xFF: no such file or directory"#])
    }
}
