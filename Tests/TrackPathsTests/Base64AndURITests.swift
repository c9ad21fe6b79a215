// Base64 and URIParts, which replaced Foundation's Data and URLComponents in the product: checked against them.
import Foundation
import Testing
@testable import TrackPaths

@Suite("Base64 and URI parts")
struct Base64AndURITests {
    @Test("Base64 writes what Data's base64EncodedString wrote, and reads it back, for every length of a block")
    func base64MatchesData() {
        let bytes: [UInt8] = [0x00, 0xFF, 0x2F, 0xC3, 0x10, 0x80, 0x7F, 0x3E, 0x3F, 0xFB]
        for count in 0...bytes.count {
            let prefix = Array(bytes.prefix(count))
            let text = Base64.encode(prefix)
            #expect(text == Data(prefix).base64EncodedString(), "\(count) bytes")
            #expect(Base64.decode(Array(text.utf8)) == prefix, "\(count) bytes")
        }
    }

    @Test("URIParts splits and refuses what URLComponents did", arguments: [
        "file:///home/a%20song.mp3", "file://localhost/x.mp3", "file://host.example/x", "FILE:///a", "http://x",
        "file:///a?q=1#f", "file://user@host:8080/p", "file:/a", "file:///%FF%fe", "mailto:a@b", "/no/scheme",
        "file:///a b", "file:///a%2", "file:///a%zz", "file:///%", "file:///100%25", "file:///é", "1http://x",
        "file://[::1]:80/a", "",
    ])
    func urlComponentsAgree(uri: String) {
        let ours = URIParts(uri)
        let theirs = URLComponents(string: uri)
        #expect((ours == nil) == (theirs == nil), "\(uri)")
        guard let ours, let theirs else { return }
        #expect(ours.scheme == theirs.scheme, "\(uri)")
        #expect(ours.host == theirs.percentEncodedHost, "\(uri)")
        // URLComponents escapes what the text left bare (`a b` becomes `a%20b`): the bytes named are the same.
        #expect(TrackPath.percentDecodedBytes(ours.percentEncodedPath)
            == TrackPath.percentDecodedBytes(theirs.percentEncodedPath), "\(uri)")
    }
}
