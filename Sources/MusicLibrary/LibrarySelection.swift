// LibrarySelection: the `sort TAG` and `window START:END` that may end MPD's `find`, `search`, `findadd` and
// `searchadd` (in that order: `window` last), taken off the words before the filter is parsed, and applied as MPD 0.23
// applies them: a stable sort by the tag's value ('' when a track lacks it, the artist for a missing album artist;
// track and disc as numbers; `-TAG` descending), then the window of the sorted list (of the library's order without
// a sort). Pure: tested and fuzzed with the query language.

/// How a query's tracks are ordered and cut.
public struct LibrarySelection: Equatable, Sendable {
    /// The tag to sort by; nil keeps the library's order.
    public var sort: LibraryTag?
    /// Whether the sort is descending (`sort -TAG`).
    public var descending = false
    /// The positions kept (`window START:END`; an open end is `Int.max`); nil keeps all.
    public var window: Range<Int>?

    /// No sort, no window.
    public init(sort: LibraryTag? = nil, descending: Bool = false, window: Range<Int>? = nil) {
        self.sort = sort
        self.descending = descending
        self.window = window
    }

    /// The verbs that take a selection.
    static let verbs: Set<String> = ["find", "search", "findadd", "searchadd"]

    /// `words` without a trailing `window RANGE` and `sort TAG`, and the selection they made.
    public static func split(verb: String, _ words: [String])
        -> Result<(words: [String], selection: LibrarySelection), LibraryQueryError> {
        guard verbs.contains(verb) else { return .success((words, LibrarySelection())) }
        var rest = words
        var selection = LibrarySelection()
        if rest.count >= 2, rest[rest.count - 2] == "window" {
            guard let window = range(rest[rest.count - 1]) else {
                return .failure(LibraryQueryError("\(verb): window takes START:END, START: or N"))
            }
            selection.window = window
            rest.removeLast(2)
        }
        if rest.count >= 2, rest[rest.count - 2] == "sort" {
            var name = Substring(rest[rest.count - 1])
            if name.first == "-" {
                selection.descending = true
                name = name.dropFirst()
            }
            if name == "Last-Modified" || name == "Added" || name.lowercased() == "prio" {
                return .failure(LibraryQueryError("\(verb): Earshot's library cannot sort by \(name)"))
            }
            guard let tag = LibraryTag.named(String(name)), tag != .any, tag != .file else {
                return .failure(LibraryQueryError("\(verb): Unknown sort tag \(LibraryQuery.shown(String(name)))"))
            }
            selection.sort = tag
            rest.removeLast(2)
        }
        return .success((rest, selection))
    }

    /// MPD's range: `START:END` (END above START), `START:` (to the end) or `N` (that one).
    static func range(_ text: String) -> Range<Int>? {
        func natural(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                return nil
            }
            return Int(digits)
        }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let start = natural(parts[0]) else { return nil }
        guard parts.count == 2 else { return start..<(start + 1) }
        if parts[1].isEmpty { return start..<Int.max }
        guard let end = natural(parts[1]), end >= start else { return nil }
        return start..<end
    }

    /// `items` sorted (stably) by `value(item, tag)` and cut to the window.
    public func apply<Item>(_ items: [Item], value: (Item, LibraryTag) -> String) -> [Item] {
        var sorted = items
        if let sort {
            let keyed = items.enumerated().map { (index: $0.offset, key: value($0.element, sort), item: $0.element) }
            let numeric = sort.isNumber
            sorted = keyed.sorted { first, second in
                let (a, b) = descending ? (second.key, first.key) : (first.key, second.key)
                let before = numeric ? (Int(a) ?? 0) < (Int(b) ?? 0) : Array(a.utf8).lexicographicallyPrecedes(b.utf8)
                let after = numeric ? (Int(b) ?? 0) < (Int(a) ?? 0) : Array(b.utf8).lexicographicallyPrecedes(a.utf8)
                return before || (!after && first.index < second.index)
            }.map(\.item)
        }
        guard let window else { return sorted }
        let lower = min(window.lowerBound, sorted.count)
        return Array(sorted[lower..<max(lower, min(window.upperBound, sorted.count))])
    }
}
