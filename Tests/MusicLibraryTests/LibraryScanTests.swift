// The library on a generated collection (LibraryFixtures): a first scan and what it counts, the tags it stores
// checked against those written, the queries' results and orders, incremental scans, and the database file's
// lifecycle (created, migrated, set aside when damaged or foreign).
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: scanning and queries")
struct LibraryScanTests {
    /// A scratch folder with the collection in `music/` and the database path beside it.
    static func collection() throws -> (root: URL, database: String) {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("library-\(UUID().uuidString)", isDirectory: true)
        let root = try LibraryFixtures.make(in: scratch.appendingPathComponent("music", isDirectory: true))
        return (root, scratch.appendingPathComponent("cache/earshot/library.sqlite").path)
    }

    /// Scans `root` into a new database at `path`.
    static func scanned(_ root: URL, database path: String) throws -> (LibraryDatabase, ScanCounts) {
        let database = try LibraryDatabase(path: path)
        let counts = try LibraryScanner(roots: [TrackPath(root.path)]).scan(into: database)
        return (database, counts)
    }

    static func paths(_ entries: [LibraryEntry]) -> [String] {
        entries.map { String(decoding: $0.relativePath, as: UTF8.self) }
    }

    static func query(_ verb: String, _ words: String...) throws -> LibraryQuery {
        try LibraryQuery.parse(verb: verb, words).get()
    }

    @Test("a first scan takes every format's tracks and the playlist; skips hidden, text, loops; counts a broken file")
    func firstScan() throws {
        let (root, path) = try Self.collection()
        var reports: [(Int, Int)] = []
        let database = try LibraryDatabase(path: path)
        #expect(database.opening == .created)
        let counts = try LibraryScanner(roots: [TrackPath(root.path)])
            .scan(into: database, progress: { reports.append(($0, $1)) })
        #expect(counts.read == LibraryFixtures.tracks.count)
        #expect(counts.playlists == 1)
        #expect(counts.hidden == 1)
        #expect(counts.skipped["loop"] == 2, "\(counts.skipped)")
        #expect(counts.skippedTotal == 3, "\(counts.skipped)")
        #expect(counts.removed == 0 && counts.unchanged == 0)
        // To read: the five tracks, the playlist and the broken file; progress ends at that total.
        #expect(reports.first.map { [$0.0, $0.1] } == [0, 7])
        #expect(reports.last.map { [$0.0, $0.1] } == [7, 7])
        let stored = try database.counts()
        #expect(stored.tracks == LibraryFixtures.tracks.count && stored.playlists == 1 && stored.failed == 1)
    }

    @Test("the stored tags, length and rate are those written; tracks come in album, disc and track order")
    func storedTags() throws {
        let (root, path) = try Self.collection()
        let (database, _) = try Self.scanned(root, database: path)
        let everything = try database.tracks(.find([]))
        #expect(Self.paths(everything) == LibraryFixtures.tracksInOrder.map(\.path))
        for (entry, written) in zip(everything, LibraryFixtures.tracksInOrder) {
            #expect(entry.tags.title == written.title)
            #expect(entry.tags.artist == written.artist)
            #expect(entry.tags.album == written.album)
            #expect(entry.tags.date == written.date)
            #expect(entry.tags.genre == written.genre)
            #expect(entry.tags.trackNumber == written.track)
            #expect(entry.tags.discNumber == written.disc)
            #expect(entry.tags.composer == written.composer)
            #expect(abs((entry.durationSeconds ?? 0) - 0.4) < 0.06, "\(written.path): \(entry.durationSeconds ?? -1)")
            #expect(entry.sampleRate == (written.format == .opus ? 48_000 : 44_100))
            #expect(entry.absolute == TrackPath(root.appendingPathComponent(written.path).path))
        }
    }

