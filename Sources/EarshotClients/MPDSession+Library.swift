// MPD's library commands in Earshot's terms: the library's own requests (the CLI's `search`, `find`, `list`,
// `findadd`, `searchadd`, `update`, `ls`), answered by the library on the client's thread, and their JSON replies as
// MPD's `file:` and `Tag: value` lines. Tag/value pairs and MPD's filter expressions (`(artist == 'x')`) alike: the
// library parses both (LibraryQuery, LibraryExpression), and refuses what it cannot read as an argument error.
import EarshotService
import MPDProtocol
import TrackPaths

extension MPDSession {
    /// MPD's names of the library's tags, by the library's names.
    static let tagNames: [String: String] = [
        "title": "Title", "artist": "Artist", "albumartist": "AlbumArtist", "album": "Album", "genre": "Genre",
        "date": "Date", "composer": "Composer", "track": "Track", "disc": "Disc",
        "musicbrainz_trackid": "MUSICBRAINZ_TRACKID", "musicbrainz_albumid": "MUSICBRAINZ_ALBUMID",
        "musicbrainz_artistid": "MUSICBRAINZ_ARTISTID", "musicbrainz_albumartistid": "MUSICBRAINZ_ALBUMARTISTID",
    ]

    /// The reply to a library command, or nil when `command` is not one.
    func libraryReply(_ command: MPDCommand, name: String) -> Result<String, MPDError>? {
        switch command {
        case .search(let words): return query("search", words, name).map(Self.trackLines)
        case .find(let words): return query("find", words, name).map(Self.trackLines)
        case .searchadd(let words): return query("searchadd", words, name).map { _ in "" }
        case .findadd(let words): return query("findadd", words, name).map { _ in "" }
        case .add(let uri, let position) where position == nil:
            // A file of the library, by its path below the music folder (MPD's URI).
            return query("findadd", ["file", uri], name).flatMap { object in
                (object["added"] as? Int ?? 0) > 0 ? .success("")
                    : .failure(MPDError(.noExist, command: name, "No such song"))
            }
        case .add: return .failure(MPDError(.argument, command: name, "Earshot adds at the queue's end only"))
        case .list(let tag, let words):
            return query("list", [tag.lowercased()] + words, name).map { object in
                if let rows = object["rows"] as? [Any] { return Self.groupedLines(object, rows: rows) }
                let tagName = object["tag"] as? String ?? tag
                let shown = Self.tagNames[tagName] ?? tag
                return (object["values"] as? [Any] ?? []).compactMap { $0 as? String }
                    .map { "\(shown): \($0)\n" }.joined()
            }
        case .update(let path), .rescan(let path):
            let rescan = name == "rescan"
            return reply(to: .update(path: path.map { TrackPath($0) }, rescan: rescan), name)
                .map { _ in "updating_db: 1\n" }
        case .lsinfo(let path):
            return reply(to: .browse(path: path.flatMap { $0.isEmpty || $0 == "/" ? nil : TrackPath($0) }),
                         name).map { object in
                let folders = (object["folders"] as? [Any] ?? []).compactMap { $0 as? String }
                let prefix = path.flatMap { $0.isEmpty || $0 == "/" ? nil : $0 + "/" } ?? ""
                let directories = folders.map { "directory: \(prefix)\($0)\n" }.joined()
                // The top also lists the stored playlists, as MPD's does (what mpc's `lsplaylists` reads).
                let stored = prefix.isEmpty ? (playlists?.list() ?? []).map {
                    "playlist: \($0.name)\nLast-Modified: \($0.modified)\n"
                }.joined() : ""
                return directories + Self.trackLines(["tracks": object["files"] ?? []]) + stored
            }
        case .listall(let path), .listallinfo(let path):
            var lines = ""
            let top = path.flatMap { $0.isEmpty || $0 == "/" ? nil : $0 }
            // A folder named lists itself first, as MPD's does.
            if let top { lines = "directory: \(top)\n" }
            return walk(top, name) { tracks, folder in
                lines += name == "listall" ? tracks.compactMap { ($0["file"] as? String).map { "file: \($0)\n" } }
                    .joined() : Self.trackLines(["tracks": tracks])
                if let folder { lines += "directory: \(folder)\n" }
            }.map { lines }
        case .count(let words): return count(words, name)
        case .listfiles(let uri): return musicFolders.listFiles(uri)
        default: return nil
        }
    }

