// SQLite: the one owner of each SQLite handle (a connection, a prepared statement), and the typed error its calls
// give. No C type leaves this file. A connection is used by one thread at a time: the library's worker owns the
// writing one, and the readers' connection is behind a lock (LibraryReader).
import CSQLite
import Glibc

/// Why an SQLite call failed: the result code's name, with SQLite's own words for it.
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The primary result code (SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_FULL...).
    public var code: Int32
    /// SQLite's message for the connection's last error (never a path or a value: statements bind their values).
    public var message: String

    /// Whether the file is damaged or no database at all: it is then set aside and rebuilt.
    public var meansBrokenFile: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }

    /// SQLITE_CANTOPEN, for the errors made here when a file is missing.
    static let cannotOpen = SQLITE_CANTOPEN

    /// Whether the file could not be opened (a reader's, before the library made it).
    public var meansMissingFile: Bool { code == SQLITE_CANTOPEN }

    /// For example "SQLITE_FULL (13): database or disk is full".
    public var description: String { "SQLite error \(code): \(message)" }
}

/// One open database connection, closed in `deinit`.
final class SQLiteConnection {
    private let handle: OpaquePointer
    /// Statements prepared once and kept, by their text.
    private var cache: [String: SQLiteStatement] = [:]

    /// Opens (creating when `create`) the database file at `path`, read-write or read-only.
    init(path: String, readOnly: Bool = false, create: Bool = true) throws(SQLiteError) {
        var opened: OpaquePointer?
        var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        flags |= SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &opened, flags, nil)
        guard result == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            if let opened { sqlite3_close_v2(opened) }
            throw SQLiteError(code: result & 0xFF, message: message)
        }
        handle = opened
        // A reader and the writer meet on the same file: wait a while for a lock rather than fail at once.
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that take no values and return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw error(result) }
    }

    /// The statement for `sql`, prepared once per connection and reset for another use.
    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        var prepared: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard result == SQLITE_OK, let prepared else { throw error(result) }
        let statement = SQLiteStatement(handle: prepared, connection: self)
        cache[sql] = statement
        return statement
    }

    /// Rewinds every kept statement, ending any read they hold open (before a checkpoint).
    func resetAll() {
        for statement in cache.values { statement.reset() }
    }

    /// A statement for `sql` used once (queries built from a request's terms), not kept.
    func oneOffStatement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var prepared: OpaquePointer?
        let result = sqlite3_prepare_v2(handle, sql, -1, &prepared, nil)
        guard result == SQLITE_OK, let prepared else { throw error(result) }
        return SQLiteStatement(handle: prepared, connection: self)
    }

    /// The integer the one-row query `sql` returns (a PRAGMA), or nil without a row.
    func integer(_ sql: String) throws(SQLiteError) -> Int? {
        let statement = try oneOffStatement(sql)
        return try statement.step() ? statement.integer(0) : nil
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The typed error for `result`, with the connection's message.
    func error(_ result: Int32) -> SQLiteError {
        SQLiteError(code: result & 0xFF, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// One prepared statement, finalized in `deinit`. Values are bound by position, from 1.
final class SQLiteStatement {
    private let handle: OpaquePointer
    /// Kept so that the connection outlives its statements.
    private unowned let connection: SQLiteConnection

    /// SQLite copies bound text and blobs at once (SQLITE_TRANSIENT): the Swift buffers may go after the call.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    fileprivate init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Clears the bindings and rewinds the statement.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds `values` from position 1 on.
    @discardableResult
    func bind(_ values: [SQLiteValue]) -> SQLiteStatement {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: sqlite3_bind_null(handle, index)
            case .integer(let number): sqlite3_bind_int64(handle, index, Int64(number))
            case .real(let number): sqlite3_bind_double(handle, index, number)
            case .text(let text): sqlite3_bind_text(handle, index, text, -1, Self.transient)
            case .blob(let bytes):
                bytes.withUnsafeBytes { raw in
                    // A zero-length blob needs a non-null pointer to be a blob rather than NULL.
                    _ = sqlite3_bind_blob(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                          Int32(raw.count), Self.transient)
                }
            }
        }
        return self
    }

    /// Moves to the next row: true when there is one, false when the statement is done.
    func step() throws(SQLiteError) -> Bool {
        let result = sqlite3_step(handle)
        if result == SQLITE_ROW { return true }
        if result == SQLITE_DONE { return false }
        throw connection.error(result)
    }

    /// Runs the statement to its end (an insert, an update, a delete).
    func run() throws(SQLiteError) {
        while try step() {}
    }

    /// Whether column `index` (from 0) of the current row is NULL.
    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    func integer(_ index: Int32) -> Int { Int(sqlite3_column_int64(handle, index)) }

    /// Column `index` as a real number.
    func real(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` as text, nil for NULL.
    func text(_ index: Int32) -> String? {
        guard !isNull(index), let pointer = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes (a blob; empty for NULL).
    func blob(_ index: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, index))
        guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

/// A value bound to a statement.
enum SQLiteValue {
    case null
    case integer(Int)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// Text, or NULL for nil.
    static func optional(_ text: String?) -> SQLiteValue { text.map { .text($0) } ?? .null }
    /// An integer, or NULL for nil.
    static func optional(_ number: Int?) -> SQLiteValue { number.map { .integer($0) } ?? .null }
}
