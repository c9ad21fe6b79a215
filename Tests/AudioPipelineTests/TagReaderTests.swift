// Earshot's own tag readers (ID3v2Tags, FLACTags, OggTags): title, album artist, track number and the cover picture
// from files made by each format's own tools, read through the decoders as the player reads them; and the readers'
// pieces (base64, ID3 text encodings, Ogg packets spread over pages) on bytes built here.
import EarshotTestSupport
import Foundation
import Testing
@testable import AudioPipeline
import TrackPaths

@Suite("Tags and cover pictures")
struct TagReaderTests {
    /// Opens `url` as the player does and returns its metadata.
    func metadata(of url: URL) throws -> TrackMetadata {
        try AudioFileKind.openDecoder(path: TrackPath(url.path)).metadata
    }

    @Test("each format's tools write title, album artist, track number and a cover the decoders find",
          arguments: Fixtures.Format.allCases)
    func taggedByTheFormatsTools(format: Fixtures.Format) throws {
        let picture = Fixtures.fakePicture(count: 3_000, seed: 15 + UInt64(format.rawValue.count))
        let name = "tagged-\(format.rawValue).\(format.rawValue)"
        let url = try Fixtures.coverTagged(format, picture: picture, name: name,
                                           title: "Song ü", albumArtist: "Various Ärtists", trackNumber: "3/12")
        let tags = try metadata(of: url)
        #expect(tags.title == "Song ü")
        #expect(tags.albumArtist == "Various Ärtists")
        #expect(tags.trackNumber == 3)
        #expect(tags.coverProblem == nil)
        let cover = try #require(tags.cover, "no cover in the \(format.rawValue) file")
        #expect(cover.mimeType == "image/png")
        #expect(cover.byteCount == picture.count)
        #expect(cover.load() == picture, "the cover's bytes differ from the embedded picture")
        // Pictures stored as they are in the file are described by place, not held in memory.
        if format == .flac || format == .mp3 {
            guard case .inFile = cover.bytes else { Issue.record("\(format.rawValue): picture held in memory"); return }
        }
    }

    @Test("an Opus comment header spread over several Ogg pages gives its whole picture")
    func opusPictureOverManyPages() throws {
        let picture = Fixtures.fakePicture(count: 200_000, seed: 99)
        let url = try Fixtures.coverTagged(.opus, picture: picture, name: "tagged-big.opus", title: "Big",
                                           albumArtist: "Band", trackNumber: "12")
        let bytes = [UInt8](try Data(contentsOf: url))
        #expect(Fixtures.oggPageRanges(bytes).count > 4)
        let tags = try metadata(of: url)
        #expect(tags.cover?.load() == picture)
        #expect(tags.trackNumber == 12)
        #expect(tags.title == "Big")
    }

    @Test("base64 decodes strictly")
    func base64() {
        #expect(Base64.decode(Array("aGVsbG8=".utf8)) == Array("hello".utf8))
        #expect(Base64.decode(Array("aGVsbG8h".utf8)) == Array("hello!".utf8))
        #expect(Base64.decode(Array("aGVsbA==".utf8)) == Array("hell".utf8))
        #expect(Base64.decode(Array("aGVsbG8".utf8)) == nil)
        #expect(Base64.decode(Array("aGV*bG8=".utf8)) == nil)
        #expect(Base64.decode(Array("a===".utf8)) == nil)
    }

    @Test("ID3v2 text in Latin-1, UTF-16 with either byte order, UTF-16BE and UTF-8; track numbers")
    func id3TextEncodings() {
        #expect(ID3v2Tags.firstString([0xE9, 0x74, 0xE9, 0, 0x41][...], encoding: 0).text == "été")
        #expect(ID3v2Tags.firstString([0xFF, 0xFE, 0x41, 0, 0x42, 0, 0, 0][...], encoding: 1).text == "AB")
        #expect(ID3v2Tags.firstString([0xFE, 0xFF, 0, 0x41, 0, 0x42][...], encoding: 1).text == "AB")
        #expect(ID3v2Tags.firstString([0, 0x41, 0, 0][...], encoding: 2) == ("A", 4, true))
        #expect(ID3v2Tags.firstString(Array("Ü".utf8)[...], encoding: 3) == ("Ü", 2, false))
        #expect(TagText.trackNumber("3/12") == 3)
        #expect(TagText.trackNumber("07") == 7)
        #expect(TagText.trackNumber("x") == nil)
        #expect(TagText.trackNumber("0") == nil)
        #expect(ID3v2Tags.resynchronised([0xFF, 0x00, 0xE0, 0xFF, 0x00, 0x00]) == [0xFF, 0xE0, 0xFF, 0x00])
    }