    /// Visits the library's folder `path` (nil: the top) and every folder below it in MPD's order: a folder's files
    /// (`visit(tracks, nil)`), then each folder inside it (`visit([], name)`) followed by its own content. One request
    /// of the library per folder, on this client's thread.
    private func walk(
        _ path: String?, _ name: String, _ visit: ([[String: Any]], String?) -> Void
    ) -> Result<Void, MPDError> {
        let listed = reply(to: .browse(path: path.map { TrackPath($0) }), name).mapError { error in
            // A folder that is not in the library is MPD's missing directory.
            error.code == .system ? MPDError(.noExist, command: name, "No such directory") : error
        }
        guard case .success(let object) = listed else { return listed.map { _ in } }
        let files = (object["files"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        let folders = (object["folders"] as? [Any] ?? []).compactMap { $0 as? String }
        // The library's folders are those of its tracks: a folder named with nothing in it is not there (as in MPD,
        // whose update drops empty folders).
        if let path, !path.isEmpty, files.isEmpty, folders.isEmpty {
            return .failure(MPDError(.noExist, command: name, "No such directory"))
        }
        visit(files, nil)
        for folder in folders {
            let inside = path.map { "\($0)/\(folder)" } ?? folder
            visit([], inside)
            if case .failure(let error) = walk(inside, name, visit) { return .failure(error) }
        }
        return .success(())
    }

    /// `count [TAG VALUE]... [group TAG]`: the tracks `find` matches (every track without a pair), their number and
    /// playing time in whole seconds, as a whole or by the group tag's values (MPD's byte order; a track without the
    /// value counts under an empty one, and AlbumArtist falls back to Artist as in MPD).
    private func count(_ words: [String], _ name: String) -> Result<String, MPDError> {
        var words = words
        var group: String?
        if words.count >= 2, words[words.count - 2] == "group" {
            let tag = words[words.count - 1].lowercased()
            guard Self.tagNames[tag] != nil else {
                return .failure(MPDError(.argument, command: name, "Unknown tag type: \(words[words.count - 1])"))
            }
            group = tag
            words.removeLast(2)
        }
        // Pairs must pair up; a filter expression is one word, parsed by the library as `find`'s.
        guard words.contains(where: { $0.hasPrefix("(") }) || words.count % 2 == 0 else {
            return .failure(MPDError(.argument, command: name, "Incorrect number of filter arguments"))
        }
        var tracks: [[String: Any]] = []
        if words.isEmpty {
            if case .failure(let error) = walk(nil, name, { found, _ in tracks += found }) { return .failure(error) }
        } else {
            switch query("find", words, name) {
            case .success(let object): tracks = (object["tracks"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
            case .failure(let error): return .failure(error)
            }
        }
        func lines(_ tracks: [[String: Any]]) -> String {
            let milliseconds = tracks.reduce(0) { $0 + (Self.integer($1["durationMs"]) ?? 0) }
            return "songs: \(tracks.count)\nplaytime: \(milliseconds / 1000)\n"
        }
        guard let group, let shown = Self.tagNames[group] else { return .success(lines(tracks)) }
        var groups: [String: [[String: Any]]] = [:]
        for track in tracks {
            let value = track[group] ?? (group == "albumartist" ? track["artist"] : nil)
            groups["\(value ?? "")", default: []].append(track)
        }
        let ordered = groups.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        return .success(ordered.map { "\(shown): \($0)\n" + lines(groups[$0] ?? []) }.joined())
    }

    /// Asks the library `verb` with `words` as sent (pairs, filter expressions: the library reads tag names in any
    /// case), tags included.
    private func query(_ verb: String, _ words: [String], _ name: String) -> Result<[String: Any], MPDError> {
        reply(to: .libraryQuery(verb: verb, words: words, tags: true), name)
    }

    /// MPD's lines for a grouped `list`: each group's value when it changes (or an outer one did), then the tag's.
    static func groupedLines(_ object: [String: Any], rows: [Any]) -> String {
        let names = ((object["groups"] as? [Any] ?? []) + [object["tag"] ?? ""]).map { name in
            tagNames[name as? String ?? ""] ?? (name as? String ?? "")
        }
        var lines = ""
        var previous: [String] = []
        for case let row as [Any] in rows {
            let values = row.map { $0 as? String ?? "" }
            guard values.count == names.count else { continue }
            let changed = values.indices.first { $0 >= previous.count || values[$0] != previous[$0] } ?? values.count
            for level in changed..<values.count { lines += "\(names[level]): \(values[level])\n" }
            previous = values
        }
        return lines
    }

    /// MPD's song lines for each track of a library reply.
    static func trackLines(_ object: [String: Any]) -> String {
        let tracks = (object["tracks"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        return tracks.map { track in
            guard let file = track["file"] as? String else { return "" }
            var lines = "file: \(file)\n"
            for key in ["artist", "albumartist", "title", "album", "track", "disc", "date", "genre", "composer"] {
                if let value = track[key], let shown = tagNames[key] { lines += "\(shown): \(value)\n" }
            }
            if let milliseconds = integer(track["durationMs"]) {
                lines += "Time: \(milliseconds / 1000)\nduration: \(seconds(milliseconds: milliseconds))\n"
            }
            return lines
        }.joined()
    }
}
