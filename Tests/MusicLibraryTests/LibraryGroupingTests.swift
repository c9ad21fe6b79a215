// MPD's `list TAG [FILTER] group G...` (LibraryGrouping): the words read as MPD 0.23 reads them (the last group
// outermost, conflicts refused), and the rows on the generated collection in MPD's byte order.
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary

@Suite("Music library: list ... group")
struct LibraryGroupingTests {
    static func parsed(_ words: String...) -> Result<LibraryQuery, LibraryQueryError> {
        LibraryQuery.parse(verb: "list", words)
    }

    @Test("group pairs come off the end, the last outermost; the filter before them is find's")
    func parsing() throws {
        #expect(try Self.parsed("album", "group", "artist").get() == .grouped(.album, groups: [.artist], nil))
        #expect(try Self.parsed("Album", "(genre == 'Jazz')", "group", "date", "group", "AlbumArtist").get()
            == .grouped(.album, groups: [.albumartist, .date], .compare(.genre, .equals, "Jazz")))
        #expect(try Self.parsed("title", "artist", "Miles Davis", "album", "x", "group", "disc").get()
            == .grouped(.title, groups: [.disc], .and([.compare(.artist, .equals, "Miles Davis"),
                                                      .compare(.album, .equals, "x")])))
        // `Group` is no keyword (MPD's is case-sensitive): a pair of an unknown tag.
        #expect(throws: LibraryQueryError.self) { try Self.parsed("album", "Group", "artist").get() }
        func message(_ words: String...) -> String? {
            guard case .failure(let error) = LibraryQuery.parse(verb: "list", words) else { return nil }
            return error.message
        }
        #expect(message("album", "group", "album") == "Conflicting group")
        #expect(message("album", "group", "artist", "group", "artist") == "Conflicting group")
        #expect(message("album", "group", "colour")?.hasPrefix("list cannot group by 'colour'; groups:") == true)
        #expect(message("album", "group", "file")?.hasPrefix("list cannot group by 'file'") == true)
        #expect(message("any", "group", "artist") == "list needs a TAG to group (not any or file)")
        #expect(message("album", "(genre == 'Jazz'", "group", "artist") == "')' expected")
    }

    @Test("rows on the collection: distinct combinations in byte order; the artist stands in for an album artist")
    func rows() throws {
        let (root, path) = try LibraryScanTests.collection()
        let (database, _) = try LibraryScanTests.scanned(root, database: path)
        func rows(_ words: String...) throws -> [[String]] {
            guard case .grouped(let tag, let groups, let expression) = try LibraryQuery.parse(verb: "list", words).get()
            else { throw LibraryQueryError("not a grouped list") }
            let filter = expression.map { LibraryFilter(expression: $0, folded: false) }
                ?? LibraryFilter(terms: [], searching: false)
            return try database.groupedValues(of: tag, groups: groups, where: filter)
        }
        let albums = [["Miles Davis", "Bitches Brew"], ["Miles Davis", "Kind of Blue"], ["Sigur Rós", "Ágætis byrjun"]]
        #expect(try rows("album", "group", "artist") == albums)
        #expect(try rows("album", "group", "albumartist") == albums)
        #expect(try rows("title", "(album == 'Bitches Brew')", "group", "disc")
            == [["1", "Pharaoh's Dance"], ["2", "Spanish Key"]])
        // A track without a composer gives '' for it, as MPD's list does.
        #expect(try rows("title", "artist", "Miles Davis", "group", "composer", "group", "date") == [
            ["1959", "", "Freddie Freeloader"], ["1959", "Miles Davis", "So What"],
            ["1970", "", "Spanish Key"], ["1970", "Joe Zawinul", "Pharaoh's Dance"],
        ])
    }
}
