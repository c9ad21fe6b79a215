// TrackPath: paths as bytes, their escaped display text and their lossless JSON form.
import Foundation
import Testing
@testable import TrackPaths

@Suite("Track paths")
struct TrackPathTests {
    @Test("the display text is valid UTF-8 on one line: bad bytes and controls as \\xHH, a backslash doubled")
    func displayText() throws {
        let raw = try #require(TrackPath(bytes: Array("/a/".utf8) + [0xFF, 0xFE] + Array("-é-".utf8) + [0xE9]
            + Array("\n\u{1B}[31m\\x.mp3".utf8) + [0xC3]))
        #expect(raw.displayText == #"/a/\xFF\xFE-é-\xE9\x0A\x1B[31m\\x.mp3\xC3"#)
        #expect(raw.string == nil)
        #expect(TrackPath("/ü/日本.mp3").displayText == "/ü/日本.mp3")
        #expect(TrackPath("/ü.mp3").string == "/ü.mp3")
        // A byte that starts a sequence which then breaks: only the broken prefix is escaped.
        #expect(TrackPath(bytes: [0x2F, 0xE2, 0x82, 0x41])?.displayText == #"/\xE2\x82A"#)
    }

    @Test("no empty path and no NUL byte")
    func refusals() {
        #expect(TrackPath(bytes: []) == nil)
        #expect(TrackPath(bytes: [0x2F, 0x00, 0x61]) == nil)
        #expect(TrackPath(jsonValue: "") == nil)
        #expect(TrackPath(jsonValue: "/a\u{0}b") == nil)
        #expect(TrackPath(jsonValue: ["base64": "AA=="]) == nil)
        #expect(TrackPath(jsonValue: 3) == nil)
    }

    @Test("the JSON form round-trips every byte, through JSONSerialization and through Codable")
    func jsonRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        var paths: [TrackPath] = ["/plain.mp3", "/ünï cödé/\u{1F3B5}.mp3"]
        for _ in 0..<200 {
            let count = Int.random(in: 1...40, using: &generator)
            paths.append(try #require(TrackPath(bytes: (0..<count).map { _ in UInt8.random(in: 1...255) })))
        }
        for path in paths {
            let line = try JSONSerialization.data(withJSONObject: [path.jsonValue])
            let read = try #require(try JSONSerialization.jsonObject(with: line) as? [Any])
            #expect(TrackPath(jsonValue: read[0]) == path)
            let coded = try JSONDecoder().decode([TrackPath].self, from: try JSONEncoder().encode([path]))
            #expect(coded == [path])
            // UTF-8 paths keep the plain-string form, in both encoders.
            #expect((read[0] is String) == (path.string != nil))
        }
    }
}
