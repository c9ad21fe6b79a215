// Issue 36's bad input, each a test on files built byte by byte: a zero-byte file of every kind, tags with NULs in
// their text, text in the wrong encoding, a 16 MB frame (ID3 APIC and FLAC PICTURE) and lying sizes (a tag, a frame,
// a comment count and a comment length that claim more than the file holds). Each file is either a track with what
// its tags say or a failure counted by kind, and the scan reads every other file; the tag readers read up to a lie.
@testable import AudioPipeline
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: bad input", .serialized)
struct LibraryBadInputTests {
    /// A new empty music folder in a scratch folder, and the database's path beside it.
    static func folder() throws -> (root: URL, database: String) {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("badinput-\(UUID().uuidString)", isDirectory: true)
        let root = scratch.appendingPathComponent("music", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return (root, scratch.appendingPathComponent("library.sqlite").path)
    }

    /// An MP3 and a FLAC file of a short tone with no tags: the audio the built files carry after their tags.
    static let audio: (mp3: [UInt8], flacStreamInfo: [UInt8], flacFrames: [UInt8]) = {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("badinput-audio-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        guard let wav = try? Fixtures.toneWAV(frequency: 440, seconds: 0.3) else { return ([], [], []) }
        let mp3URL = scratch.appendingPathComponent("plain.mp3")
        let flacURL = scratch.appendingPathComponent("plain.flac")
        try? Fixtures.encode(wav, as: .mp3, into: mp3URL)
        try? Fixtures.encode(wav, as: .flac, into: flacURL)
        var mp3 = (try? [UInt8](Data(contentsOf: mp3URL))) ?? []
        if mp3.starts(with: Array("ID3".utf8)), mp3.count > 10 {
            mp3.removeFirst(10 + mp3[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) })
        }
        let flac = (try? [UInt8](Data(contentsOf: flacURL))) ?? []
        // fLaC, STREAMINFO (kept, its last-block bit cleared), other blocks (dropped), then the frames.
        var offset = 4
        var streamInfo: [UInt8] = []
        while offset + 4 <= flac.count {
            let flags = flac[offset]
            let length = Int(flac[offset + 1]) << 16 | Int(flac[offset + 2]) << 8 | Int(flac[offset + 3])
            guard offset + 4 + length <= flac.count else { break }
            if flags & 0x7F == 0 { streamInfo = [0] + Array(flac[(offset + 1)..<(offset + 4 + length)]) }
            offset += 4 + length
            if flags & 0x80 != 0 { break }
        }
        return (mp3, streamInfo, Array(flac[min(offset, flac.count)...]))
    }()

    // MARK: Building tags

    static func syncsafe(_ value: Int) -> [UInt8] { [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) } }
    static func bigEndian(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8((value >> ($0 * 8)) & 0xFF) }
    }
    static func littleEndian32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8((value >> ($0 * 8)) & 0xFF) } }

    /// An ID3v2.4 frame (syncsafe size) or 2.3 frame (plain size).
    static func frame(_ id: String, _ body: [UInt8], version: UInt8 = 4, claimedSize: Int? = nil) -> [UInt8] {
        let size = claimedSize ?? body.count
        return Array(id.utf8) + (version == 4 ? syncsafe(size) : bigEndian(size, 4)) + [0, 0] + body
    }

    /// An ID3v2 tag around `frames`, claiming `claimedSize` when given, followed by the MP3 audio.
    static func mp3(version: UInt8 = 4, _ frames: [UInt8], claimedSize: Int? = nil) -> [UInt8] {
        Array("ID3".utf8) + [version, 0, 0] + syncsafe(claimedSize ?? frames.count) + frames + audio.mp3
    }

    /// A FLAC file: STREAMINFO, `blocks` (type, body, claimed length), the last marked last, then the frames.
    static func flac(_ blocks: [(type: UInt8, body: [UInt8], claimed: Int?)]) -> [UInt8] {
        var bytes = Array("fLaC".utf8) + audio.flacStreamInfo
        for (index, block) in blocks.enumerated() {
            let last: UInt8 = index == blocks.count - 1 ? 0x80 : 0
            bytes += [last | block.type] + bigEndian(block.claimed ?? block.body.count, 3) + block.body
        }
        return bytes + audio.flacFrames
    }

    /// A Vorbis comment block body: vendor, count (or `claimedCount`), each comment with its length (or a claimed one).
    static func comments(_ items: [(bytes: [UInt8], claimed: Int?)], claimedCount: Int? = nil) -> [UInt8] {
        var body = littleEndian32(4) + Array("test".utf8) + littleEndian32(claimedCount ?? items.count)
        for item in items { body += littleEndian32(item.claimed ?? item.bytes.count) + item.bytes }
        return body
    }

    static func comment(_ text: String) -> (bytes: [UInt8], claimed: Int?) { (Array(text.utf8), nil) }

    static func write(_ bytes: [UInt8], _ name: String, in root: URL) throws {
        try Data(bytes).write(to: root.appendingPathComponent(name))
    }

    /// Scans `root` into a new database and returns the counts and the tracks by file name.
    static func scan(_ root: URL, _ databasePath: String) throws -> (ScanCounts, [String: LibraryEntry]) {
        let database = try LibraryDatabase(path: databasePath)
        let counts = try LibraryScanner(roots: [TrackPath(root.path)]).scan(into: database)
        let tracks = try database.tracks(.find([]))
        return (counts, Dictionary(tracks.map { (String(decoding: $0.relativePath, as: UTF8.self), $0) },
                                   uniquingKeysWith: { first, _ in first }))
    }

    // MARK: Tests

    @Test("a zero-byte file of every kind is counted as empty, not read as audio; a good track beside it is read")
    func zeroBytes() throws {
        let (root, databasePath) = try Self.folder()
        for name in ["empty.mp3", "empty.flac", "empty.ogg", "empty.opus"] { try Self.write([], name, in: root) }
        try Self.write([], "empty.m3u", in: root)
        try Self.write(Self.mp3(Self.frame("TIT2", [3] + Array("Good".utf8))), "good.mp3", in: root)
        let (counts, tracks) = try Self.scan(root, databasePath)
        print("zero bytes: \(counts)")
        #expect(counts.skipped == ["empty": 4], "\(counts.skipped)")
        #expect(counts.read == 1 && counts.playlists == 1, "\(counts)")
        #expect(tracks["good.mp3"]?.tags.title == "Good")
        // Unchanged, they are not looked at again; filled, they are read.
        let database = try LibraryDatabase(path: databasePath)
        let again = try LibraryScanner(roots: [TrackPath(root.path)]).scan(into: database)
        #expect(again.unchanged == 6 && again.skippedTotal == 0, "\(again)")
    }

    @Test("tags with NULs: the text before the NUL is the value; a value that is only a NUL is no value")
    func nuls() throws {
        let (root, databasePath) = try Self.folder()
        try Self.write(Self.mp3(Self.frame("TIT2", [3] + Array("Title".utf8) + [0] + Array("Hidden".utf8))
            + Self.frame("TPE1", [0, 0] + Array("Ghost".utf8)) + Self.frame("TALB", [3] + Array("Album".utf8))),
            "nul.mp3", in: root)
        let vorbis = Self.comments([(Array("TITLE=Title".utf8) + [0] + Array("Hidden".utf8), nil),
                                    (Array("ARTIST=".utf8) + [0] + Array("Ghost".utf8), nil),
                                    Self.comment("ALBUM=Album")])
        try Self.write(Self.flac([(4, vorbis, nil)]), "nul.flac", in: root)
        let (counts, tracks) = try Self.scan(root, databasePath)
        #expect(counts.read == 2 && counts.skippedTotal == 0, "\(counts)")
        for name in ["nul.mp3", "nul.flac"] {
            let tags = try #require(tracks[name]?.tags, "\(name) in \(tracks.keys)")
            #expect(tags.title == "Title" && tags.artist == nil && tags.album == "Album", "\(name): \(tags)")
        }
    }

    @Test("text in the wrong encoding: invalid UTF-8 is read as Latin-1, bad UTF-16 and unknown encodings read")
    func wrongEncodings() throws {
        let (root, databasePath) = try Self.folder()
        // ID3v2.3: UTF-16 with a BOM and an odd byte; "UTF-8" that is Latin-1; encoding 9 (none such); UTF-16BE
        // with an unpaired surrogate.
        try Self.write(Self.mp3(version: 3,
            Self.frame("TIT2", [1, 0xFF, 0xFE, 0x41, 0, 0x42, 0, 0x43], version: 3)
            + Self.frame("TPE1", [3] + Array("Bj".utf8) + [0xF6] + Array("rk".utf8), version: 3)
            + Self.frame("TALB", [9] + Array("Caf".utf8) + [0xE9], version: 3)
            + Self.frame("TCON", [2, 0xD8, 0x00, 0x00, 0x41], version: 3)),
            "encodings.mp3", in: root)
        let vorbis = Self.comments([(Array("ARTIST=Bj".utf8) + [0xF6] + Array("rk".utf8), nil),
                                    (Array("TITLE=".utf8) + [0xC3, 0x28, 0xFF], nil), Self.comment("ALBUM=Café")])
        try Self.write(Self.flac([(4, vorbis, nil)]), "encodings.flac", in: root)
        let (counts, tracks) = try Self.scan(root, databasePath)
        #expect(counts.read == 2 && counts.skippedTotal == 0, "\(counts)")
        let mp3 = try #require(tracks["encodings.mp3"]?.tags)
        #expect(mp3.title == "AB" && mp3.artist == "Björk" && mp3.album == "Café", "\(mp3)")
        #expect(mp3.genre == "\u{FFFD}A", "\(mp3)")
        let flac = try #require(tracks["encodings.flac"]?.tags)
        #expect(flac.artist == "Björk" && flac.title == "Ã(ÿ" && flac.album == "Café", "\(flac)")
        // Found by search as spelled, accents folded.
        let database = try LibraryDatabase(path: databasePath)
        #expect(try database.tracks(.search([LibraryTerm(.artist, "bjork")])).count == 2)
    }

    @Test("a 16 MB frame and a 16 MB FLAC block are passed over by their length; the tags after them are read")
    func sixteenMegabytes() throws {
        let (root, databasePath) = try Self.folder()
        let big = [UInt8](repeating: 0xAB, count: 16 << 20)
        let apic = [0] + Array("image/jpeg".utf8) + [0, 3, 0] + big
        try Self.write(Self.mp3(Self.frame("TIT2", [3] + Array("Big".utf8)) + Self.frame("APIC", apic)
            + Self.frame("TXXX", [3] + Array("huge".utf8) + [0] + big) + Self.frame("TPE1", [3] + Array("After".utf8))),
            "big.mp3", in: root)
        // The largest FLAC block there is (2^24 - 1 bytes), a picture over the 8 MB limit.
        let picture = Self.bigEndian(3, 4) + Self.bigEndian(10, 4) + Array("image/jpeg".utf8) + Self.bigEndian(0, 4)
            + [UInt8](repeating: 0, count: 16)
        let pictureData = [UInt8](repeating: 0xCD, count: (1 << 24) - 1 - picture.count - 4)
        let block = picture + Self.bigEndian(pictureData.count, 4) + pictureData
        try Self.write(Self.flac([(6, block, nil), (4, Self.comments([Self.comment("TITLE=Big")]), nil)]),
                       "big.flac", in: root)
        let (counts, tracks) = try Self.scan(root, databasePath)
        #expect(counts.read == 2 && counts.skippedTotal == 0, "\(counts)")
        let mp3 = try #require(tracks["big.mp3"])
        // A cover is embedded, though too large to take: the library says there is one, the player shows none.
        #expect(mp3.tags.title == "Big" && mp3.tags.artist == "After" && mp3.hasCover, "\(mp3.tags)")
        #expect((mp3.durationSeconds ?? 0) > 0.2, "the audio after the tag is found")
        let flac = try #require(tracks["big.flac"])
        #expect(flac.tags.title == "Big" && flac.hasCover, "\(flac.tags)")
    }

    @Test("lying sizes: a tag, a frame, a block, a comment count and a comment length claiming too much")
    func lyingSizes() throws {
        let (root, databasePath) = try Self.folder()
        // A tag claiming 200 MB (the file is far shorter); its frames are read as far as they go.
        try Self.write(Self.mp3(Self.frame("TIT2", [3] + Array("Tag lies".utf8)), claimedSize: 200 << 20),
                       "tag.mp3", in: root)
        // A frame claiming more than its tag: the frames before it are read, nothing after.
        try Self.write(Self.mp3(Self.frame("TPE1", [3] + Array("Before".utf8))
            + Self.frame("TIT2", [3] + Array("Frame lies".utf8), claimedSize: 1 << 20)), "frame.mp3", in: root)
        // A comment count of 2^32 - 1 and a comment claiming 2 GB: the comments before it are read.
        let lyingComments = Self.comments([Self.comment("TITLE=Count lies"), (Array("ARTIST=x".utf8), 0x7FFF_FFFF)],
                                          claimedCount: 0xFFFF_FFFF)
        try Self.write(Self.flac([(4, lyingComments, nil)]), "comments.flac", in: root)
        // A block claiming 16 MB in a small file.
        try Self.write(Self.flac([(4, Self.comments([Self.comment("TITLE=Block lies")]), (1 << 24) - 1)]),
                       "block.flac", in: root)
        let (counts, tracks) = try Self.scan(root, databasePath)
        print("lying sizes: \(counts)")
        // The decoders refuse three of them as the player would (libFLAC the lying metadata, libmpg123 finds no audio
        // past a 200 MB tag); each is counted by kind, and the fourth is a track with the tags before the lie.
        #expect(counts.read == 1 && counts.skipped == ["badHeaders": 2, "noAudio": 1], "\(counts)")
        #expect(tracks["frame.mp3"]?.tags.artist == "Before")
        #expect(tracks["frame.mp3"]?.tags.title == nil)
        // The tag readers themselves read up to each lie and stop there.
        func bytes(_ name: String) throws -> TagSource {
            TagSource(bytes: try [UInt8](Data(contentsOf: root.appendingPathComponent(name))))
        }
        #expect(ID3v2Tags.read(try bytes("tag.mp3")).metadata.title == "Tag lies")
        let comments = FLACTags.read(try bytes("comments.flac"))
        #expect(comments.title == "Count lies" && comments.artist == nil, "\(comments)")
        #expect(FLACTags.read(try bytes("block.flac")).title == nil, "a block past the end is not read")
    }
}
