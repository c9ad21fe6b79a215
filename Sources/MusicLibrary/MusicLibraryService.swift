// MusicLibraryService: the library as the service runs it. A note on threading:
// - the writer: one thread of its own ("earshot-library"), under SCHED_IDLE (nice 19 when refused), owns the writing
//   connection, and only while it holds the library's lock file (a second service on the same file waits for it); it
//   opens the file, runs the scans asked for one at a time (requests that arrive meanwhile coalesce into one), and
//   reports what happens through `report`, which must not wait (the executable puts it into the owner's inbox and the
//   log);
// - the readers: queries come on the control clients' threads, which may wait; they share one read-only connection
//   behind a lock. WAL lets them read while a scan writes; they see whole batches.
// The owner never calls in here: the control server's handler answers library requests before they reach it, and a
// scan's progress reaches the owner only as a report.
import AudioPipeline
import Glibc
import SystemSupport
import TrackPaths

/// The library of the running service: its scanning thread and its queries.
public final class MusicLibraryService: @unchecked Sendable {
    // Unchecked Sendable: `pending`, `running` and `stopping` are read and written under `condition`'s mutex; the
    // reader connection only under `readerLock`; the writer connection only on the library thread.

    /// What the library tells the service, kinds and counts only (never a path or a tag).
    public enum Report: Sendable, Equatable {
        /// The database opened: as it was, created, migrated, or set aside and rebuilt (with why).
        case opened(LibraryDatabase.Opening)
        /// No database could be opened or made (read-only or full disk); the reason is SQLite's.
        case unavailable(reason: String)
        /// A scan started or went on: files read so far and files to read in all.
        case scanning(done: Int, toDo: Int)
        /// A scan ended: what it counted, the tracks now in the library, and how long it took.
        case scanned(ScanCounts, tracks: Int, milliseconds: Int)
        /// A scan stopped because the database failed.
        case scanFailed(reason: String)
        /// The music folders are watched (inotify), or not (why); changes are then seen only by `update`.
        case watching(Bool, reason: String?)
        /// A pass measuring the loudness of tracks without tagged gains ended (or gave way to a scan).
        case measured(LoudnessCounts, milliseconds: Int)
    }

    /// A scan asked for.
    struct ScanRequest: Equatable {
        var below: TrackPath?
        var rescan: Bool
    }

    /// Where the database is.
    public let databasePath: String
    /// The music folders.
    public let roots: [TrackPath]
    private let report: @Sendable (Report) -> Void
    private let condition = Condition()
    private var pending: [ScanRequest] = []
    private var stopping = false
    private var watcher: LibraryWatcher?
    private let readerLock = Lock()
    private var reader: LibraryDatabase?
    /// The identity of the file `reader` opened.
    private var readerFile: FileIdentity?

    /// Reports at most this often while a scan runs (every file would flood the owner's inbox).
    static let progressIntervalNanoseconds: UInt64 = 250_000_000

    /// A library of `roots` in the file at `databasePath`, reporting through `report`. Nothing runs before `start`.
    public init(databasePath: String, roots: [TrackPath], report: @escaping @Sendable (Report) -> Void) {
        self.databasePath = databasePath
        self.roots = roots
        self.report = report
    }

    /// Starts the library's thread: it opens the database and, when the file was new or rebuilt and a music folder
    /// exists, scans.
    public func start() {
        SystemThread.start(named: "earshot-library") { [self] in run() }
    }

    /// Asks for a scan of every music folder, or of `below` only; `rescan` reads every file again. Returns at once.
    public func requestScan(below: TrackPath? = nil, rescan: Bool = false) {
        condition.lock()
        let request = ScanRequest(below: below, rescan: rescan)
        if !pending.contains(request) { pending.append(request) }
        condition.signal()
        condition.unlock()
    }

