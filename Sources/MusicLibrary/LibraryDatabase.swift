// LibraryDatabase: the library's SQLite file, `$XDG_CACHE_HOME/earshot/library.sqlite`: opening it, its schema and
// the migrations from older versions, and what happens to a file that is not ours. The library is rebuilt from the
// music folders at any time, so a damaged, foreign or newer-versioned file is renamed aside (`.broken-<seconds>`)
// and a new one made, with one report, never a crash. WAL: readers (queries on the control clients' threads) never
// block the writer (the scan) nor it them.
import CSQLite
import Glibc

/// The database file, opened for the library's writer (the scanner) or for its readers.
public final class LibraryDatabase {
    /// "Ersh": what PRAGMA application_id holds in an Earshot library, to tell it from another program's file.
    static let applicationID = 0x4572_7368

    /// The schema this build writes (PRAGMA user_version).
    public static let schemaVersion = 3

    /// The statements that bring the schema from version N to N+1, at index N. Version 0 is an empty file; a later
    /// change appends its step here (an ALTER TABLE, or a table rebuilt), so a file of any older version is brought up
    /// to date in one transaction instead of being scanned again.
    static let migrations: [[String]] = [
        [
            "CREATE TABLE roots(id INTEGER PRIMARY KEY, path BLOB NOT NULL UNIQUE)",
            """
            CREATE TABLE files(
                id INTEGER PRIMARY KEY, root INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
                path BLOB NOT NULL, folder BLOB NOT NULL, kind TEXT NOT NULL,
                size INTEGER NOT NULL, mtime INTEGER NOT NULL,
                title TEXT, artist TEXT, albumartist TEXT, album TEXT, genre TEXT, date TEXT,
                track INTEGER, disc INTEGER, composer TEXT,
                mb_track TEXT, mb_album TEXT, mb_artist TEXT, mb_albumartist TEXT,
                cover INTEGER NOT NULL DEFAULT 0, duration REAL, samplerate INTEGER,
                UNIQUE(root, path))
            """,
            "CREATE INDEX files_folder ON files(root, folder)",
            "CREATE INDEX files_artist ON files(artist)",
            "CREATE INDEX files_album ON files(album)",
            // One row per track, rowid = files.id; unicode61 folds case and removes diacritics ("Rós" is "ros").
            """
            CREATE VIRTUAL TABLE search USING fts5(
                title, artist, albumartist, album, genre, composer, date, file,
                tokenize = 'unicode61 remove_diacritics 2', prefix = '2')
            """,
        ],
        // 2: the gains measured for files whose tags carry none (LibraryLoudness.swift). Whether a file's tags carry
        // a gain was not recorded before: every file is read again at the next scan (its time made unknown).
        [
            "ALTER TABLE files ADD COLUMN tagged_gain INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE files ADD COLUMN loudness INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE files ADD COLUMN track_gain REAL",
            "ALTER TABLE files ADD COLUMN track_peak REAL",
            "ALTER TABLE files ADD COLUMN album_gain REAL",
            "ALTER TABLE files ADD COLUMN album_peak REAL",
            "UPDATE files SET mtime = -1",
            "CREATE INDEX files_loudness ON files(loudness, tagged_gain)",
        ],
        // 3: an MP3 was recorded with libmpg123's output rate (44100 for a 16 kHz file it converts) and without its
        // ID3v1 genre: every MP3 is read again at the next scan.
        [
            "UPDATE files SET mtime = -1 WHERE kind = 'mp3'",
        ],
    ]

    /// Where the file is.
    public let path: String
    let connection: SQLiteConnection

    /// What opening found, for one report line: nothing, a new file, a migration, or a file set aside and why.
    public enum Opening: Equatable, Sendable {
        /// The file was ours and current.
        case current
        /// A new, empty library was made.
        case created
        /// An older schema was brought up to date.
        case migrated(from: Int)
        /// The file was not a usable Earshot library and was renamed aside; a new one was made.
        case setAside(reason: String)
    }

    /// How opening went.
    public private(set) var opening = Opening.current

