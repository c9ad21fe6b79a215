// LibraryQuery: the query language of mpc's `search`, `find` and `list`, parsed from a verb's words into a value,
// and that value turned into the SQL filter and the FTS5 match expression the database runs. Pure: no database, no
// I/O, so it is tested (and fuzzed) on its own.
//
//   search TAG TEXT [TAG TEXT...]   every word of TEXT, in any order, begins a word of TAG (case and accents folded
//                                   by the FTS5 tokenizer); TAG `any` is every tag
//   find TAG VALUE [TAG VALUE...]   TAG is exactly VALUE (`any`: one of the tags is)
//   list TAG [TAG VALUE...]         the distinct values of TAG among the tracks that match (find's rules)

/// A tag a query can name (mpc's names, lower case).
public enum LibraryTag: String, CaseIterable, Sendable {
    case any, artist, albumartist, album, title, genre, date, composer, track, disc, file
    case musicbrainzTrackID = "musicbrainz_trackid"
    case musicbrainzAlbumID = "musicbrainz_albumid"
    case musicbrainzArtistID = "musicbrainz_artistid"
    case musicbrainzAlbumArtistID = "musicbrainz_albumartistid"

    /// The tag named `name`, in any case; mpc's `AlbumArtist` and MPD's `album_artist` spelling too.
    public static func named(_ name: String) -> LibraryTag? {
        let lowered = name.lowercased()
        return LibraryTag(rawValue: lowered == "album_artist" ? "albumartist" : lowered)
    }

    /// The `files` column that holds the tag; nil for `any`.
    var column: String? {
        switch self {
        case .any: return nil
        case .file: return "path"
        case .musicbrainzTrackID: return "mb_track"
        case .musicbrainzAlbumID: return "mb_album"
        case .musicbrainzArtistID: return "mb_artist"
        case .musicbrainzAlbumArtistID: return "mb_albumartist"
        default: return rawValue
        }
    }

    /// The FTS5 column searched for the tag; nil where the tag is searched by value (numbers, identifiers).
    var searchColumn: String? {
        switch self {
        case .title, .artist, .albumartist, .album, .genre, .composer, .date, .file: return rawValue
        default: return nil
        }
    }

    /// Whether the tag is a number (track, disc): matched as one.
    var isNumber: Bool { self == .track || self == .disc }

    /// The tags `any` means for `find`: every text tag.
    static let textTags: [LibraryTag] = [.title, .artist, .albumartist, .album, .genre, .composer, .date]
}

/// One condition of a query: a tag and what it must be (find) or contain (search).
public struct LibraryTerm: Equatable, Sendable {
    /// The tag.
    public var tag: LibraryTag
    /// The value or the words, as given.
    public var value: String

    /// A term of `tag` and `value`.
    public init(_ tag: LibraryTag, _ value: String) {
        self.tag = tag
        self.value = value
    }
}

/// A parsed query.
public enum LibraryQuery: Equatable, Sendable {
    /// Tracks whose tags contain every word of each term (`search`).
    case search([LibraryTerm])
    /// Tracks whose tags are exactly each term's value (`find`).
    case find([LibraryTerm])
    /// The distinct values of a tag among the tracks matching the terms exactly (`list`).
    case list(LibraryTag, [LibraryTerm])
    /// The tracks an MPD filter expression matches (LibraryExpression.swift), compared without case when `folded`
    /// (`search`); with `listing`, the distinct values of that tag among them (`list`). Pairs given beside an
    /// expression join it as MPD reads them: `find`'s as `==`, `search`'s as `contains`.
    case filter(LibraryExpression, folded: Bool, listing: LibraryTag?)
    /// MPD's `list TAG [FILTER] group G...`: the distinct combinations of the groups' values and TAG's among the
    /// tracks the filter (find's rules) matches, the outermost group first (LibraryGrouping.swift).
    case grouped(LibraryTag, groups: [LibraryTag], LibraryExpression?)

    /// The verbs that take a query.
    public static let verbs = ["search", "find", "list", "searchadd", "findadd"]