    @Test("an MP3 libmpg123 converts is stored at its own rate and its length as played; MP3s are read again once")
    func mp3OwnRate() throws {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("library-\(UUID().uuidString)", isDirectory: true)
        let root = scratch.appendingPathComponent("music", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // 0.4 s each. lame writes the LAME tag (its delay and padding) only where a frame has room: not at 16 kHz and
        // 32 kbit/s, which plays its whole frames, 14 of 576 samples (mpg123 too).
        let files: [(name: String, rate: Int, bitRate: Int, seconds: Double)] = [
            ("16k.mp3", 16_000, 48, 0.4), ("22k.mp3", 22_050, 64, 0.4), ("16k-no-lame-tag.mp3", 16_000, 32, 0.504),
            ("44k.mp3", 44_100, 128, 0.4), ("48k.mp3", 48_000, 128, 0.4),
        ]
        for file in files {
            let made = try Fixtures.tone(seconds: 0.4, rate: file.rate, bitRate: file.bitRate)
            _ = try Fixtures.copy(made, to: root, named: file.name)
        }
        let path = scratch.appendingPathComponent("library.sqlite").path
        let (database, _) = try Self.scanned(root, database: path)
        func check(_ database: LibraryDatabase) throws {
            let entries = try database.tracks(.find([]))
            for file in files {
                let entry = try #require(entries.first { Self.paths([$0]) == [file.name] })
                #expect(entry.sampleRate == file.rate, "\(file.name): \(entry.sampleRate ?? -1)")
                #expect(abs((entry.durationSeconds ?? 0) - file.seconds) < 0.001,
                        "\(file.name): \(entry.durationSeconds ?? -1)")
            }
        }
        try check(database)
        // A database of schema 2 holds the converted rate: opened, its MP3s (only) are read at the next scan.
        try database.connection.execute("UPDATE files SET samplerate = 44100; PRAGMA user_version = 2")
        let older = try LibraryDatabase(path: path)
        #expect(older.opening == .migrated(from: 2))
        let counts = try LibraryScanner(roots: [TrackPath(root.path)]).scan(into: older)
        #expect(counts.read == files.count && counts.unchanged == 0, "\(counts)")
        try check(older)
    }

    @Test("readAll reads each track as a scan stores it, without a database (what `earshot decode --tags` prints)")
    func readAllAsScanned() throws {
        let (root, path) = try Self.collection()
        let (database, scanCounts) = try Self.scanned(root, database: path)
        let stored = try database.tracks(.find([]))
        var read: [LibraryEntry] = []
        let counts = LibraryScanner(roots: [TrackPath(root.path)]).readAll { read.append($0) }
        #expect(counts.read == scanCounts.read && counts.skipped == scanCounts.skipped, "\(counts)")
        let tracks = read.filter { $0.kind != .failed }
        #expect(Set(Self.paths(tracks)) == Set(Self.paths(stored)) && tracks.count == stored.count)
        for entry in tracks {
            guard let kept = stored.first(where: { $0.relativePath == entry.relativePath }) else { continue }
            var tags = entry.tags
            tags.replayGain = kept.tags.replayGain  // the database keeps whether there is a gain, not the gains
            #expect(tags == kept.tags && entry.hasCover == kept.hasCover, "\(Self.paths([entry]))")
            #expect(entry.durationSeconds == kept.durationSeconds && entry.sampleRate == kept.sampleRate)
        }
    }

    @Test("search folds case and accents, takes words in any order and as prefixes; `any` is every tag")
    func searchFolds() throws {
        let (root, path) = try Self.collection()
        let (database, _) = try Self.scanned(root, database: path)
        func titles(_ query: LibraryQuery) throws -> [String] { try database.tracks(query).compactMap(\.tags.title) }
        #expect(try titles(Self.query("search", "artist", "SIGUR ROS")) == ["Svefn-g-englar"])
        // Accents fold (á is a); a ligature is a letter of its own (æ is not "ae"), as in SQLite's unicode61.
        #expect(try titles(Self.query("search", "album", "AGÆTIS")) == ["Svefn-g-englar"])
        #expect(try titles(Self.query("search", "album", "agaetis")) == [])
        #expect(try titles(Self.query("search", "any", "englar ros")) == ["Svefn-g-englar"])
        #expect(try titles(Self.query("search", "title", "what so")) == ["So What"])
        #expect(try titles(Self.query("search", "composer", "jon thor")) == [])
        #expect(try titles(Self.query("search", "composer", "jón þór")) == ["Svefn-g-englar"])
        #expect(try titles(Self.query("search", "title", "fre")) == ["Freddie Freeloader"])
        #expect(try titles(Self.query("search", "any", "miles", "album", "brew")) == ["Pharaoh's Dance", "Spanish Key"])
        #expect(try titles(Self.query("search", "any", "\"quoted\" AND OR NEAR(")) == [])
        #expect(try titles(Self.query("search", "title", "pharaoh's")) == ["Pharaoh's Dance"])
    }

