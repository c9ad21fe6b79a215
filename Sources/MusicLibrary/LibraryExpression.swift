// LibraryExpression: MPD's filter expressions (`(artist == 'Miles Davis')`), parsed as MPD 0.23 parses them, and the
// SQL condition they become. Pure, like LibraryQuery: one parser for every front-end (mpc's and the MPD protocol's
// `find "(…)"`, `earshot find "(…)"`), tested and fuzzed on its own.
//
//   EXPRESSION := '(' TAG OPERATOR QUOTED ')'        TAG: a tag name in any case, `any`, `file`
//              |  '(' 'base' QUOTED ')'              the tracks in the folder QUOTED (below the music folder)
//              |  '(' '!' EXPRESSION ')'             the tracks EXPRESSION does not match
//              |  '(' EXPRESSION 'AND' EXPRESSION ['AND' EXPRESSION...] ')'
//   OPERATOR   := '==' | '!=' | 'contains' | '!contains' | 'starts_with'
//   QUOTED     := a string in ' or ", where a backslash takes the next character as it is
//
// White space may follow each token, as MPD allows it (and not where MPD does not: after a group's ')'). What MPD has
// and Earshot does not (`=~` regular expressions, `modified-since`, `added-since`, `AudioFormat`, `prio`, tags the
// library does not keep) is refused with the reason, never ignored.

/// How a tag's value is compared with the expression's.
public enum LibraryComparison: String, Equatable, Sendable {
    case equals = "=="
    case differs = "!="
    case contains
    case notContains = "!contains"
    case startsWith = "starts_with"

    /// Whether the comparison is the negation of a positive one (MPD: a track without the tag matches it).
    var isNegated: Bool { self == .differs || self == .notContains }
}

/// A parsed filter expression.
public indirect enum LibraryExpression: Equatable, Sendable {
    /// The tag compared with a value.
    case compare(LibraryTag, LibraryComparison, String)
    /// The tracks below a folder of the library (its path relative to the music folder).
    case base(String)
    /// The tracks the inner expression does not match.
    case not(LibraryExpression)
    /// The tracks every expression matches.
    case and([LibraryExpression])

    /// The folder of the first `base` among the expressions every track must match (MPD's selection folder, which
    /// must exist), or nil.
    public var firstBase: String? {
        switch self {
        case .base(let folder): return folder
        case .and(let items): return items.lazy.compactMap(\.firstBase).first
        default: return nil
        }
    }

    /// The longest quoted value (MPD's own limit) and the deepest nesting accepted.
    static let longestValue = 4095
    static let deepestNesting = 32

    /// Parses one expression, the whole of `text`.
    public static func parse(_ text: String) -> Result<LibraryExpression, LibraryQueryError> {
        var parser = ExpressionParser(bytes: Array(text.utf8))
        guard parser.peek == UInt8(ascii: "(") else { return .failure(LibraryQueryError("'(' expected")) }
        do throws(LibraryQueryError) {
            let expression = try parser.expression(depth: 0)
            guard parser.atEnd else { throw LibraryQueryError("unparsed text after the expression") }
            return .success(expression)
        } catch {
            return .failure(error)
        }
    }
}

