// The pure readers of what a radio server answers: the response's head, the verdict on its body, ICY metadata.
import Testing
@testable import NetworkStream

@Suite("Radio responses")
struct ResponseReadingTests {
    private func head(_ lines: [String]) -> ResponseHead {
        var head = ResponseHead()
        for line in lines { head.feed(line: Array((line + "\r\n").utf8)) }
        return head
    }

    @Test("an Icecast head: status, type without parameters, interval, the station's name")
    func icecastHead() {
        let read = head(["HTTP/1.0 200 OK", "Content-Type: audio/mpeg; charset=x", "icy-metaint:16000",
                         "icy-name:  Radio Eins ", "Server: Icecast 2.4.4", ""])
        #expect(read.status == 200 && read.contentType == "audio/mpeg" && read.stationName == "Radio Eins")
        #expect(read.metadataInterval == .success(16000) && read.isComplete && read.speaksICY)
        #expect(read.verdict(firstBytes: [0xFF, 0xFB, 0x90, 0x00]) == .success(.mp3))
    }

    @Test("SHOUTcast's ICY status line, and a Latin-1 station name")
    func shoutcastHead() {
        var read = ResponseHead()
        read.feed(line: Array("ICY 200 OK\r\n".utf8))
        read.feed(line: Array("icy-name:Caf".utf8) + [0xE9] + [13, 10])
        #expect(read.status == 200 && read.stationName == "Café" && read.speaksICY)
        #expect(read.verdict(firstBytes: Array("OggS".utf8)) == .success(.ogg))
    }

    @Test("a redirect's head is forgotten when the next response's status line comes")
    func redirectResets() {
        let read = head(["HTTP/1.1 302 Found", "Location: /b", "icy-name: old", "", "HTTP/1.1 200 OK",
                         "Content-Type: audio/flac"])
        #expect(read.status == 200 && read.stationName == nil && read.verdict(firstBytes: []) == .success(.flac))
        // A plain web server's response speaks no ICY (the redirect's `icy-name` is forgotten with its head); any
        // `icy-` or `ice-` header makes it a station's.
        #expect(!read.speaksICY)
        #expect(head(["HTTP/1.0 200 OK", "Content-Type: audio/ogg", "ice-audio-info: bitrate=128"]).speaksICY)
    }