    @Test("find is exact; list gives albums in date order and other tags alphabetically")
    func findAndList() throws {
        let (root, path) = try Self.collection()
        let (database, _) = try Self.scanned(root, database: path)
        #expect(try Self.paths(database.tracks(Self.query("find", "album", "Kind of Blue")))
            == LibraryFixtures.tracksInOrder.filter { $0.album == "Kind of Blue" }.map(\.path))
        #expect(try database.tracks(Self.query("find", "album", "kind of blue")).isEmpty)
        #expect(try database.tracks(Self.query("find", "album", "Kind")).isEmpty)
        #expect(try database.tracks(Self.query("find", "disc", "2")).map(\.tags.title) == ["Spanish Key"])
        #expect(try database.tracks(Self.query("find", "any", "Joe Zawinul")).map(\.tags.title) == ["Pharaoh's Dance"])
        #expect(try database.values(of: .album, matching: []) == ["Kind of Blue", "Bitches Brew", "Ágætis byrjun"])
        #expect(try database.values(of: .album, matching: [LibraryTerm(.artist, "Miles Davis")])
            == ["Kind of Blue", "Bitches Brew"])
        #expect(try database.values(of: .artist, matching: []) == ["Miles Davis", "Sigur Rós"])
        #expect(try database.values(of: .genre, matching: [LibraryTerm(.date, "1970")]) == ["Jazz Fusion"])
        #expect(try database.values(of: .track, matching: [LibraryTerm(.album, "Kind of Blue")]) == ["1", "2"])
    }

    @Test("ls shows the folders and then the files of one folder")
    func listing() throws {
        let (root, path) = try Self.collection()
        let (database, _) = try Self.scanned(root, database: path)
        let top = try database.listing([])
        #expect(top.folders.map { String(decoding: $0, as: UTF8.self) } == ["Miles Davis", "Playlists", "Sigur Rós"])
        #expect(top.files.isEmpty)
        let miles = try database.listing(Array("Miles Davis".utf8))
        #expect(miles.folders.map { String(decoding: $0, as: UTF8.self) }
            == ["Miles Davis/1959 Kind of Blue", "Miles Davis/1970 Bitches Brew"])
        #expect(miles.files.isEmpty, "the broken file is not listed")
        #expect(Self.paths(try database.listing(Array("Playlists".utf8)).files) == [LibraryFixtures.playlistPath])
    }

    @Test("a second scan reads nothing unchanged; a changed, an added and a removed file are seen; update PATH")
    func incremental() throws {
        let (root, path) = try Self.collection()
        let (database, _) = try Self.scanned(root, database: path)
        let scanner = LibraryScanner(roots: [TrackPath(root.path)])
        let again = try scanner.scan(into: database)
        #expect(again.read == 0 && again.removed == 0)
        #expect(again.unchanged == LibraryFixtures.tracks.count + 2)
        // Replace one track's tags, remove another, copy a third under a new name.
        let first = LibraryFixtures.tracks[0]
        var retitled = first
        retitled.title = "So What (take 2)"
        let wav = try Fixtures.toneWAV(frequency: 523, seconds: 0.4)
        let firstURL = root.appendingPathComponent(first.path)
        try Fixtures.encode(wav, as: .mp3, into: firstURL, tags: LibraryFixtures.tags(of: retitled))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)],
                                              ofItemAtPath: firstURL.path)
        try FileManager.default.removeItem(at: root.appendingPathComponent(LibraryFixtures.tracks[1].path))
        try FileManager.default.copyItem(at: root.appendingPathComponent(LibraryFixtures.tracks[4].path),
                                         to: root.appendingPathComponent("Sigur Rós/Ágætis byrjun/02 copy.flac"))
        let changed = try scanner.scan(into: database)
        #expect(changed.read == 2 && changed.removed == 1, "\(changed)")
        #expect(try database.tracks(Self.query("find", "title", "So What (take 2)")).count == 1)
        #expect(try database.tracks(Self.query("find", "title", "Freddie Freeloader")).isEmpty)
        // An update of one folder reads only there, and removes only there.
        try FileManager.default.removeItem(at: root.appendingPathComponent("Sigur Rós/Ágætis byrjun/02 copy.flac"))
        try FileManager.default.removeItem(at: firstURL)
        let partial = try scanner.scan(into: database, below: TrackPath("Sigur Rós"))
        #expect(partial.removed == 1 && partial.read == 0, "\(partial)")
        #expect(try database.tracks(Self.query("find", "title", "So What (take 2)")).count == 1)
        let milesFolder = TrackPath(root.appendingPathComponent("Miles Davis").path)
        let absolute = try scanner.scan(into: database, below: milesFolder)
        #expect(absolute.removed == 1, "\(absolute)")
        // A rescan reads everything again.
        let rescan = try scanner.scan(into: database, rescan: true)
        #expect(rescan.read == LibraryFixtures.tracks.count - 2 && rescan.unchanged == 0, "\(rescan)")
    }

    @Test("a folder without permission is counted, not fatal", .enabled(if: getuid() != 0, "root reads any folder"))
    func unreadableFolder() throws {
        let (root, path) = try Self.collection()
        let closed = root.appendingPathComponent("Sigur Rós")
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: closed.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: closed.path) }
        let (_, counts) = try Self.scanned(root, database: path)
        #expect(counts.skipped["permission"] == 1, "\(counts.skipped)")
        #expect(counts.read == LibraryFixtures.tracks.count - 1)
    }
}