    /// Opens the library at `path` for writing, making its folder, the file and its schema as needed; a file that
    /// is not a usable Earshot library is set aside and replaced. Throws only when no database can be made there at
    /// all (a read-only or full disk).
    public init(path: String) throws(SQLiteError) {
        self.path = path
        Self.makeFolder(of: path)
        var refusal: String
        do {
            let candidate = try Self.openChecked(path: path)
            opening = try Self.prepareSchema(candidate)
            connection = candidate
            return
        } catch let refused as LibraryFileRefused {
            refusal = refused.reason
        } catch let error as SQLiteError where error.meansBrokenFile {
            refusal = error.code == SQLITE_NOTADB ? "not a database" : "damaged"
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLITE_ERROR, message: "\(error)")
        }
        Self.setAside(path)
        connection = try SQLiteConnection(path: path)
        do {
            _ = try Self.prepareSchema(connection)
        } catch let error as SQLiteError {
            throw error
        } catch {
            throw SQLiteError(code: SQLITE_ERROR, message: "a new library file was refused")
        }
        opening = .setAside(reason: refusal)
    }

    /// Opens the library at `path` for reading only (a query's connection); nil when it does not exist yet.
    init(readingAt path: String) throws(SQLiteError) {
        self.path = path
        connection = try SQLiteConnection(path: path, readOnly: true, create: false)
    }

    /// Why a file is not taken as the library.
    private struct LibraryFileRefused: Error {
        var reason: String
    }

    /// Opens `path` and checks that it is an SQLite database at all (damage shows on the first read).
    private static func openChecked(path: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        do {
            guard let check = try connection.oneOffStatement("PRAGMA quick_check(1)").textRow(), check == "ok" else {
                throw LibraryFileRefused(reason: "damaged (integrity check failed)")
            }
        } catch let error as SQLiteError where error.meansBrokenFile {
            throw LibraryFileRefused(reason: error.code == SQLITE_NOTADB ? "not a database" : "damaged")
        }
        return connection
    }

    /// Brings the schema of an open file to `schemaVersion`, or refuses a file that is not ours.
    private static func prepareSchema(_ connection: SQLiteConnection) throws -> Opening {
        try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
        let application = try connection.integer("PRAGMA application_id") ?? 0
        let version = try connection.integer("PRAGMA user_version") ?? 0
        let tables = try connection.integer("SELECT count(*) FROM sqlite_master") ?? 0
        if application == 0 && version == 0 && tables == 0 {
            try migrate(connection, from: 0)
            return .created
        }
        guard application == applicationID else { throw LibraryFileRefused(reason: "another program's database") }
        guard version <= schemaVersion else {
            throw LibraryFileRefused(reason: "written by a newer Earshot (schema \(version))")
        }
        guard version < schemaVersion else { return .current }
        try migrate(connection, from: version)
        return .migrated(from: version)
    }

    /// Runs the migration steps from `version` to the current one in one transaction.
    private static func migrate(_ connection: SQLiteConnection, from version: Int) throws(SQLiteError) {
        try connection.transaction { () throws(SQLiteError) in
            for step in migrations[version...] {
                for statement in step { try connection.execute(statement) }
            }
            try connection.execute("PRAGMA application_id = \(applicationID); PRAGMA user_version = \(schemaVersion)")
        }
    }

    /// After a scan: the write-ahead log folded into the file and emptied (readers never wait for it), and SQLite's
    /// own upkeep of its statistics. A failure here costs only space, so it is not reported.
    public func compact() {
        connection.resetAll()
        try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA optimize")
    }

    /// Renames the file (and its WAL and shared-memory files) aside, keeping it for whoever wants to look.
    private static func setAside(_ path: String) {
        let suffix = ".broken-\(time(nil))"
        for ending in ["", "-wal", "-shm"] {
            _ = rename(path + ending, path + suffix + ending)
        }
    }

    /// Creates the folder the file goes in (mode 0700), with its missing parents.
    static func makeFolder(of path: String) {
        var prefix = ""
        for component in path.split(separator: "/").dropLast() {
            prefix += "/" + component
            _ = mkdir(prefix, 0o700)
        }
    }
}

extension SQLiteStatement {
    /// The first column of the first row as text, or nil without a row.
    func textRow() throws(SQLiteError) -> String? {
        try step() ? text(0) : nil
    }
}
