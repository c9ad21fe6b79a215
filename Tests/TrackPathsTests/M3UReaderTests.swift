// M3UReader: a playlist's lines into entries, as bytes, in chunks, with bounded memory.
import Testing
@testable import TrackPaths

@Suite("M3U reader")
struct M3UReaderTests {
    @Test("comments, blanks, line ends, a byte-order mark and file:// lines give the names written")
    func readsEntries() {
        let text = "\u{FEFF}#EXTM3U\r\n#EXTINF:12,Title\r\n  a song.mp3\t\r\n\r\n/abs/b.mp3\r"
            + "file:///c%20d.mp3\nlast.mp3"
        let entries = M3UReader.entries(in: Array(text.utf8))
        #expect(entries == [.path("a song.mp3"), .path("/abs/b.mp3"), .path("/c d.mp3"), .path("last.mp3")])
    }

    @Test("fed one byte at a time, it reads what it reads from the whole text")
    func chunksDoNotMatter() {
        let text = Array("\u{FEFF}one.mp3\r\n# c\nfile:///t%C3%A9.mp3\r\nfile://bad%zz\n\u{0}x\n".utf8)
        var reader = M3UReader()
        var entries: [M3UEntry] = []
        for byte in text { reader.feed([byte]) { entries.append($0) } }
        reader.finish { entries.append($0) }
        #expect(entries == M3UReader.entries(in: text))
        // `file://bad%zz` names a host and no path.
        #expect(entries == [.path("one.mp3"), .path("/té.mp3"), .malformedURI, .nulByte])
    }

    @Test("NUL bytes, malformed and empty file:// lines, and over-long lines each get their own answer")
    func refusals() {
        let long = [UInt8](repeating: UInt8(ascii: "a"), count: M3UReader.maximumLineBytes + 1)
        let text = Array("file:///a%00b\nfile://\nfile:///%G1\n".utf8) + long + Array("\nok.mp3".utf8)
        // `%G1` is no escape: it stands for itself, as URLComponents read it.
        #expect(M3UReader.entries(in: text) == [.nulByte, .malformedURI, .path("/%G1"), .tooLong, .path("ok.mp3")])
    }

    @Test("every byte value but NUL and the line breaks names itself bare, and every byte value through file://")
    func everyByteValue() {
        for value in UInt8(1)...255 where value != UInt8(ascii: "\n") && value != UInt8(ascii: "\r") {
            let name: [UInt8] = Array("/m/x".utf8) + [value] + Array("y.mp3".utf8)
            #expect(M3UReader.entries(in: name) == [.path(TrackPath(bytes: name)!)], "byte \(value) bare")
            let escaped = TrackPath(bytes: name)!.fileURI
            #expect(M3UReader.entries(in: Array(escaped.utf8)) == [.path(TrackPath(bytes: name)!)],
                    "byte \(value) in \(escaped)")
        }
        // A Latin-1 name written raw inside a file:// line stays its bytes (no U+FFFD).
        let latin1: [UInt8] = Array("file:///caf".utf8) + [0xE9] + Array(".mp3".utf8)
        let latin1Path = TrackPath(bytes: Array("/caf".utf8) + [0xE9] + Array(".mp3".utf8))!
        #expect(M3UReader.entries(in: latin1) == [.path(latin1Path)])
        #expect(M3UReader.entries(in: Array("file:///a%00".utf8)) == [.nulByte])
    }

    @Test("PLS: only FileN= lines are entries, the key in any case, in the order they come; values read as M3U lines")
    func readsPLS() {
        let text = "\u{FEFF}[playlist]\r\nFile1=a song.mp3\r\nTitle1=A song\r\nLength1=-1\r\n; a comment\n"
            + "file2=/abs/b.mp3\nFILE10=file:///c%20d.mp3\nFile=nope.mp3\nFileX=nope.mp3\nFile3=\n"
            + "NumberOfEntries=3\nVersion=2\n  File4 = spaced.mp3"
        #expect(M3UReader.entries(in: Array(text.utf8), format: .pls)
                    == [.path("a song.mp3"), .path("/abs/b.mp3"), .path("/c d.mp3")])
        // The same text read as M3U takes every line but the comments.
        #expect(M3UReader.entries(in: Array("File1=a.mp3\n#x\n".utf8)) == [.path("File1=a.mp3")])
    }

    @Test("the playlist formats are told by the name's ending, in any case")
    func formatsByName() {
        #expect(PlaylistFormat.of("/m/a.m3u") == .m3u)
        #expect(PlaylistFormat.of("/m/a.M3U8") == .m3u)
        #expect(PlaylistFormat.of("b.Pls") == .pls)
        #expect(PlaylistFormat.of("/m/a.mp3") == nil)
        #expect(PlaylistFormat.of("/m/pls") == nil)
        #expect(PlaylistFormat.of("m3u") == nil)
    }
}
