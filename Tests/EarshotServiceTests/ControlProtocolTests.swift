// The control protocol's parser and the queue input expansion: pure functions, tested without a socket.
import Foundation
import Testing
@testable import EarshotService

@Suite("Control requests")
struct ControlProtocolTests {
    func parse(_ text: String) -> Result<ControlRequest, ControlRequestError> {
        ControlRequest.parse(Array(text.utf8))
    }

    @Test("Every verb parses, and a request survives its own JSON line")
    func roundTrip() throws {
        let requests: [ControlRequest] = [
            .play, .pause, .toggle, .stop, .next, .previous, .seek(seconds: 30.5), .volume(percent: 80), .status,
            .events, .clear, .queue, .load(paths: ["/a b.mp3", "/ü.mp3"], play: true), .add(paths: ["/x.mp3"]),
            .load(paths: ["/y.mp3"], play: false),
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

    @Test("A long list of paths is cut into requests that each fit in a line, in order, losing none")
    func pathBatches() throws {
        // 3000 paths of 50 to 80 bytes with characters JSON escapes: about 200 KB, several lines' worth.
        let paths = (0..<3000).map { index in
            "/music/\"quoted\" \\ folder/" + String(repeating: "ü", count: index % 16) + "/track-\(index).mp3"
        }
        let batches = ControlRequest.pathBatches(paths)
        #expect(batches.count > 2)
        #expect(Array(batches.joined()) == paths)
        for batch in batches {
            for request in [ControlRequest.load(paths: batch, play: true), .add(paths: batch)] {
                let line = request.jsonLine
                #expect(line.utf8.count + 1 <= ControlRequest.maximumLineBytes)
                #expect(try parse(line).get() == request)
            }
        }
        // A few paths stay one request; no paths, no request.
        #expect(ControlRequest.pathBatches(["/a.mp3", "/b.mp3"]) == [["/a.mp3", "/b.mp3"]])
        #expect(ControlRequest.pathBatches([]).isEmpty)
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
        (#"{"command":"load","paths":[]}"#, "non-empty string array"),
        (#"{"command":"add","paths":"x"}"#, "non-empty string array"),
    ])
    func malformed(line: String, reason: String) {
        guard case .failure(let error) = parse(line) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(error.message.contains(reason), "\(error.message)")
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

        let expanded = QueueInput.expand(["album", "list.m3u", "nowhere.mp3", "album/1 one.mp3"], relativeTo: root)
        #expect(expanded.paths == [
            album + "/1 one.mp3", album + "/2 two.mp3", album + "/10 ten.mp3", album + "/disc 2/1 more.mp3",
            album + "/2 two.mp3", album + "/1 one.mp3",
        ])
        #expect(expanded.problems.count == 2)
        #expect(expanded.problems.contains { $0.hasPrefix("nowhere.mp3") })
        #expect(expanded.problems.contains { $0.hasPrefix("missing.mp3") })
    }
}