    /// Asks the thread to stop after the file it is reading.
    public func stop() {
        condition.lock()
        watcher?.stop()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    private func run() {
        SystemThread.makeIdle()
        guard let lock = takeWriterLock() else { return }
        defer { if lock >= 0 { close(lock) } }
        guard var database = open() else { return }
        startWatching()
        // Whether tracks may be waiting for their loudness to be measured: at the start and after every scan, once
        // no scan is asked for.
        var measuring = true
        while true {
            condition.lock()
            if measuring && pending.isEmpty && !stopping {
                condition.unlock()
                measuring = false
                measureLoudness(database)
                continue
            }
            while pending.isEmpty && !stopping { condition.wait() }
            if stopping {
                condition.unlock()
                return
            }
            // A whole scan covers every part asked for: one whole scan, read again if any asked a rescan.
            let requests = pending
            pending.removeAll()
            condition.unlock()
            let whole = requests.contains { $0.below == nil }
            let rescan = requests.contains { $0.rescan }
            var scans = whole ? [ScanRequest(below: nil, rescan: rescan)] : requests
            if !Self.exists(databasePath) {
                // The file was deleted under the service: made again (and filled whole) rather than written unseen.
                guard let reopened = open() else { return }
                database = reopened
                scans = []
            }
            measuring = true
            for request in scans {
                guard scan(request, into: database) else {
                    // The file was damaged or replaced under the service: set aside and rebuilt, as at a start.
                    guard let reopened = open() else { return }
                    database = reopened
                    break
                }
            }
        }
    }

    /// Makes this service the library's only writer: an exclusive lock (flock) on `<database>.lock`, held while the
    /// thread runs. When another service holds it (a second Earshot on the same cache folder), that is reported once
    /// and the lock is tried every second; the file is never opened for writing meanwhile, while queries read it as
    /// usual. Once taken after a wait, a scan is asked for (what changed while the other one wrote). Nil when asked to
    /// stop while waiting; -1 when no lock file can be made (opening the database then reports why).
    private func takeWriterLock() -> Int32? {
        LibraryDatabase.makeFolder(of: databasePath)
        let descriptor = Glibc.open(databasePath + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return -1 }
        var waited = false
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            // A file system without locks: nothing to wait for.
            guard errno == EWOULDBLOCK || errno == EINTR else { return descriptor }
            if !waited {
                waited = true
                report(.unavailable(reason: "another Earshot service is writing this library; waiting for it"
                    + " (queries read it meanwhile)"))
            }
            condition.lock()
            let deadline = Condition.monotonicNanoseconds() + 1_000_000_000
            while !stopping && Condition.monotonicNanoseconds() < deadline {
                condition.wait(untilMonotonicNanoseconds: deadline)
            }
            let stopped = stopping
            condition.unlock()
            if stopped {
                close(descriptor)
                return nil
            }
        }
        if waited { requestScan() }
        return descriptor
    }

    /// Opens the database (setting a broken one aside) and reports how; a new or rebuilt library is filled at once,
    /// when there is music to fill it with (later scans are asked for). Nil when no database can be made.
    private func open() -> LibraryDatabase? {
        let database: LibraryDatabase
        do {
            database = try LibraryDatabase(path: databasePath)
        } catch {
            report(.unavailable(reason: error.description))
            return nil
        }
        report(.opened(database.opening))
        if database.opening != .current && roots.contains(where: Self.isFolder) { requestScan() }
        return database
    }

    /// Starts the watcher of the music folders: what changes there is scanned without an `update`.
    private func startWatching() {
        guard let started = LibraryWatcher(roots: roots, changed: { [weak self] change in
            switch change {
            case .folders(let folders): for folder in folders { self?.requestScan(below: folder) }
            case .everything: self?.requestScan()
            }
        }) else {
            report(.watching(false, reason: "inotify unavailable (errno \(errno))"))
            return
        }
        condition.lock()
        let stopped = stopping
        if !stopped { watcher = started }
        condition.unlock()
        guard !stopped else { return }
        started.start()
        report(.watching(true, reason: nil))
    }

    /// Whether something is at `path`.
    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// Whether `path` is a folder (followed through links).
    private static func isFolder(_ path: TrackPath) -> Bool {
        var status = stat()
        return LibraryScanner.status(path.bytes, &status, follow: true) && status.st_mode & S_IFMT == S_IFDIR
    }

    /// Runs one scan and reports it; false when the database file turned out damaged (it is then to be reopened).
    private func scan(_ request: ScanRequest, into database: LibraryDatabase) -> Bool {
        let started = Condition.monotonicNanoseconds()
        var lastReport: UInt64 = 0
        do {
            let counts = try LibraryScanner(roots: roots).scan(
                into: database, below: request.below, rescan: request.rescan,
                progress: { done, toDo in
                    let now = Condition.monotonicNanoseconds()
                    guard done == 0 || now - lastReport >= Self.progressIntervalNanoseconds else { return }
                    lastReport = now
                    report(.scanning(done: done, toDo: toDo))
                },
                cancelled: { isStopping })
            let tracks = (try? database.counts().tracks) ?? 0
            database.compact()
            let milliseconds = Int((Condition.monotonicNanoseconds() - started) / 1_000_000)
            report(.scanned(counts, tracks: tracks, milliseconds: milliseconds))
            return true
        } catch {
            report(.scanFailed(reason: error.description))
            return !error.meansBrokenFile
        }
    }

