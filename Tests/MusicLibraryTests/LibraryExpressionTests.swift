// MPD's filter expressions (LibraryExpression): the grammar as MPD 0.23 reads it (quoting, escapes, nesting, white
// space, errors), what Earshot refuses that MPD has, and the expressions run on the generated collection with MPD's
// case rules (find exact, search folded) and its rule for a tag a track lacks.
import EarshotTestSupport
import Foundation
import Testing
@testable import MusicLibrary

@Suite("Music library: MPD filter expressions")
struct LibraryExpressionTests {
    static func parsed(_ text: String) -> LibraryExpression? { try? LibraryExpression.parse(text).get() }

    static func refusal(_ text: String) -> String? {
        guard case .failure(let error) = LibraryExpression.parse(text) else { return nil }
        return error.message
    }

    @Test("each operator, tag names in any case, `any`, `file`, `base`, both quotes and backslash escapes")
    func grammar() {
        #expect(Self.parsed("(artist == 'Miles Davis')") == .compare(.artist, .equals, "Miles Davis"))
        #expect(Self.parsed("(AlbumArtist != \"X\")") == .compare(.albumartist, .differs, "X"))
        #expect(Self.parsed("(title contains 'wha')") == .compare(.title, .contains, "wha"))
        #expect(Self.parsed("(title CONTAINS 'wha')") == .compare(.title, .contains, "wha"))
        #expect(Self.parsed("(title !contains 'wha')") == .compare(.title, .notContains, "wha"))
        #expect(Self.parsed("(album starts_with 'Kind')") == .compare(.album, .startsWith, "Kind"))
        #expect(Self.parsed("(any == 'Jazz')") == .compare(.any, .equals, "Jazz"))
        #expect(Self.parsed("(file == 'a/b.mp3')") == .compare(.file, .equals, "a/b.mp3"))
        #expect(Self.parsed("(filename == 'a')") == .compare(.file, .equals, "a"))
        #expect(Self.parsed("(base 'Miles Davis')") == .base("Miles Davis"))
        // A backslash takes the next character as it is: quotes of either kind, a backslash, any letter.
        #expect(Self.parsed(#"(title == 'Pharaoh\'s Dance')"#) == .compare(.title, .equals, "Pharaoh's Dance"))
        #expect(Self.parsed(#"(title == "say \"hi\"")"#) == .compare(.title, .equals, "say \"hi\""))
        #expect(Self.parsed(#"(title == 'a\\b\n')"#) == .compare(.title, .equals, #"a\bn"#))
        #expect(Self.parsed("(title == \"it's\")") == .compare(.title, .equals, "it's"))
        #expect(Self.parsed("(title == 'Ágætis \\é')") == .compare(.title, .equals, "Ágætis é"))
        #expect(Self.parsed("(title == '')") == .compare(.title, .equals, ""))
        // White space between tokens, and after the last ')' of a comparison.
        #expect(Self.parsed("(  artist\t==  'x'  ) ") == .compare(.artist, .equals, "x"))
    }