    /// Parses the words after `verb` (`search`, `find`, `list`; `searchadd` and `findadd` as their queries).
    public static func parse(verb: String, _ words: [String]) -> Result<LibraryQuery, LibraryQueryError> {
        if verb == "list", let grouped = grouped(words) { return grouped }
        if let expression = words.firstIndex(where: { $0.hasPrefix("(") }) {
            return filter(verb: verb, words, firstExpression: expression)
        }
        switch verb {
        case "search", "searchadd", "find", "findadd":
            guard !words.isEmpty else { return .failure(LibraryQueryError("\(verb) needs TAG VALUE pairs")) }
            let terms: [LibraryTerm]
            switch pairs(words, verb: verb) {
            case .success(let found): terms = found
            case .failure(let error): return .failure(error)
            }
            if verb.hasPrefix("search") {
                for term in terms where term.tag.searchColumn != nil || term.tag == .any {
                    guard !LibraryQuery.words(term.value).isEmpty else {
                        return .failure(LibraryQueryError("search TEXT for \(term.tag.rawValue) has no word in it"))
                    }
                }
                return .success(.search(terms))
            }
            return .success(.find(terms))
        case "list":
            guard let first = words.first else { return .failure(LibraryQueryError("list needs a TAG")) }
            guard let tag = LibraryTag.named(first), tag != .any else {
                let known = tagNames(withAny: false)
                return .failure(LibraryQueryError("list cannot list \(shown(first)); tags: \(known)"))
            }
            switch pairs(Array(words.dropFirst()), verb: verb) {
            case .success(let terms): return .success(.list(tag, terms))
            case .failure(let error): return .failure(error)
            }
        default:
            return .failure(LibraryQueryError("\(shown(verb)) is not a query verb"))
        }
    }

    /// A query with a filter expression among its words (at `firstExpression`).
    private static func filter(verb: String, _ words: [String], firstExpression: Int) -> Result<LibraryQuery,
                                                                                                  LibraryQueryError> {
        var rest = words[...]
        var listing: LibraryTag?
        switch verb {
        case "search", "searchadd", "find", "findadd": break
        case "list":
            guard firstExpression > 0, let tag = LibraryTag.named(words[0]), tag != .any else {
                return .failure(LibraryQueryError("list needs a TAG before its filter; tags: "
                    + tagNames(withAny: false)))
            }
            listing = tag
            rest = rest.dropFirst()
        default: return .failure(LibraryQueryError("\(shown(verb)) is not a query verb"))
        }
        let folded = verb.hasPrefix("search")
        return expression(of: rest, verb: verb, folded: folded).map {
            .filter($0, folded: folded, listing: listing)
        }
    }

    /// The expression `words` make: filter expressions and pairs (`==`, or `contains` when `folded`) together.
    static func expression(of words: ArraySlice<String>, verb: String, folded: Bool)
        -> Result<LibraryExpression, LibraryQueryError> {
        var rest = words
        var items: [LibraryExpression] = []
        while let word = rest.first {
            if word.hasPrefix("(") {
                switch LibraryExpression.parse(word) {
                case .success(let expression): items.append(expression)
                case .failure(let error): return .failure(error)
                }
                rest = rest.dropFirst()
                continue
            }
            guard rest.count >= 2 else {
                return .failure(LibraryQueryError("\(verb): a TAG without a VALUE (\(shown(word)))"))
            }
            guard let tag = LibraryTag.named(word) else {
                return .failure(LibraryQueryError(
                    "\(verb): unknown tag \(shown(word)); tags: \(tagNames(withAny: true))"))
            }
            items.append(.compare(tag, folded ? .contains : .equals, rest.dropFirst().first!))
            rest = rest.dropFirst(2)
        }
        return .success(items.count == 1 ? items[0] : .and(items))
    }

