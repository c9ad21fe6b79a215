// libFuzzer target for the library's query language, `LibraryQuery.parse` (with MPD's filter expressions,
// `LibraryExpression`) and the SQL it becomes (`LibraryFilter`). Not a SwiftPM target: scripts/fuzz compiles it
// together with Sources/MusicLibrary/LibraryQuery.swift and LibraryExpression.swift and links SQLite.
//
// The input is a verb (its first byte chooses one) and words (the rest, split at NUL bytes, decoded as UTF-8 with
// replacement, as the CLI's arguments are). Besides "never crash", it checks that an accepted query binds one value per
// `?` of its condition, and that every FTS5 match expression it makes is one SQLite accepts: run against an in-memory
// FTS5 table with the library's tokenizer, it never gives a syntax error, whatever quotes, operators or brackets the
// words hold. A filter expression's condition runs, its values bound, against an in-memory `files` table with the
// library's columns: it always prepares and runs.
import CSQLite

/// The in-memory database the expressions run against, made once.
// libFuzzer calls in from one thread.
nonisolated(unsafe) private let database: OpaquePointer = {
    var handle: OpaquePointer?
    guard sqlite3_open(":memory:", &handle) == SQLITE_OK, let handle,
          sqlite3_exec(handle, """
            CREATE VIRTUAL TABLE search USING fts5(title, artist, albumartist, album, genre, composer, date, file,
                tokenize = 'unicode61 remove_diacritics 2', prefix = '2');
            INSERT INTO search VALUES('So What', 'Miles Davis', NULL, 'Kind of Blue', 'Jazz', NULL, '1959', 'a.mp3');
            CREATE TABLE files(id INTEGER PRIMARY KEY, path BLOB, folder BLOB, kind TEXT, title TEXT, artist TEXT,
                albumartist TEXT, album TEXT, genre TEXT, date TEXT, composer TEXT, track INTEGER, disc INTEGER,
                mb_track TEXT, mb_album TEXT, mb_artist TEXT, mb_albumartist TEXT);
            INSERT INTO files VALUES(1, CAST('Miles Davis/a.mp3' AS BLOB), CAST('Miles Davis' AS BLOB), 'track',
                'So What', 'Miles Davis', NULL, 'Kind of Blue', 'Jazz', '1959', NULL, 1, NULL, NULL, NULL, NULL, NULL);
            """, nil, nil, nil) == SQLITE_OK
    else { fatalError("no in-memory FTS5 database") }
    return handle
}()

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func libraryQueryFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: data == nil ? 0 : size))
    guard let first = bytes.first else { return 0 }
    let verbs = LibraryQuery.verbs + ["ls"]
    let verb = verbs[Int(first) % verbs.count]
    let words = bytes.dropFirst().split(separator: 0, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let parsed = LibrarySelection.split(verb: verb, words).flatMap { split in
        LibraryQuery.parse(verb: verb, split.words).map { query in
            // The selection applies to any list without trapping, whatever its window.
            _ = split.selection.apply(Array(split.words.indices)) { index, _ in split.words[index] }
            return query
        }
    }
    switch parsed {
    case .failure(let error):
        require(!error.message.isEmpty, "a refusal without a reason")
    case .success(let query):
        let filter: LibraryFilter
        switch query {
        case .search(let terms): filter = LibraryFilter(terms: terms, searching: true)
        case .find(let terms), .list(_, let terms): filter = LibraryFilter(terms: terms, searching: false)
        case .filter(let expression, let folded, _):
            filter = LibraryFilter(expression: expression, folded: folded)
            run(filter)
        case .grouped(_, let groups, let expression):
            require(!groups.isEmpty, "a grouped list without a group")
            filter = expression.map { LibraryFilter(expression: $0, folded: false) }
                ?? LibraryFilter(terms: [], searching: false)
            run(filter)
        }
        let placeholders = filter.condition.filter { $0 == "?" }.count
        require(placeholders == filter.values.count, "\(placeholders) placeholders for \(filter.values.count) values")
        if case .search(let terms) = query {
            for term in terms where term.tag == .any || term.tag.searchColumn != nil {
                check(LibraryFilter.matchExpression(term))
            }
        }
    }
    return 0
}

/// Runs `expression` as an FTS5 match; stops the process when SQLite refuses it.
private func check(_ expression: String) {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(database, "SELECT count(*) FROM search WHERE search MATCH ?", -1, &statement, nil)
        == SQLITE_OK, let statement else { fatalError("the match statement did not prepare") }
    defer { sqlite3_finalize(statement) }
    sqlite3_bind_text(statement, 1, expression, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
    let result = sqlite3_step(statement)
    if result != SQLITE_ROW {
        fatalError("SQLite refused a match expression (\(result)): \(String(cString: sqlite3_errmsg(database)))")
    }
}

/// Runs `filter`'s condition with its values bound on the `files` table; stops the process when SQLite refuses it.
private func run(_ filter: LibraryFilter) {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(database, "SELECT count(*) FROM files WHERE \(filter.condition)", -1, &statement, nil)
        == SQLITE_OK, let statement
    else { fatalError("a filter's condition did not prepare: \(String(cString: sqlite3_errmsg(database)))") }
    defer { sqlite3_finalize(statement) }
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    for (index, value) in filter.values.enumerated() {
        switch value {
        case .text(let text): sqlite3_bind_text(statement, Int32(index + 1), text, -1, transient)
        case .integer(let number): sqlite3_bind_int64(statement, Int32(index + 1), Int64(number))
        }
    }
    let result = sqlite3_step(statement)
    if result != SQLITE_ROW {
        fatalError("a filter's condition failed (\(result)): \(String(cString: sqlite3_errmsg(database)))")
    }
}

/// Stops the process with `message` when `condition` is false (fatalError keeps its message in -O builds).
private func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