    @Test("`!` and `AND` nest; a group's ')' ends the expression exactly where MPD's does")
    func nesting() {
        let a = LibraryExpression.compare(.artist, .equals, "a")
        let b = LibraryExpression.compare(.album, .equals, "b")
        let c = LibraryExpression.compare(.genre, .contains, "c")
        #expect(Self.parsed("(!(artist == 'a'))") == .not(a))
        #expect(Self.parsed("( ! (artist == 'a') )") == .not(a))
        #expect(Self.parsed("((artist == 'a') AND (album == 'b'))") == .and([a, b]))
        #expect(Self.parsed("((artist == 'a') AND (album == 'b') AND (genre contains 'c'))") == .and([a, b, c]))
        #expect(Self.parsed("((artist == 'a') AND (!((album == 'b') AND (genre contains 'c'))))")
            == .and([a, .not(.and([b, c]))]))
        #expect(Self.parsed("((artist == 'a'))") == a)
        // MPD reads no white space after a group's ')': a trailing space is text after the expression.
        #expect(Self.refusal("((artist == 'a') AND (album == 'b')) ") == "unparsed text after the expression")
        let deep = String(repeating: "(!", count: 40) + "(artist == 'a')" + String(repeating: ")", count: 40)
        #expect(Self.refusal(deep)?.hasPrefix("the expression nests deeper than") == true)
        let fine = String(repeating: "(!", count: 20) + "(artist == 'a')" + String(repeating: ")", count: 20)
        #expect(Self.parsed(fine) != nil)
    }

    @Test("malformed expressions and what Earshot lacks are refused with a reason, never ignored")
    func refusals() {
        #expect(Self.refusal("artist == 'a'") == "'(' expected")
        #expect(Self.refusal("(artist == 'a'") == "')' expected")
        #expect(Self.refusal("(artist == 'a) ") == "the closing quote is missing")
        #expect(Self.refusal(#"(artist == 'a\"#) == "the closing quote is missing")
        #expect(Self.refusal("(artist == a)") == "a quoted value expected")
        #expect(Self.refusal("(artist = 'a')")?.hasPrefix("'==', '!=', 'contains'") == true)
        #expect(Self.refusal("(artist containsx 'a')")?.hasPrefix("'==', '!=', 'contains'") == true)
        #expect(Self.refusal("((artist == 'a') OR (album == 'b'))") == "'AND' expected")
        #expect(Self.refusal("((artist == 'a') and (album == 'b'))") == "'AND' expected")
        #expect(Self.refusal("(!artist == 'a')") == "'(' expected after '!'")
        #expect(Self.refusal("(artist == 'a') x") == "unparsed text after the expression")
        #expect(Self.refusal("()") == "a word expected")
        #expect(Self.refusal("(colour == 'red')")?.hasPrefix("unknown filter type 'colour'") == true)
        #expect(Self.refusal("(c/o == 'red')")?.hasPrefix("unknown filter type 'c'") == true)
        #expect(Self.refusal("(artist =~ 'M.*')") == "Earshot's library has no regular expressions (=~, !~)")
        #expect(Self.refusal("(artist !~ 'M.*')") == "Earshot's library has no regular expressions (=~, !~)")
        #expect(Self.refusal("(modified-since '2024-01-01')") == "Earshot's library cannot filter by modified-since")
        #expect(Self.refusal("(added-since '1')") == "Earshot's library cannot filter by added-since")
        #expect(Self.refusal("(AudioFormat == '44100:16:2')") == "Earshot's library cannot filter by AudioFormat")
        #expect(Self.refusal("(prio >= '3')") == "Earshot's library cannot filter by prio")
        #expect(Self.refusal("(title == '\(String(repeating: "x", count: 4096))')")
            == "a quoted value is longer than 4095 bytes")
        #expect(Self.parsed("(title == '\(String(repeating: "x", count: 4095))')") != nil)
        #expect(Self.refusal("(title == 'a\u{0}b')") == "the closing quote is missing")
    }

    @Test("queries take expressions beside pairs: find's pairs as ==, search's as contains; list's TAG first")
    func queries() throws {
        let miles = LibraryExpression.compare(.artist, .equals, "Miles Davis")
        #expect(try LibraryQuery.parse(verb: "find", ["(artist == 'Miles Davis')"]).get()
            == .filter(miles, folded: false, listing: nil))
        #expect(try LibraryQuery.parse(verb: "searchadd", ["(artist == 'Miles Davis')", "album", "brew"]).get()
            == .filter(.and([miles, .compare(.album, .contains, "brew")]), folded: true, listing: nil))
        #expect(try LibraryQuery.parse(verb: "find", ["date", "1959", "(artist == 'Miles Davis')"]).get()
            == .filter(.and([.compare(.date, .equals, "1959"), miles]), folded: false, listing: nil))
        #expect(try LibraryQuery.parse(verb: "list", ["Album", "(artist == 'Miles Davis')"]).get()
            == .filter(miles, folded: false, listing: .album))
        func message(_ verb: String, _ words: [String]) -> String? {
            guard case .failure(let error) = LibraryQuery.parse(verb: verb, words) else { return nil }
            return error.message
        }
        #expect(message("find", ["(artist == 'a')", "album"])?.hasPrefix("find: a TAG without a VALUE") == true)
        #expect(message("list", ["(artist == 'a')"])?.hasPrefix("list needs a TAG before its filter") == true)
        #expect(message("list", ["any", "(artist == 'a')"])?.hasPrefix("list needs a TAG before its filter") == true)
        #expect(message("find", ["(artist == 'a'"]) == "')' expected")
    }

    @Test("expressions on the collection: MPD's case rules, negation of a tag a track lacks, base, file, any")
    func onTheCollection() throws {
        let (root, path) = try LibraryScanTests.collection()
        let (database, _) = try LibraryScanTests.scanned(root, database: path)
        func titles(_ verb: String, _ words: String...) throws -> [String] {
            try database.tracks(LibraryQuery.parse(verb: verb, words).get()).compactMap(\.tags.title)
        }
        #expect(try titles("find", "(album == 'Kind of Blue')") == ["So What", "Freddie Freeloader"])
        #expect(try titles("find", "(album == 'kind of blue')") == [])
        #expect(try titles("search", "(album == 'kind of blue')") == ["So What", "Freddie Freeloader"])
        #expect(try titles("find", "(title contains 'Dance')") == ["Pharaoh's Dance"])
        #expect(try titles("find", "(title contains 'dance')") == [])
        #expect(try titles("search", "(title contains 'DANCE')") == ["Pharaoh's Dance"])
        #expect(try titles("find", "(album starts_with 'Bitches')") == ["Pharaoh's Dance", "Spanish Key"])
        #expect(try titles("find", "(album starts_with 'Brew')") == [])
        // A track without a composer is '' to the comparison: != matches it, == '' matches it (MPD's rule).
        #expect(try titles("find", "(composer != 'Miles Davis')")
            == ["Freddie Freeloader", "Pharaoh's Dance", "Spanish Key", "Svefn-g-englar"])
        #expect(try titles("find", "(composer == '')") == ["Freddie Freeloader", "Spanish Key"])
        #expect(try titles("find", "((artist == 'Miles Davis') AND (!(genre == 'Jazz')))")
            == ["Pharaoh's Dance", "Spanish Key"])
        #expect(try titles("find", "((date == '1970') AND (disc == '2'))") == ["Spanish Key"])
        #expect(try titles("find", "(base 'Sigur Rós')") == ["Svefn-g-englar"])
        #expect(try titles("find", "(base 'Sigur')") == [])
        // The first `base` every track must match names the folder that must exist (MPD's "No such directory").
        #expect(Self.parsed("((title == 'x') AND (base 'Sigur'))")?.firstBase == "Sigur")
        #expect(Self.parsed("(!(base 'Sigur'))")?.firstBase == nil)
        #expect(try database.hasFolder("Sigur Rós") && database.hasFolder("Miles Davis/1959 Kind of Blue"))
        #expect(try !database.hasFolder("Sigur") && !database.hasFolder("Miles Davis/1959"))
        #expect(try titles("find", "(file == 'Miles Davis/1959 Kind of Blue/01 So What.mp3')") == ["So What"])
        #expect(try titles("find", "(file contains 'Freeloader')") == ["Freddie Freeloader"])
        #expect(try titles("find", "(any == 'Joe Zawinul')") == ["Pharaoh's Dance"])
        #expect(try titles("find", "(any != 'Jazz')").count == 3)
        // Quotes and SQL in a value are values: bound, never pasted.
        #expect(try titles("find", #"(title == 'Pharaoh\'s Dance')"#) == ["Pharaoh's Dance"])
        #expect(try titles("find", "(title == \"x' OR 1=1 --\")") == [])
        // A TAG's values among the tracks an expression matches.
        let albums = try LibraryQuery.parse(verb: "list", ["album", "(genre starts_with 'Jazz')"]).get()
        guard case .filter(let expression, let folded, .album?) = albums else {
            Issue.record("list did not parse as a filter: \(albums)")
            return
        }
        #expect(try database.values(of: .album, where: LibraryFilter(expression: expression, folded: folded))
            == ["Kind of Blue", "Bitches Brew"])
    }
}