    /// The words a search text is made of: split at white space, each keeping only words with a letter or digit in
    /// them (a lone "-" or "&" would be an empty FTS5 phrase).
    public static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { $0.isWhitespace }).map(String.init)
            .filter { $0.contains { $0.isLetter || $0.isNumber } }
    }

    /// `words` as TAG VALUE pairs.
    private static func pairs(_ words: [String], verb: String) -> Result<[LibraryTerm], LibraryQueryError> {
        guard words.count % 2 == 0 else {
            return .failure(LibraryQueryError("\(verb): a TAG without a VALUE (\(shown(words.last ?? "")))"))
        }
        var terms: [LibraryTerm] = []
        for index in stride(from: 0, to: words.count, by: 2) {
            guard let tag = LibraryTag.named(words[index]) else {
                return .failure(LibraryQueryError(
                    "\(verb): unknown tag \(shown(words[index])); tags: \(tagNames(withAny: true))"))
            }
            terms.append(LibraryTerm(tag, words[index + 1]))
        }
        return .success(terms)
    }

    /// A word quoted into a message when it is short and plain, else a placeholder: replies never echo user bytes.
    static func shown(_ word: String) -> String {
        word.count <= 32 && word.allSatisfy({ $0.isLetter || $0 == "_" }) ? "'\(word)'" : "(the word given)"
    }

    static func tagNames(withAny: Bool) -> String {
        LibraryTag.allCases.filter { withAny || $0 != .any }.map(\.rawValue).joined(separator: ", ")
    }
}

/// Why a query was refused, in words for the user.
public struct LibraryQueryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The explanation.
    public var message: String

    init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// The SQL a query becomes: a condition on `files` with its values bound in order, and an FTS5 match expression.
public struct LibraryFilter: Equatable, Sendable {
    /// A value bound to a `?` of the condition.
    public enum Value: Equatable, Sendable {
        case text(String)
        case integer(Int)
    }

    /// The condition (`1` when there is none), using `?` for each value.
    public var condition: String
    /// The values, in the order of the condition's `?`s.
    public var values: [Value]

    /// The filter of `terms`, exact (find, list) or by words (search).
    public init(terms: [LibraryTerm], searching: Bool) {
        var conditions = ["kind != 'playlist'", "kind != 'failed'"]
        var values: [Value] = []
        var matches: [String] = []
        for term in terms {
            if searching, term.tag == .any || term.tag.searchColumn != nil {
                matches.append(Self.matchExpression(term))
                continue
            }
            if term.value.isEmpty, !searching, term.tag != .file, term.tag != .any, let column = term.tag.column {
                // An empty value finds the tracks without the tag, as MPD's does (ncmpcpp's media library asks
                // `find artist X album ""` for an artist's tracks with no album).
                conditions.append(term.tag.isNumber ? "\(column) IS NULL" : "(\(column) IS NULL OR \(column) = '')")
            } else if term.tag.isNumber {
                // A number compares as one ("03" is 3); text that is no number matches nothing.
                conditions.append("\(term.tag.column!) = ?")
                values.append(.integer(Int(term.value.filter { !$0.isWhitespace }) ?? -1))
            } else if term.tag == .file {
                conditions.append("path = CAST(? AS BLOB)")
                values.append(.text(term.value))
            } else if let column = term.tag.column {
                conditions.append("\(column) = ?")
                values.append(.text(term.value))
            } else {
                let columns = LibraryTag.textTags.compactMap(\.column)
                conditions.append("(" + columns.map { "\($0) = ?" }.joined(separator: " OR ") + ")")
                values += Array(repeating: .text(term.value), count: columns.count)
            }
        }
        if !matches.isEmpty {
            conditions.append("id IN (SELECT rowid FROM search WHERE search MATCH ?)")
            values.append(.text(matches.joined(separator: " AND ")))
        }
        condition = conditions.joined(separator: " AND ")
        self.values = values
    }

    /// The FTS5 expression of one search term: each word a quoted prefix, all of them required, in the term's column
    /// (every column for `any`). Quotes inside a word are doubled, so no word can change the expression's shape.
    public static func matchExpression(_ term: LibraryTerm) -> String {
        let words = LibraryQuery.words(term.value).map { "\"" + $0.replacingAll("\"", with: "\"\"") + "\"*" }
        let all = "(" + words.joined(separator: " AND ") + ")"
        guard let column = term.tag.searchColumn else { return all }
        return "{\(column)} : \(all)"
    }
}

extension String {
    /// The string with every `target` scalar replaced by `replacement` (Foundation's replacingOccurrences). By scalar,
    /// not by Character: a quote followed by a combining mark is one Character, and its quote must still be doubled
    /// (found by scripts/fuzz).
    func replacingAll(_ target: Unicode.Scalar, with replacement: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == target { result.append(contentsOf: replacement.unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }
}