    @Test("an ID3v2.4 tag built by hand: album artist, track number, and a picture in an unsynchronised frame")
    func id3v24ByHand() {
        func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
        func frame(_ id: String, _ body: [UInt8], flags: UInt8 = 0) -> [UInt8] {
            Array(id.utf8) + syncsafe(body.count) + [0, flags] + body
        }
        let picture: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]
        // Unsynchronisation puts a zero after every 0xFF: the reader takes it out again.
        let stored = ID3v2TagsTestBytes.unsynchronise([3] + Array("image/jpeg".utf8) + [0, 3, 0] + picture)
        let frames = frame("TPE2", [3] + Array("Album Band".utf8)) + frame("TRCK", [0] + Array("5/9".utf8))
            + frame("APIC", stored, flags: 0x02)
        let tag = Array("ID3".utf8) + [4, 0, 0] + syncsafe(frames.count) + frames
        let (tags, hasTag) = ID3v2Tags.read(TagSource(bytes: tag))
        #expect(hasTag)
        #expect(tags.albumArtist == "Album Band")
        #expect(tags.trackNumber == 5)
        #expect(tags.cover == CoverPicture(mimeType: "image/jpeg", byteCount: picture.count, bytes: .inline(picture)))
    }

    @Test("each format's tools write the library's tags: artist, album, genre, date, disc, composer, MusicBrainz ids",
          arguments: Fixtures.Format.allCases)
    func libraryTags(format: Fixtures.Format) throws {
        let wav = try Fixtures.toneWAV(frequency: 330, seconds: 0.5)
        let output = Fixtures.directory.appendingPathComponent("library-tags-\(format.rawValue).\(format.rawValue)")
        let tags: [String: String]
        if format == .mp3 {
            tags = [
                "TPE1": "Miles Dávis", "TALB": "Kind of Blue", "TCON": "(8)Jazz", "TYER": "1959", "TPOS": "2/3",
                "TCOM": "Bill Evans", "TRCK": "4/5", "TXXX": "MusicBrainz Album Id=album-id-1",
            ]
        } else {
            tags = [
                "ARTIST": "Miles Dávis", "ALBUM": "Kind of Blue", "GENRE": "Jazz", "DATE": "1959-08-17",
                "DISCNUMBER": "2/3", "COMPOSER": "Bill Evans", "TRACKNUMBER": "4", "MUSICBRAINZ_ALBUMID": "album-id-1",
                "MUSICBRAINZ_TRACKID": "track-id-1", "MUSICBRAINZ_ARTISTID": "artist-id-1",
            ]
        }
        try Fixtures.encode(wav, as: format, into: output, tags: tags)
        let decoder = try AudioFileKind.openDecoder(path: TrackPath(output.path))
        let read = decoder.metadata
        #expect(read.artist == "Miles Dávis")
        #expect(read.album == "Kind of Blue")
        #expect(read.genre == "Jazz")
        #expect(read.date == (format == .mp3 ? "1959" : "1959-08-17"))
        #expect(read.discNumber == 2)
        #expect(read.trackNumber == 4)
        #expect(read.composer == "Bill Evans")
        #expect(read.musicBrainz.album == "album-id-1")
        if format != .mp3 {
            #expect(read.musicBrainz.track == "track-id-1")
            #expect(read.musicBrainz.artist == "artist-id-1")
        }
        #expect(!read.hasEmbeddedCover)
        let seconds = Double(decoder.lengthFrames ?? 0) / Double(decoder.format.sampleRate)
        #expect(abs(seconds - 0.5) < 0.06, "length \(seconds) s")
    }

    @Test("ID3v2.3 by hand: a UFID frame gives the MusicBrainz recording, TXXX frames the other ids, ID3v2.2 frames")
    func musicBrainzFramesByHand() {
        func size(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        func frame(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + size(body.count) + [0, 0] + body }
        func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
        let frames = frame("UFID", Array("http://musicbrainz.org".utf8) + [0] + Array("rec-1".utf8))
            + frame("UFID", Array("http://example.org".utf8) + [0] + Array("other".utf8))
            + frame("TXXX", [0] + Array("MusicBrainz Artist Id".utf8) + [0] + Array("artist-1".utf8))
            + frame("TXXX", [3] + Array("MusicBrainz Album Artist Id".utf8) + [0] + Array("album-artist-1".utf8))
            + frame("TXXX", [0] + Array("Something Else".utf8) + [0] + Array("x".utf8))
            + frame("TCON", [0] + Array("(17)".utf8))
        let tag = Array("ID3".utf8) + [3, 0, 0] + syncsafe(frames.count) + frames
        let (tags, hasTag) = ID3v2Tags.read(TagSource(bytes: tag))
        #expect(hasTag)
        #expect(tags.musicBrainz == MusicBrainzIDs(track: "rec-1", artist: "artist-1", albumArtist: "album-artist-1"))
        // A bare reference is the genre it numbers.
        #expect(tags.genre == "Rock")
        let old = Array("TCO".utf8) + [0, 0, 6] + [0] + Array("Blues".utf8)
            + Array("TYE".utf8) + [0, 0, 5] + [0] + Array("1960".utf8)
        let (oldTags, _) = ID3v2Tags.read(TagSource(bytes: Array("ID3".utf8) + [2, 0, 0] + syncsafe(old.count) + old))
        #expect(oldTags.genre == "Blues")
        #expect(oldTags.date == "1960")
    }

    @Test("an ID3v2 TCON is the genre's name: references to ID3's list as it names them, a name after them as written",
          arguments: [("(13)", "Pop"), ("13", "Pop"), ("(13)Pop", "Pop"), ("(4)Eurodisco", "Eurodisco"),
                      ("(17)(13)", "Rock"), ("(131)", "Indie"), ("191", "Psybient"), ("(RX)", "Remix"),
                      ("((Foo) Bar", "(Foo) Bar"), ("Jazz", "Jazz"), ("(x)y", "(x)y"), ("1999", "1999"),
                      ("(200)", nil), ("255", nil)] as [(String, String?)])
    func genreReferences(written: String, genre: String?) {
        func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
        let body = [UInt8(3)] + Array(written.utf8)
        let frame = Array("TCON".utf8) + syncsafe(body.count) + [0, 0] + body
        let (tags, _) = ID3v2Tags.read(TagSource(bytes: Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame))
        #expect(tags.genre == genre, "TCON \(written)")
    }
}

/// Byte helpers for the hand-built tags.
enum ID3v2TagsTestBytes {
    /// `bytes` unsynchronised: a zero after every 0xFF.
    static func unsynchronise(_ bytes: [UInt8]) -> [UInt8] {
        bytes.flatMap { $0 == 0xFF ? [0xFF, 0] : [$0] }
    }
}