    /// Measures what has no gain yet, giving way to any scan asked for meanwhile, and reports the counts when it did
    /// anything. A database failure is reported as a scan's would be; the next scan reopens as needed.
    private func measureLoudness(_ database: LibraryDatabase) {
        let started = Condition.monotonicNanoseconds()
        do {
            let counts = try LibraryScanner.measureLoudness(into: database, cancelled: { [self] in
                condition.lock()
                defer { condition.unlock() }
                return stopping || !pending.isEmpty
            })
            guard counts.measured + counts.failed > 0 else { return }
            let milliseconds = Int((Condition.monotonicNanoseconds() - started) / 1_000_000)
            report(.measured(counts, milliseconds: milliseconds))
        } catch {
            report(.scanFailed(reason: error.description))
        }
    }

    /// What the library holds of the file at `path` (its tags, the gains it measured), for the decode thread at a
    /// track's start; nil when the file is not in the library or the library cannot be read.
    public func trackInfo(for path: TrackPath) -> LibraryTrackInfo? {
        try? reading { database throws(SQLiteError) in try database.trackInfo(for: path) }
    }

    // MARK: Queries (on the caller's thread, which may wait)

    /// Why a query could not be answered.
    public struct QueryError: Error, CustomStringConvertible {
        /// For the user.
        public var description: String
    }

    /// Runs `body` on the readers' connection, opened on first use.
    private func reading<T>(_ body: (LibraryDatabase) throws(SQLiteError) -> T) throws(QueryError) -> T {
        readerLock.lock()
        defer { readerLock.unlock() }
        // The file the reader has open must still be the library's: deleted or rebuilt (set aside) under it, the
        // reader opens the new one, or finds none.
        var status = stat()
        let current = stat(databasePath, &status) == 0 ? FileIdentity(status) : nil
        if current != readerFile { reader = nil }
        do throws(SQLiteError) {
            if reader == nil {
                guard let current else { throw SQLiteError(code: SQLiteError.cannotOpen, message: "no file") }
                reader = try LibraryDatabase(readingAt: databasePath)
                readerFile = current
            }
            return try body(reader!)
        } catch {
            // A reader that failed (the file was set aside and rebuilt, say) is opened afresh next time.
            reader = nil
            if error.meansMissingFile {
                throw QueryError(description: "the library is not made yet: run `earshot update`")
            }
            throw QueryError(description: "the library could not be read (\(error.description))")
        }
    }

    /// The tracks a search or find matches, in album order.
    public func tracks(_ query: LibraryQuery) throws(QueryError) -> [LibraryEntry] {
        try reading { database throws(SQLiteError) in try database.tracks(query) }
    }

    /// The values of `tag` among the tracks that match `terms` exactly.
    public func values(of tag: LibraryTag, matching terms: [LibraryTerm]) throws(QueryError) -> [String] {
        try reading { database throws(SQLiteError) in try database.values(of: tag, matching: terms) }
    }

    /// The rows of `list TAG group G...` among the tracks `filter` matches (LibraryDatabase.groupedValues).
    public func groupedValues(of tag: LibraryTag, groups: [LibraryTag], where filter: LibraryFilter)
        throws(QueryError) -> [[String]] {
        try reading { database throws(SQLiteError) in
            try database.groupedValues(of: tag, groups: groups, where: filter)
        }
    }

    /// Whether the library has the folder `folder` (relative to the music folders).
    public func hasFolder(_ folder: String) throws(QueryError) -> Bool {
        try reading { database throws(SQLiteError) in try database.hasFolder(folder) }
    }

    /// The values of `tag` among the tracks `filter` (a filter expression's) matches.
    public func values(of tag: LibraryTag, where filter: LibraryFilter) throws(QueryError) -> [String] {
        try reading { database throws(SQLiteError) in try database.values(of: tag, where: filter) }
    }

    /// The folders and files of the library folder `path` (relative to the music folders; nil for the top).
    public func listing(_ path: TrackPath?) throws(QueryError) -> (folders: [[UInt8]], files: [LibraryEntry]) {
        var folder = path?.bytes ?? []
        while folder.last == UInt8(ascii: "/") { folder.removeLast() }
        for root in roots {
            if let inside = LibraryScanner.scope(of: path, in: root), path?.bytes.first == UInt8(ascii: "/") {
                folder = inside
                break
            }
        }
        let relative = folder
        return try reading { database throws(SQLiteError) in try database.listing(relative) }
    }
}
