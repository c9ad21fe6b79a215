// `sort TAG` and `window START:END` on find and search (LibrarySelection): taken off the end of the words as MPD 0.23
// takes them, refused with a reason when malformed, and applied as a stable sort then a window.
import Testing
@testable import MusicLibrary

@Suite("Music library: sort and window")
struct LibrarySelectionTests {
    static func split(_ words: String...) -> Result<(words: [String], selection: LibrarySelection), LibraryQueryError> {
        LibrarySelection.split(verb: "find", words)
    }

    @Test("sort and window come off the end (window last); list and other verbs keep their words")
    func splitting() throws {
        let both = try Self.split("(artist == 'a')", "sort", "-Title", "window", "2:5").get()
        #expect(both.words == ["(artist == 'a')"])
        #expect(both.selection == LibrarySelection(sort: .title, descending: true, window: 2..<5))
        #expect(try Self.split("artist", "a", "sort", "track").get().selection == LibrarySelection(sort: .track))
        #expect(try Self.split("artist", "a", "window", "3").get().selection == LibrarySelection(window: 3..<4))
        #expect(try Self.split("artist", "a", "window", "3:").get().selection == LibrarySelection(window: 3..<Int.max))
        // `window` before `sort` is not MPD's order: `window` stays a word of the filter.
        #expect(try Self.split("artist", "a", "window", "1:2", "sort", "title").get().words
            == ["artist", "a", "window", "1:2"])
        #expect(try LibrarySelection.split(verb: "list", ["album", "sort", "title"]).get().words
            == ["album", "sort", "title"])
        func message(_ words: String...) -> String? {
            guard case .failure(let error) = LibrarySelection.split(verb: "find", words) else { return nil }
            return error.message
        }
        #expect(message("artist", "a", "sort", "colour") == "find: Unknown sort tag 'colour'")
        #expect(message("artist", "a", "sort", "file") == "find: Unknown sort tag 'file'")
        #expect(message("artist", "a", "sort", "Last-Modified")
            == "find: Earshot's library cannot sort by Last-Modified")
        for bad in ["3:1", "x", "-1:2", "1:x", "", ":3", "99999999999"] {
            #expect(message("artist", "a", "window", bad) == "find: window takes START:END, START: or N", "\(bad)")
        }
    }

    @Test("a stable sort by bytes (numbers as numbers), descending keeps ties in order, then the window")
    func applying() {
        let items = [("b", "10"), ("a", "9"), ("B", "2"), ("a", "1"), ("", "")]
        func value(_ item: (String, String), _ tag: LibraryTag) -> String { tag == .track ? item.1 : item.0 }
        func applied(_ selection: LibrarySelection) -> [String] {
            selection.apply(items, value: value).map { $0.0 + "/" + $0.1 }
        }
        #expect(applied(LibrarySelection(sort: .title)) == ["/", "B/2", "a/9", "a/1", "b/10"])
        #expect(applied(LibrarySelection(sort: .title, descending: true)) == ["b/10", "a/9", "a/1", "B/2", "/"])
        #expect(applied(LibrarySelection(sort: .track)) == ["/", "a/1", "B/2", "a/9", "b/10"])
        #expect(applied(LibrarySelection(sort: .title, window: 1..<3)) == ["B/2", "a/9"])
        #expect(applied(LibrarySelection(window: 3..<Int.max)) == ["a/1", "/"])
        #expect(applied(LibrarySelection(window: 9..<12)) == [])
    }
}
