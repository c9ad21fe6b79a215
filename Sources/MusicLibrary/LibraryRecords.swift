// LibraryRecords: what the database holds of one file, the writer's statements (the scanner's, each batch in one
// transaction) and the readers' queries (search, find, list, ls), with the orders they answer in.
import AudioPipeline
import TrackPaths

/// One file of the library as the database holds it.
public struct LibraryEntry: Equatable, Sendable {
    /// What kind of file: a format Earshot plays, a playlist, or a file that could not be read (kept so that an
    /// unchanged one is not read again at every scan).
    public enum Kind: String, Sendable {
        case mp3, flac, vorbis, opus, playlist, failed
    }

    /// The music folder the file is in.
    public var root: TrackPath
    /// The path below the music folder, as bytes ("Artist/Album/01 Song.flac").
    public var relativePath: [UInt8]
    /// The kind.
    public var kind: Kind
    /// The size in bytes and the modification time (seconds) when it was read: what the next scan compares.
    public var size: Int
    public var modificationTime: Int
    /// The tags, without the picture (`hasCover` says whether there is one).
    public var tags = TrackMetadata()
    /// Whether the file embeds a cover picture.
    public var hasCover = false
    /// The length in seconds as played (an MP3's LAME tag's delay and padding trimmed) and the file's own sample rate
    /// (an MP3's before libmpg123 converts it), from the decoder's open.
    public var durationSeconds: Double?
    public var sampleRate: Int?
    /// Why a `.failed` file could not be read, by kind (for the counts; not stored).
    public var failure: String?

    /// Creates an entry.
    public init(root: TrackPath, relativePath: [UInt8], kind: Kind, size: Int, modificationTime: Int) {
        self.root = root
        self.relativePath = relativePath
        self.kind = kind
        self.size = size
        self.modificationTime = modificationTime
    }

    /// The relative path as a path value (what the CLI prints, as mpc does).
    public var relative: TrackPath { TrackPath(bytes: relativePath) ?? root }

    /// The file's full path (what the queue takes).
    public var absolute: TrackPath {
        TrackPath(bytes: root.bytes + (root.bytes.last == UInt8(ascii: "/") ? [] : [UInt8(ascii: "/")]) + relativePath)
            ?? root
    }

    /// The folder part of the relative path ("" for a file at the top).
    var folder: [UInt8] {
        guard let slash = relativePath.lastIndex(of: UInt8(ascii: "/")) else { return [] }
        return Array(relativePath[..<slash])
    }
}

/// What the scanner last recorded of a file.
struct KnownFile {
    var path: [UInt8]
    var id: Int
    var size: Int
    var modificationTime: Int
}

// MARK: - Writing (the scanner's connection)

extension LibraryDatabase {
    /// The id of the music folder `root`, added when new.
    func rootID(_ root: TrackPath) throws(SQLiteError) -> Int {
        try connection.statement("INSERT OR IGNORE INTO roots(path) VALUES(?)").bind([.blob(root.bytes)]).run()
        let select = try connection.statement("SELECT id FROM roots WHERE path = ?").bind([.blob(root.bytes)])
        // Reset once read: a statement left on its row keeps a read transaction open, and the log could not be
        // checkpointed.
        defer { select.reset() }
        guard try select.step() else { throw SQLiteError(code: 1, message: "a music folder's row went missing") }
        return select.integer(0)
    }

    /// The music folders recorded, by id.
    func roots() throws(SQLiteError) -> [Int: TrackPath] {
        let select = try connection.statement("SELECT id, path FROM roots")
        var roots: [Int: TrackPath] = [:]
        while try select.step() {
            if let path = TrackPath(bytes: select.blob(1)) { roots[select.integer(0)] = path }
        }
        return roots
    }

    /// Forgets a music folder and every file in it.
    func removeRoot(_ id: Int) throws(SQLiteError) {
        try connection.transaction { () throws(SQLiteError) in
            try connection.statement("DELETE FROM search WHERE rowid IN (SELECT id FROM files WHERE root = ?)")
                .bind([.integer(id)]).run()
            try connection.statement("DELETE FROM files WHERE root = ?").bind([.integer(id)]).run()
            try connection.statement("DELETE FROM roots WHERE id = ?").bind([.integer(id)]).run()
        }
    }

