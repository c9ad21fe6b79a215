// MPD's `list TAG [FILTER] group G [group G...]`: the words parsed as MPD 0.23 reads them (the `group` pairs taken
// from the end, the last one outermost), and the rows the database gives for them. As in MPD, a track without a tag
// gives '' for it, a track without an album artist gives its artist, and values come in byte order at every level.

extension LibraryQuery {
    /// The grouped list `words` (after `list`) ask for, or nil when they end in no `group TAG` pair.
    static func grouped(_ words: [String]) -> Result<LibraryQuery, LibraryQueryError>? {
        var rest = words.dropFirst()
        var groups: [LibraryTag] = []
        while rest.count >= 2, rest[rest.endIndex - 2] == "group" {
            let name = rest[rest.endIndex - 1]
            guard let group = LibraryTag.named(name), group != .any, group != .file else {
                let known = LibraryTag.allCases.filter { $0 != .any && $0 != .file }.map(\.rawValue)
                return .failure(LibraryQueryError("list cannot group by \(shown(name)); groups: "
                    + known.joined(separator: ", ")))
            }
            groups.append(group)
            rest = rest.dropLast(2)
        }
        guard !groups.isEmpty else { return nil }
        guard let first = words.first, let tag = LibraryTag.named(first), tag != .any, tag != .file else {
            return .failure(LibraryQueryError("list needs a TAG to group (not any or file)"))
        }
        guard !groups.contains(tag), Set(groups).count == groups.count else {
            return .failure(LibraryQueryError("Conflicting group"))
        }
        guard !rest.isEmpty else { return .success(.grouped(tag, groups: groups, nil)) }
        return expression(of: rest, verb: "list", folded: false).map { .grouped(tag, groups: groups, $0) }
    }
}

extension LibraryQuery {
    /// The folder a filter expression's `base` names (LibraryExpression.firstBase), which must exist, as MPD's must.
    public var base: String? {
        switch self {
        case .filter(let expression, _, _): return expression.firstBase
        case .grouped(_, _, let expression): return expression?.firstBase
        default: return nil
        }
    }
}

extension LibraryTag {
    /// The SQL value of the tag for a track as MPD's `list` sees it: '' when the track lacks it, the artist for a
    /// missing album artist, numbers as text. Nil for `any`.
    var listedValue: String? {
        switch self {
        case .any: return nil
        case .file: return "CAST(path AS TEXT)"
        case .track, .disc: return "coalesce(CAST(\(column!) AS TEXT), '')"
        case .albumartist: return "coalesce(albumartist, artist, '')"
        default: return "coalesce(\(column!), '')"
        }
    }
}
