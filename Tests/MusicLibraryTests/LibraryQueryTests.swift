// The query language on its own (parsing, the SQL filter and FTS5 expression it becomes), the music folder's default,
// and the database file's lifecycle: created, current, migrated, and set aside when damaged, foreign or newer.
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary

@Suite("Music library: query language and database file")
struct LibraryQueryTests {
    @Test("search, find and list parse their TAG VALUE pairs; tags in any case")
    func parsing() throws {
        #expect(try LibraryQuery.parse(verb: "search", ["Artist", "miles davis"]).get()
            == .search([LibraryTerm(.artist, "miles davis")]))
        #expect(try LibraryQuery.parse(verb: "findadd", ["album", "Kind of Blue", "track", "2"]).get()
            == .find([LibraryTerm(.album, "Kind of Blue"), LibraryTerm(.track, "2")]))
        #expect(try LibraryQuery.parse(verb: "list", ["album", "artist", "Miles Davis"]).get()
            == .list(.album, [LibraryTerm(.artist, "Miles Davis")]))
        #expect(try LibraryQuery.parse(verb: "list", ["AlbumArtist"]).get() == .list(.albumartist, []))
        #expect(try LibraryQuery.parse(verb: "find", ["album_artist", "X"]).get()
            == .find([LibraryTerm(.albumartist, "X")]))
    }

    @Test("malformed queries are refused with a reason that does not echo the user's text")
    func refusals() {
        func message(_ verb: String, _ words: [String]) -> String? {
            guard case .failure(let error) = LibraryQuery.parse(verb: verb, words) else { return nil }
            return error.message
        }
        #expect(message("search", []) == "search needs TAG VALUE pairs")
        #expect(message("find", ["artist"])?.hasPrefix("find: a TAG without a VALUE") == true)
        #expect(message("search", ["colour", "x"])?.hasPrefix("search: unknown tag 'colour'") == true)
        #expect(message("search", ["c/o\u{1}", "x"])?.contains("(the word given)") == true)
        #expect(message("search", ["any", " - & "]) == "search TEXT for any has no word in it")
        #expect(message("list", []) == "list needs a TAG")
        #expect(message("list", ["any"])?.hasPrefix("list cannot list 'any'") == true)
        #expect(message("play", ["x"]) != nil)
    }

    @Test("a search term becomes quoted prefixes, all required, in its column; quotes cannot break out")
    func matchExpressions() {
        #expect(LibraryFilter.matchExpression(LibraryTerm(.artist, "Miles  Davis"))
            == #"{artist} : ("Miles"* AND "Davis"*)"#)
        #expect(LibraryFilter.matchExpression(LibraryTerm(.any, #"a"b) OR c"#)) == #"("a""b)"* AND "OR"* AND "c"*)"#)
        #expect(LibraryQuery.words("  rock & roll - 1999 ") == ["rock", "roll", "1999"])
        // A quote with a combining mark after it is one Character; its quote is doubled all the same (scripts/fuzz).
        #expect(LibraryFilter.matchExpression(LibraryTerm(.any, "A(\"\u{0F83}x")) == "(\"A(\"\"\u{0F83}x\"*)")
        let filter = LibraryFilter(terms: [LibraryTerm(.track, "03"), LibraryTerm(.album, "X")], searching: true)
        #expect(filter.values == [.integer(3), .text(#"{album} : ("X"*)"#)])
        #expect(filter.condition.hasSuffix("track = ? AND id IN (SELECT rowid FROM search WHERE search MATCH ?)"))
        let exact = LibraryFilter(terms: [LibraryTerm(.any, "Jazz")], searching: false)
        #expect(exact.values == Array(repeating: .text("Jazz"), count: LibraryTag.textTags.count))
        // An empty value finds the tracks without the tag (MPD's `find album ""`), text or number; bound nothing.
        let untagged = LibraryFilter(terms: [LibraryTerm(.album, ""), LibraryTerm(.disc, "")], searching: false)
        #expect(untagged.condition.hasSuffix("(album IS NULL OR album = '') AND disc IS NULL"), "\(untagged.condition)")
        #expect(untagged.values.isEmpty)
    }

    @Test("the default music folder comes from user-dirs.dirs, with $HOME expanded; disabled means ~/Music")
    func musicFolder() throws {
        let text = "# written by xdg-user-dirs-update\nXDG_DESKTOP_DIR=\"$HOME/Desktop\"\n"
            + "XDG_MUSIC_DIR=\"$HOME/Musik/\"\n"
        #expect(LibraryLocations.musicFolder(in: text, home: "/home/u") == "/home/u/Musik")
        #expect(LibraryLocations.musicFolder(in: "XDG_MUSIC_DIR=\"/srv/music\"", home: "/home/u") == "/srv/music")
        #expect(LibraryLocations.musicFolder(in: "XDG_MUSIC_DIR=relative", home: "/h") == nil)
        let scratch = TestEnvironment.processTemporaryDirectory.appendingPathComponent("dirs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let environment = ["HOME": "/home/u", "XDG_CONFIG_HOME": scratch.path, "XDG_CACHE_HOME": "/c/"]
        #expect(LibraryLocations.defaultMusicDirectory(environment: environment) == "/home/u/Music")
        try Data("XDG_MUSIC_DIR=\"$HOME/\"\n".utf8).write(to: scratch.appendingPathComponent("user-dirs.dirs"))
        #expect(LibraryLocations.defaultMusicDirectory(environment: environment) == "/home/u/Music")
        try Data("XDG_MUSIC_DIR=\"$HOME/Tunes\"\n".utf8).write(to: scratch.appendingPathComponent("user-dirs.dirs"))
        #expect(LibraryLocations.defaultMusicDirectory(environment: environment) == "/home/u/Tunes")
        #expect(LibraryLocations.databasePath(environment: environment) == "/c/earshot/library.sqlite")
    }

    /// A fresh path for a database file.
    static func databasePath() -> String {
        TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("db-\(UUID().uuidString)/earshot/library.sqlite").path
    }

    /// The files in the database's folder.
    static func files(beside path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent).sorted()
    }

    @Test("a new file is created with the schema; opened again it is current")
    func createdThenCurrent() throws {
        let path = Self.databasePath()
        #expect(try LibraryDatabase(path: path).opening == .created)
        let again = try LibraryDatabase(path: path)
        #expect(again.opening == .current)
        #expect(try again.connection.integer("PRAGMA user_version") == LibraryDatabase.schemaVersion)
        #expect(try again.connection.textRowOf("PRAGMA journal_mode") == "wal")
    }

    @Test("a damaged file, another program's database and a newer schema are set aside and replaced",
          arguments: ["damaged", "foreign", "newer"])
    func setAside(kind: String) throws {
        let path = Self.databasePath()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        switch kind {
        case "damaged":
            // A valid header and then garbage: SQLite reads it as a database until a page is needed.
            _ = try LibraryDatabase(path: path)
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            for index in 100..<bytes.count { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
        case "foreign":
            let other = try SQLiteConnection(path: path)
            try other.execute("CREATE TABLE songs(name TEXT); INSERT INTO songs VALUES('x')")
        default:
            let newer = try SQLiteConnection(path: path)
            try newer.execute("PRAGMA application_id = \(LibraryDatabase.applicationID); PRAGMA user_version = 99; "
                + "CREATE TABLE future(x)")
        }
        let database = try LibraryDatabase(path: path)
        guard case .setAside(let reason) = database.opening else {
            Issue.record("\(kind): opened as \(database.opening)")
            return
        }
        #expect(!reason.isEmpty)
        #expect(try Self.files(beside: path).contains { $0.hasPrefix("library.sqlite.broken-") })
        #expect(try database.counts().tracks == 0)
        #expect(try LibraryDatabase(path: path).opening == .current)
    }

    @Test("a file of no SQLite at all (random bytes) is set aside too")
    func notADatabase() throws {
        let path = Self.databasePath()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 131) }).write(to: URL(fileURLWithPath: path))
        #expect(try LibraryDatabase(path: path).opening == .setAside(reason: "not a database"))
    }
}

extension SQLiteConnection {
    /// The first column of the one-row query `sql` as text.
    func textRowOf(_ sql: String) throws -> String? {
        try oneOffStatement(sql).textRow()
    }
}