    @Test("a page, a 404, a playlist, video and JSON are refused, each with its reason")
    func refusals() {
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: text/html"]).verdict(firstBytes: []) == .failure(.notAudio))
        #expect(head(["HTTP/1.1 404 Not Found", "Content-Type: audio/mpeg"]).verdict(firstBytes: [])
            == .failure(.httpStatus(404)))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: audio/x-mpegurl"]).verdict(firstBytes: [])
            == .failure(.playlist))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: audio/x-scpls"]).verdict(firstBytes: []) == .failure(.playlist))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: video/mp4"]).verdict(firstBytes: [])
            == .failure(.unsupportedType))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: audio/aac"]).verdict(firstBytes: [])
            == .failure(.unsupportedType))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: application/json"]).verdict(firstBytes: [])
            == .failure(.notAudio))
        // A page served as audio is still a page.
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: audio/mpeg"]).verdict(firstBytes: Array("<!DOCTYPE".utf8))
            == .failure(.notAudio))
        #expect(head(["HTTP/1.1 200 OK", "Content-Type: audio/mpeg"])
            .verdict(firstBytes: [0xEF, 0xBB, 0xBF] + Array("<html>".utf8)) == .failure(.notAudio))
        // A station's burst starts anywhere in its stream: audio whose first byte is `<` or `{` is still audio.
        let burst: [UInt8] = [0x3C, 0x91, 0x07, 0xFF, 0xFB, 0x90, 0x64, 0x00, 0x0F, 0xF0, 0x00, 0x00, 0x69, 0x00,
                              0x00, 0x08]
        let mpeg = head(["HTTP/1.1 200 OK", "Content-Type: audio/mpeg"])
        #expect(mpeg.verdict(firstBytes: burst) == .success(.mp3))
        #expect(mpeg.verdict(firstBytes: [0x20, 0x7B] + burst.dropFirst(2)) == .success(.mp3))
        #expect(head(["HTTP/1.1 200 OK"]).verdict(firstBytes: Array("#EXTM3U\n".utf8)) == .failure(.playlist))
        #expect(head(["HTTP/1.1 200 OK"]).verdict(firstBytes: Array("[playlist]\n".utf8)) == .failure(.playlist))
        #expect(head(["HTTP/1.1 200 OK"]).verdict(firstBytes: Array("fLaC".utf8)) == .success(.flac))
        #expect(head(["HTTP/1.1 200 OK"]).verdict(firstBytes: [1, 2, 3]) == .success(.unknown))
        #expect(head([]).verdict(firstBytes: []) == .failure(.httpStatus(0)))
    }

    @Test("a gigabyte between titles, a negative or non-numeric interval, are refused")
    func intervalClaims() {
        for claim in ["1073741824", "262145", "0", "-1", "12ab", "", "99999999999999999999"] {
            let read = head(["HTTP/1.0 200 OK", "Content-Type: audio/mpeg", "icy-metaint: \(claim)"])
            #expect(read.metadataInterval == .failure(.metadataIntervalOutOfRange), "claim \(claim)")
            #expect(read.verdict(firstBytes: []) == .failure(.metadataIntervalOutOfRange))
        }
        #expect(head(["HTTP/1.0 200 OK", "icy-metaint: 262144"]).metadataInterval == .success(262_144))
    }

    @Test("a head with too many lines or a line too long is refused")
    func headLimits() {
        let many = ["HTTP/1.1 200 OK"] + (0...ResponseHead.maximumLines).map { "X-Filler-\($0): y" }
        #expect(head(many).verdict(firstBytes: []) == .failure(.headTooLarge))
        var long = ResponseHead()
        long.feed(line: Array("HTTP/1.1 200 OK\r\n".utf8))
        long.feed(line: [UInt8](repeating: 0x41, count: ResponseHead.maximumLineBytes + 1))
        #expect(long.verdict(firstBytes: []) == .failure(.headTooLarge))
    }

    @Test("ICY blocks are split from the audio alike whatever the chunks, padding and empty blocks dropped")
    func demuxes() {
        var body: [UInt8] = []
        var audio: [UInt8] = []
        let titles = ["StreamTitle='A - One';StreamUrl='';", "", "StreamTitle='B - Two';"]
        for (index, title) in titles.enumerated() {
            let part = (0..<10).map { UInt8(index * 10 + $0) }
            audio += part
            body += part
            let bytes = Array(title.utf8)
            let blocks = (bytes.count + 15) / 16
            body.append(UInt8(blocks))
            body += bytes + [UInt8](repeating: 0, count: blocks * 16 - bytes.count)
        }
        body += [200, 201]
        audio += [200, 201]
        for chunk in [1, 3, 7, body.count] {
            var demuxer = ICYDemuxer(interval: 10)
            var gotAudio: [UInt8] = []
            var gotBlocks: [[UInt8]] = []
            var start = 0
            while start < body.count {
                let end = min(start + chunk, body.count)
                demuxer.feed(Array(body[start..<end]), audio: { gotAudio += $0 }, metadata: { gotBlocks.append($0) })
                start = end
            }
            #expect(gotAudio == audio, "chunk \(chunk)")
            #expect(gotBlocks.map { ICYMetadata(block: $0).streamTitle } == ["A - One", "B - Two"], "chunk \(chunk)")
        }
    }

    @Test("StreamTitle: quotes inside, no field, an empty title, Latin-1, the length limit")
    func titles() {
        #expect(ICYMetadata(block: Array("StreamTitle='Don't Stop';".utf8)).streamTitle == "Don't Stop")
        #expect(ICYMetadata(block: Array("StreamUrl='x';".utf8)).streamTitle == nil)
        #expect(ICYMetadata(block: Array("StreamTitle='';".utf8)).streamTitle == "")
        #expect(ICYMetadata(block: Array("StreamTitle='Caf".utf8) + [0xE9] + Array("'".utf8)).streamTitle == "Café")
        #expect(ICYMetadata(block: Array("StreamTitle='unterminated".utf8)).streamTitle == "unterminated")
        #expect(ICYMetadata(block: Array("XStreamTitle='no';".utf8)).streamTitle == nil)
        let long = ICYMetadata(block: Array(("StreamTitle='" + String(repeating: "é", count: 2000) + "';").utf8))
        #expect(long.streamTitle?.count == ICYMetadata.maximumTitleCharacters)
        #expect(ICYMetadata(block: Array("StreamTitle='a\u{1}b';".utf8)).streamTitle == "a b")
    }
}