/// The parser's position in the expression's UTF-8 bytes.
private struct ExpressionParser {
    let bytes: [UInt8]
    var index = 0

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }
    var atEnd: Bool { index >= bytes.count }

    private func byte(at offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }

    /// Skips white space (MPD's: the control characters and space).
    mutating func skipSpace() {
        while let byte = peek, byte <= 0x20 { index += 1 }
    }

    /// One parenthesised expression, the parser at its '('.
    mutating func expression(depth: Int) throws(LibraryQueryError) -> LibraryExpression {
        guard depth < LibraryExpression.deepestNesting else {
            throw LibraryQueryError("the expression nests deeper than \(LibraryExpression.deepestNesting)")
        }
        index += 1
        skipSpace()
        if peek == UInt8(ascii: "(") {
            let first = try expression(depth: depth + 1)
            if peek == UInt8(ascii: ")") {
                index += 1
                return first
            }
            var items = [first]
            while true {
                guard try word() == "AND" else { throw LibraryQueryError("'AND' expected") }
                guard peek == UInt8(ascii: "(") else { throw LibraryQueryError("'(' expected") }
                items.append(try expression(depth: depth + 1))
                if peek == UInt8(ascii: ")") {
                    index += 1
                    return .and(items)
                }
            }
        }
        if peek == UInt8(ascii: "!") {
            index += 1
            skipSpace()
            guard peek == UInt8(ascii: "(") else { throw LibraryQueryError("'(' expected after '!'") }
            let inner = try expression(depth: depth + 1)
            try close()
            return .not(inner)
        }
        let name = try word()
        switch name {
        case "base":
            let folder = try quoted()
            try close()
            return .base(folder)
        case "modified-since", "added-since":
            throw LibraryQueryError("Earshot's library cannot filter by \(name)")
        default:
            break
        }
        let lowered = name.lowercased()
        if lowered == "audioformat" || lowered == "prio" {
            throw LibraryQueryError("Earshot's library cannot filter by \(name)")
        }
        guard let tag = lowered == "filename" ? .file : LibraryTag.named(name) else {
            throw LibraryQueryError("unknown filter type \(LibraryQuery.shown(name)); tags: "
                + LibraryQuery.tagNames(withAny: true))
        }
        let comparison = try comparison()
        let value = try quoted()
        try close()
        return .compare(tag, comparison, value)
    }

    /// A tag name or keyword (letters, '_' and '-'), and the white space after it.
    mutating func word() throws(LibraryQueryError) -> String {
        let start = index
        while let byte = peek, isWordByte(byte) { index += 1 }
        guard index > start else { throw LibraryQueryError("a word expected") }
        let found = String(decoding: bytes[start..<index], as: UTF8.self)
        skipSpace()
        return found
    }

    private func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2D
    }

    /// The operator, and the white space after it.
    mutating func comparison() throws(LibraryQueryError) -> LibraryComparison {
        for (keyword, comparison) in [("contains", LibraryComparison.contains), ("!contains", .notContains),
                                      ("starts_with", .startsWith)] where hasKeyword(keyword) {
            index += keyword.utf8.count + 1
            skipSpace()
            return comparison
        }
        let pair = (byte(at: 0), byte(at: 1))
        if pair.1 == UInt8(ascii: "~"), pair.0 == UInt8(ascii: "=") || pair.0 == UInt8(ascii: "!") {
            throw LibraryQueryError("Earshot's library has no regular expressions (=~, !~)")
        }
        guard pair.1 == UInt8(ascii: "="), pair.0 == UInt8(ascii: "=") || pair.0 == UInt8(ascii: "!") else {
            throw LibraryQueryError("'==', '!=', 'contains', '!contains' or 'starts_with' expected")
        }
        index += 2
        skipSpace()
        return pair.0 == UInt8(ascii: "=") ? .equals : .differs
    }

    /// Whether `keyword` (in any case) and a space come next, as MPD requires of `contains `.
    private func hasKeyword(_ keyword: String) -> Bool {
        let wanted = Array(keyword.utf8)
        guard index + wanted.count < bytes.count, bytes[index + wanted.count] == 0x20 else { return false }
        return zip(bytes[index...], wanted).allSatisfy { given, expected in
            given == expected || (given >= 0x41 && given <= 0x5A && given + 0x20 == expected)
        }
    }

    /// A quoted value (a backslash takes the next byte as it is), and the white space after it.
    mutating func quoted() throws(LibraryQueryError) -> String {
        guard let quote = peek, quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"") else {
            throw LibraryQueryError("a quoted value expected")
        }
        index += 1
        var value: [UInt8] = []
        while peek != quote {
            if peek == UInt8(ascii: "\\") { index += 1 }
            guard let byte = peek, byte != 0 else { throw LibraryQueryError("the closing quote is missing") }
            value.append(byte)
            index += 1
            guard value.count <= LibraryExpression.longestValue else {
                throw LibraryQueryError("a quoted value is longer than \(LibraryExpression.longestValue) bytes")
            }
        }
        index += 1
        skipSpace()
        return String(decoding: value, as: UTF8.self)
    }

    /// The ')' that ends an expression, and the white space after it.
    mutating func close() throws(LibraryQueryError) {
        guard peek == UInt8(ascii: ")") else { throw LibraryQueryError("')' expected") }
        index += 1
        skipSpace()
    }
}

extension LibraryFilter {
    /// The filter of `expression`: `folded` compares without case (MPD's `search`), else exactly (`find`, `list`).
    /// Folding is SQLite's `lower`, ASCII only (docs/mpd.md's divergences). Every value is bound, never pasted.
    public init(expression: LibraryExpression, folded: Bool) {
        var values: [Value] = []
        let condition = Self.condition(expression, folded: folded, values: &values)
        self.condition = "kind != 'playlist' AND kind != 'failed' AND " + condition
        self.values = values
    }

    private static func condition(_ expression: LibraryExpression, folded: Bool, values: inout [Value]) -> String {
        switch expression {
        case .and(let items):
            return "(" + items.map { condition($0, folded: folded, values: &values) }.joined(separator: " AND ") + ")"
        case .not(let inner):
            return "NOT (" + condition(inner, folded: folded, values: &values) + ")"
        case .base(let folder):
            // The folder itself or a path below it, compared as bytes (the paths are kept as BLOBs).
            let prefix = folder + "/"
            values += [.text(folder), .integer(prefix.utf8.count), .text(prefix)]
            return "(path = CAST(? AS BLOB) OR substr(path, 1, ?) = CAST(? AS BLOB))"
        case .compare(let tag, let comparison, let value):
            // A tag a track lacks is '' to one tag's comparison, and a missing album artist is the artist (MPD's
            // rules: LibraryTag.listedValue); `any` looks at the tags present only.
            let subjects = tag.listedValue.map { [$0] }
                ?? LibraryTag.textTags.compactMap(\.column) + ["CAST(track AS TEXT)", "CAST(disc AS TEXT)"]
            let matches = subjects.map { subject in
                values.append(.text(value))
                let (left, right) = folded ? ("lower(\(subject))", "lower(?)") : (subject, "?")
                switch comparison {
                case .equals, .differs: return "\(left) = \(right)"
                case .contains, .notContains: return "instr(\(left), \(right)) > 0"
                case .startsWith: return "instr(\(left), \(right)) = 1"
                }
            }
            let positive = "coalesce((" + matches.joined(separator: " OR ") + "), 0)"
            return comparison.isNegated ? "NOT " + positive : positive
        }
    }
}