    /// The files recorded under music folder `root`, in the order of their relative paths' bytes (as the scanner's
    /// walk sorts what it finds: the two are merged, with no lookup by path). In (root, path) order, the UNIQUE
    /// index's, so no sort is needed.
    func knownFiles(root: Int) throws(SQLiteError) -> [KnownFile] {
        let select = try connection.statement("SELECT id, path, size, mtime FROM files WHERE root = ? ORDER BY path")
            .bind([.integer(root)])
        var files: [KnownFile] = []
        while try select.step() {
            files.append(KnownFile(path: select.blob(1), id: select.integer(0), size: select.integer(2),
                                   modificationTime: select.integer(3)))
        }
        return files
    }

    /// Runs `body` in one transaction (a batch of the scan's writes).
    func inTransaction(_ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try connection.transaction(body)
    }

    /// Deletes the file `id` (and its search row). Call inside a transaction.
    func deleteFile(_ id: Int) throws(SQLiteError) {
        try connection.statement("DELETE FROM search WHERE rowid = ?").bind([.integer(id)]).run()
        try connection.statement("DELETE FROM files WHERE id = ?").bind([.integer(id)]).run()
    }

    /// Records `entry` under music folder `root`, replacing what was there. Call inside a transaction.
    func store(_ entry: LibraryEntry, root: Int, replacing old: Int?) throws(SQLiteError) {
        if let old { try deleteFile(old) }
        let tags = entry.tags
        try connection.statement("""
            INSERT INTO files(root, path, folder, kind, size, mtime, title, artist, albumartist, album, genre, date,
                track, disc, composer, mb_track, mb_album, mb_artist, mb_albumartist, cover, duration, samplerate,
                tagged_gain)
            VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).bind([
                .integer(root), .blob(entry.relativePath), .blob(entry.folder), .text(entry.kind.rawValue),
                .integer(entry.size), .integer(entry.modificationTime), .optional(tags.title), .optional(tags.artist),
                .optional(tags.albumArtist), .optional(tags.album), .optional(tags.genre), .optional(tags.date),
                .optional(tags.trackNumber), .optional(tags.discNumber), .optional(tags.composer),
                .optional(tags.musicBrainz.track), .optional(tags.musicBrainz.album),
                .optional(tags.musicBrainz.artist), .optional(tags.musicBrainz.albumArtist),
                .integer(entry.hasCover ? 1 : 0), entry.durationSeconds.map { .real($0) } ?? .null,
                .optional(entry.sampleRate),
                .integer(tags.replayGain.trackGain != nil || tags.replayGain.albumGain != nil ? 1 : 0),
            ]).run()
        guard entry.kind != .playlist, entry.kind != .failed else { return }
        try connection.statement("""
            INSERT INTO search(rowid, title, artist, albumartist, album, genre, composer, date, file)
            VALUES(last_insert_rowid(), ?, ?, ?, ?, ?, ?, ?, ?)
            """).bind([
                .optional(tags.title), .optional(tags.artist), .optional(tags.albumArtist), .optional(tags.album),
                .optional(tags.genre), .optional(tags.composer), .optional(tags.date),
                .text(String(decoding: entry.relativePath, as: UTF8.self)),
            ]).run()
    }
}

// MARK: - Reading (queries)

extension LibraryEntry {
    /// The track's value of `tag` as MPD sorts by it: '' when it lacks the tag, the artist for a missing album artist.
    public func sortValue(_ tag: LibraryTag) -> String {
        switch tag {
        case .title: return tags.title ?? ""
        case .artist: return tags.artist ?? ""
        case .albumartist: return tags.albumArtist ?? tags.artist ?? ""
        case .album: return tags.album ?? ""
        case .genre: return tags.genre ?? ""
        case .date: return tags.date ?? ""
        case .composer: return tags.composer ?? ""
        case .track: return tags.trackNumber.map(String.init) ?? ""
        case .disc: return tags.discNumber.map(String.init) ?? ""
        case .musicbrainzTrackID: return tags.musicBrainz.track ?? ""
        case .musicbrainzAlbumID: return tags.musicBrainz.album ?? ""
        case .musicbrainzArtistID: return tags.musicBrainz.artist ?? ""
        case .musicbrainzAlbumArtistID: return tags.musicBrainz.albumArtist ?? ""
        case .any, .file: return String(decoding: relativePath, as: UTF8.self)
        }
    }
}

extension LibraryDatabase {
    /// The columns a track is read from, in `entry(from:roots:)`'s order.
    static let entryColumns = """
        root, path, kind, size, mtime, title, artist, albumartist, album, genre, date, track, disc, composer,
        mb_track, mb_album, mb_artist, mb_albumartist, cover, duration, samplerate
        """

    /// The order tracks are given in: by album artist (else artist), then each album in date order, then by disc,
    /// track number and path.
    static let trackOrder = """
        coalesce(albumartist, artist, '') COLLATE NOCASE, coalesce(date, ''), album COLLATE NOCASE,
        coalesce(disc, 0), coalesce(track, 0), path
        """

    /// The tracks `query` (a search or a find) matches, in `trackOrder`; a list query gives none.
    public func tracks(_ query: LibraryQuery) throws(SQLiteError) -> [LibraryEntry] {
        let filter: LibraryFilter
        switch query {
        case .search(let terms): filter = LibraryFilter(terms: terms, searching: true)
        case .find(let terms): filter = LibraryFilter(terms: terms, searching: false)
        case .filter(let expression, let folded, nil): filter = LibraryFilter(expression: expression, folded: folded)
        case .list, .filter, .grouped: return []
        }
        let roots = try roots()
        let select = try connection.oneOffStatement(
            "SELECT \(Self.entryColumns) FROM files WHERE \(filter.condition) ORDER BY \(Self.trackOrder)")
        select.bind(filter.values.map(\.sqliteValue))
        var entries: [LibraryEntry] = []
        while try select.step() {
            if let entry = Self.entry(from: select, roots: roots) { entries.append(entry) }
        }
        return entries
    }

    /// The distinct values of `tag` among the tracks matching `terms` exactly (untagged tracks give none): albums in
    /// the order of their earliest date, numbers in numeric order, other tags alphabetically.
    public func values(of tag: LibraryTag, matching terms: [LibraryTerm]) throws(SQLiteError) -> [String] {
        try values(of: tag, where: LibraryFilter(terms: terms, searching: false))
    }

    /// The distinct values of `tag` among the tracks `filter` matches, in `values(of:matching:)`'s order.
    public func values(of tag: LibraryTag, where filter: LibraryFilter) throws(SQLiteError) -> [String] {
        guard let column = tag.column else { return [] }
        let order: String
        switch tag {
        case .album: order = "min(coalesce(date, '')), \(column) COLLATE NOCASE"
        case .track, .disc: order = column
        default: order = "\(column) COLLATE NOCASE"
        }
        let select = try connection.oneOffStatement("""
            SELECT \(column) FROM files WHERE \(filter.condition) AND \(column) IS NOT NULL
            GROUP BY \(column) ORDER BY \(order)
            """)
        select.bind(filter.values.map(\.sqliteValue))
        var values: [String] = []
        while try select.step() {
            values.append(tag.isNumber ? String(select.integer(0)) : tag == .file
                ? String(decoding: select.blob(0), as: UTF8.self) : select.text(0) ?? "")
        }
        return values
    }

    /// The distinct combinations of `groups`' values and `tag`'s among the tracks `filter` matches, each row the
    /// groups' values (outermost first) then the tag's, in byte order column by column (MPD's).
    public func groupedValues(of tag: LibraryTag, groups: [LibraryTag], where filter: LibraryFilter)
        throws(SQLiteError) -> [[String]] {
        let columns = (groups + [tag]).compactMap(\.listedValue)
        guard columns.count == groups.count + 1 else { return [] }
        let order = (1...columns.count).map(String.init).joined(separator: ", ")
        let select = try connection.oneOffStatement(
            "SELECT DISTINCT \(columns.joined(separator: ", ")) FROM files WHERE \(filter.condition) ORDER BY \(order)")
        select.bind(filter.values.map(\.sqliteValue))
        var rows: [[String]] = []
        while try select.step() {
            rows.append((0..<columns.count).map { select.text(Int32($0)) ?? "" })
        }
        return rows
    }

    /// Whether the library has a track or playlist in `folder` (relative; "" is the top) or below it.
    public func hasFolder(_ folder: String) throws(SQLiteError) -> Bool {
        guard !folder.isEmpty else { return true }
        let prefix = folder + "/"
        let select = try connection.oneOffStatement(
            "SELECT 1 FROM files WHERE folder = CAST(? AS BLOB) OR substr(folder, 1, ?) = CAST(? AS BLOB) LIMIT 1")
        select.bind([.text(folder), .integer(prefix.utf8.count), .text(prefix)])
        return try select.step()
    }

    /// What is in the library's folder `folder` (relative, "" for the top; every music folder's top together):
    /// its subfolders, by name, then its files (tracks, playlists) in path order.
    public func listing(_ folder: [UInt8]) throws(SQLiteError) -> (folders: [[UInt8]], files: [LibraryEntry]) {
        let roots = try roots()
        let prefix = folder.isEmpty ? [] : folder + [UInt8(ascii: "/")]
        var children = Set<[UInt8]>()
        let folders = try connection.statement(
            "SELECT DISTINCT folder FROM files WHERE substr(folder, 1, ?) = ? AND length(folder) > ?")
            .bind([.integer(prefix.count), .blob(prefix), .integer(prefix.count)])
        while try folders.step() {
            let below = folders.blob(0).dropFirst(prefix.count)
            children.insert(prefix + Array(below.prefix { $0 != UInt8(ascii: "/") }))
        }
        let select = try connection.statement(
            "SELECT \(Self.entryColumns) FROM files WHERE folder = ? AND kind != 'failed' ORDER BY path")
            .bind([.blob(folder)])
        var files: [LibraryEntry] = []
        while try select.step() {
            if let entry = Self.entry(from: select, roots: roots) { files.append(entry) }
        }
        return (children.sorted { $0.lexicographicallyPrecedes($1) }, files)
    }

    /// How many tracks, playlists and unreadable files the library holds.
    public func counts() throws(SQLiteError) -> (tracks: Int, playlists: Int, failed: Int) {
        let select = try connection.statement("SELECT kind, count(*) FROM files GROUP BY kind")
        var counts = (tracks: 0, playlists: 0, failed: 0)
        while try select.step() {
            switch select.text(0) {
            case "playlist": counts.playlists += select.integer(1)
            case "failed": counts.failed += select.integer(1)
            default: counts.tracks += select.integer(1)
            }
        }
        return counts
    }

    /// An entry from a row of `entryColumns`.
    static func entry(from row: SQLiteStatement, roots: [Int: TrackPath]) -> LibraryEntry? {
        guard let root = roots[row.integer(0)], let kind = LibraryEntry.Kind(rawValue: row.text(2) ?? "") else {
            return nil
        }
        var entry = LibraryEntry(root: root, relativePath: row.blob(1), kind: kind, size: row.integer(3),
                                 modificationTime: row.integer(4))
        var tags = TrackMetadata(title: row.text(5), artist: row.text(6), album: row.text(8),
                                 albumArtist: row.text(7), trackNumber: row.isNull(11) ? nil : row.integer(11))
        tags.genre = row.text(9)
        tags.date = row.text(10)
        tags.discNumber = row.isNull(12) ? nil : row.integer(12)
        tags.composer = row.text(13)
        tags.musicBrainz = MusicBrainzIDs(track: row.text(14), album: row.text(15), artist: row.text(16),
                                          albumArtist: row.text(17))
        entry.tags = tags
        entry.hasCover = row.integer(18) != 0
        entry.durationSeconds = row.isNull(19) ? nil : row.real(19)
        entry.sampleRate = row.isNull(20) ? nil : row.integer(20)
        return entry
    }
}

extension LibraryFilter.Value {
    /// The value as bound to a statement.
    var sqliteValue: SQLiteValue {
        switch self {
        case .text(let text): return .text(text)
        case .integer(let number): return .integer(number)
        }
    }
}
