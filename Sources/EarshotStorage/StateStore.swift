// The state that survives restarts, in `$XDG_STATE_HOME/earshot` (default `~/.local/state/earshot`), in two files
// because they change at different rates:
// - `state.json`: the queue, with the track, position and volume as they were when it was written. Written when the
//   queue changes and at a clean exit, atomically and durably: the new state goes to a temporary file in the same
//   directory, is flushed to disk (fsync), renamed over `state.json`, and then the directory itself is flushed so the
//   rename survives a power cut. A reader sees either the old file or the new one, never a half-written one, even if
//   the service is killed mid-write; a leftover temporary file is ignored (and removed on the next load).
// - `position.json`: the track, position and volume alone, with the id of the queue they belong to (SavedPosition).
//   Written often (every 2 s while playing, at every pause, seek and track change), in place and without fsync: a
//   few hundred bytes rewritten in one page, which the kernel writes back on its own schedule (see SavedPosition).
//   It wins over `state.json`'s own position when its queue id is that of `state.json`; a position file that is
//   missing, unreadable or of another queue (a queue change it never caught up with) leaves `state.json`'s.
// Compatibility: `state.json` keeps the single-file format of earlier versions (version 1) with one optional key more,
// `queueId`. A file without it (written by an earlier version) restores queue and position as before; the service
// then writes it again with an id (`PersistedState.queueId`), and an earlier version still reads the new file.
// The directory is private (0700) and the files 0600: a queue of file paths is personal.
//
// Paths are stored losslessly (TrackPath's JSON form): a string when the path is valid UTF-8, else an object
// `{"base64": "..."}` with its bytes, so a file name that is not UTF-8 is restored exactly.
//
// A `state.json` that cannot be read or decoded is not fatal: it is moved aside as `state.json.corrupt-<UTC time>` for
// the user to inspect, and the caller starts empty. The reason given never quotes the file's content.
import EarshotJSON
import EarshotService
import Glibc
import SystemSupport
import TrackPaths

extension PersistedState {
    /// The state as the file holds it: one line of compact JSON, keys sorted, slashes unescaped (a user inspecting
    /// the file should find it readable), ending in a newline. Written straight into bytes rather than through
    /// JSONEncoder, whose tree of every queued path would cost megabytes of a 10 000-track queue on each save.
    /// PersistedStateReading.swift reads it back (TrackPath's lossless form: a string, or `{"base64": ...}` for other
    /// bytes).
    func jsonLine() -> [UInt8] {
        var out: [UInt8] = []
        // The queue's bytes read in place (TrackList.pathBytes), so a save makes no TrackPath per track.
        out.reserveCapacity(96 + queue.indices.reduce(0) { $0 + queue.pathBytes(at: $1).count + 3 })
        // `consume` sorts first of all the keys; the other modes come after `queueId` (SavedPlayModesFile.swift).
        out += (playModes.consume ? #"{"consume":true,"# : "{").utf8
        out += #""positionMilliseconds":\#(positionMilliseconds),"queue":["#.utf8
        for index in queue.indices {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let bytes = queue.pathBytes(at: index)
            if Self.isValidUTF8(bytes) {
                JSONTree.appendString(bytes, escapingSlashes: false, to: &out)
            } else {
                out += #"{"base64":""#.utf8
                out += Base64.encode(bytes).utf8
                out += #""}"#.utf8
            }
        }
        out += "]".utf8
        if let queueId { out += #","queueId":\#(queueId)"#.utf8 }
        playModes.appendJSONFields(to: &out)
        out += #","trackIndex":\#(trackIndex),"version":\#(version),"volumePercent":\#(volumePercent)}"#.utf8
        out.append(0x0A)
        return out
    }

    /// Whether `bytes` are valid UTF-8, checked without making a String of them.
    private static func isValidUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .error: return false
            case .emptyInput: return true
            }
        }
    }
}

/// Why the state could not be saved.
public struct StateStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The step that failed, e.g. "create directory", "write", "rename".
    public var operation: String
    /// The path involved.
    public var path: String
    /// The system's error number.
    public var code: Int32

    /// An error for `operation` on `path` with `errno` value `code`.
    public init(operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// One line, e.g. `cannot save state (rename /home/u/.local/state/earshot/state.json): No space left on device`.
    public var description: String {
        "cannot save state (\(operation) \(path)): \(String(cString: strerror(code)))"
    }
}

/// Loads and saves `PersistedState` (`state.json`) and `SavedPosition` (`position.json`) in one directory.
/// Thread-safe: saves and loads are serialized. Every call may wait for the disk: the service calls it from its storage
/// writer's thread (`StateWriter`), never from the owner's.
public final class StateStore: @unchecked Sendable {
    // Unchecked Sendable: `directory` is immutable; `lock` serializes all file-system work (two saves never race on
    // the temporary file or the rename) and guards the position file's descriptor.
    private let lock = Lock()
    /// `position.json`, open for writing from its first save on (-1 before), so each save is one `pwrite`.
    private var positionDescriptor: Int32 = -1
    /// `position.json` was created by this store and the directory not flushed since: a durable save flushes it.
    private var positionEntryUnsynced = false

    /// The directory holding the state files.
    public let directory: String
    /// The state file's full path.
    public var filePath: String { directory + "/" + Self.fileName }
    /// The position file's full path.
    public var positionPath: String { directory + "/" + Self.positionFileName }

    /// The state file's name.
    public static let fileName = "state.json"
    /// The position file's name.
    public static let positionFileName = "position.json"
    /// The prefix of temporary files; anything starting with it is a leftover of an interrupted save.
    static let temporaryPrefix = "state.json.tmp-"
    /// The prefix of files moved aside as corrupt.
    public static let corruptPrefix = "state.json.corrupt-"
    /// The largest state file the store reads (a queue of ~100k paths); a larger one is reported as corrupt.
    static let maximumFileBytes = 64 << 20

    /// A store in `directory`, which is created (mode 0700) on the first save.
    public init(directory: String) {
        var trimmed = directory
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.directory = trimmed
    }

    /// The store in `$XDG_STATE_HOME/earshot`, or `~/.local/state/earshot` (the XDG default).
    public convenience init(environment: [String: String] = ProcessEnvironment.current) {
        self.init(directory: XDGDirectory.stateHome(environment: environment) + "/earshot")
    }

    deinit {
        if positionDescriptor >= 0 { close(positionDescriptor) }
    }

    // MARK: Loading

    /// Reads the saved state, with the track, position and volume of `position.json` when it belongs to it. A missing
    /// `state.json` is `.empty`; one that cannot be read, decoded or trusted is moved aside and reported as
    /// `.corrupt`. Also removes temporary files left by interrupted saves.
    public func load() -> StateLoadResult {
        lock.lock()
        defer { lock.unlock() }
        removeLeftoverTemporaryFiles()
        let reason: String
        switch Self.readFile(at: filePath, limit: Self.maximumFileBytes) {
        case .missing:
            return .empty
        case .bytes(let data):
            switch decode(data) {
            case .usable(let state):
                let (restored, problem) = withSavedPosition(state)
                return .restored(restored, positionFile: problem)
            case .unusable(let problem): reason = problem
            }
        case .unreadable(let problem):
            reason = problem
        }
        let kept = moveAside()
        return .corrupt(reason: reason, keptAs: kept ?? filePath)
    }

    /// `state` with the position file's track, position and volume, or why they were not taken.
    private func withSavedPosition(_ state: PersistedState) -> (PersistedState, PositionFileProblem?) {
        switch Self.readFile(at: positionPath, limit: SavedPosition.fileBytes) {
        case .missing:
            return (state, .absent)
        case .unreadable(let problem):
            return (state, .unusable(problem))
        case .bytes(let data):
            do {
                return state.taking(try SavedPosition(fileBytes: data))
            } catch {
                return (state, .unusable(error.reason))
            }
        }
    }

    enum ReadOutcome {
        case missing
        case bytes([UInt8])
        case unreadable(String)
    }

    /// The bytes of the regular file at `path`, read whole; more than `limit` bytes is a reason not to.
    static func readFile(at path: String, limit: Int) -> ReadOutcome {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return .missing }
            return .unreadable("cannot open: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .unreadable("cannot stat: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { return .unreadable("not a regular file") }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .unreadable("cannot read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { return .bytes(contents) }
            contents.append(contentsOf: chunk[..<count])
            if contents.count > limit { return .unreadable("larger than " + sizeText(limit)) }
        }
    }

    /// `bytes` as the reasons name a size: "64 MiB", "256 bytes".
    private static func sizeText(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }

    private enum DecodeOutcome {
        case usable(PersistedState)
        case unusable(String)
    }

    /// The state in `data`, or a reason that names at most a field, never a value.
    private func decode(_ data: [UInt8]) -> DecodeOutcome {
        if data.isEmpty { return .unusable("empty file") }
        let state: PersistedState
        do {
            state = try PersistedState(fileBytes: data)
        } catch {
            return .unusable(error.reason)
        }
        if let problem = state.inconsistency { return .unusable(problem) }
        return .usable(state)
    }

    /// Renames the state file to `state.json.corrupt-<UTC time>` (with a counter if that exists); returns the
    /// new path, or nil if it could not be moved (it is then left where it is).
    private func moveAside() -> String? {
        let stamp = Self.utcStamp()
        for attempt in 0..<100 {
            let candidate = directory + "/" + Self.corruptPrefix + stamp + (attempt == 0 ? "" : "-\(attempt)")
            // link + unlink rather than rename: rename would silently replace an earlier corrupt file.
            if link(filePath, candidate) == 0 {
                unlink(filePath)
                syncDirectory()
                return candidate
            }
            if errno == EEXIST { continue }
            // Hard links can be refused (some file systems, or a directory in the way): fall back to rename.
            if access(candidate, F_OK) != 0, rename(filePath, candidate) == 0 {
                syncDirectory()
                return candidate
            }
            return nil
        }
        return nil
    }

    /// The current UTC time as `20260130T075000Z` (no colons: they are awkward in file names).
    static func utcStamp() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return formatted(
            "%04ld%02ld%02ldT%02ld%02ld%02ldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    private func removeLeftoverTemporaryFiles() {
        guard let names = DirectoryListing.names(in: directory) else { return }
        for name in names where name.hasPrefix(Self.temporaryPrefix) {
            unlink(directory + "/" + name)
        }
    }

    // MARK: Saving

    /// Writes `state` as `state.json`, atomically (temporary file, fsync, rename, fsync of the directory). Blocks for
    /// the duration of the two disk flushes: typically milliseconds, longer on a busy disk.
    public func save(_ state: PersistedState) throws(StateStoreError) {
        let data = state.jsonLine()
        lock.lock()
        defer { lock.unlock() }
        try createDirectory()
        let temporary = directory + "/" + Self.temporaryPrefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StateStoreError(operation: "create", path: temporary, code: errno) }
        var written = false
        defer {
            if !written { unlink(temporary) }
        }
        do {
            defer { close(descriptor) }
            try writeAll(data, to: descriptor, path: temporary)
            WaitGuard.check("fsync")
            guard fsync(descriptor) == 0 else {
                throw StateStoreError(operation: "fsync", path: temporary, code: errno)
            }
        }
        guard rename(temporary, filePath) == 0 else {
            throw StateStoreError(operation: "rename", path: filePath, code: errno)
        }
        written = true
        syncDirectory()
    }

    /// Writes `position` over `position.json` in place: one `pwrite` of `SavedPosition.fileBytes` at offset 0, which a
    /// kill cannot tear (the kernel copies one page at once), with no fsync; when `durable` (a clean exit), then
    /// flushed to disk with its directory entry if this store created it.
    public func savePosition(_ position: SavedPosition, durable: Bool) throws(StateStoreError) {
        let data = position.fileBytes()
        lock.lock()
        defer { lock.unlock() }
        let descriptor = try openPositionFile()
        let count = data.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard count == data.count else {
            let code = count < 0 ? errno : EIO
            // Opened again on the next save: the file may have been replaced meanwhile.
            close(descriptor)
            positionDescriptor = -1
            throw StateStoreError(operation: "write", path: positionPath, code: code)
        }
        guard durable else { return }
        WaitGuard.check("fdatasync")
        guard fdatasync(descriptor) == 0 else {
            throw StateStoreError(operation: "fsync", path: positionPath, code: errno)
        }
        if positionEntryUnsynced {
            syncDirectory()
            positionEntryUnsynced = false
        }
    }

    /// The position file's descriptor, opening (and creating) it on the first save. A file of another length (from
    /// an earlier version, or damaged) is cut to one record's, so that no old bytes trail the record.
    private func openPositionFile() throws(StateStoreError) -> Int32 {
        if positionDescriptor >= 0 { return positionDescriptor }
        try createDirectory()
        var descriptor = open(positionPath, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 && errno == ENOENT {
            descriptor = open(positionPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if descriptor >= 0 { positionEntryUnsynced = true }
        }
        guard descriptor >= 0 else { throw StateStoreError(operation: "open", path: positionPath, code: errno) }
        var status = stat()
        let examined = fstat(descriptor, &status) == 0
        guard examined, status.st_mode & S_IFMT == S_IFREG else {
            // Not a regular file (a directory, a pipe someone put there): nothing to write a record over.
            let code = examined ? EINVAL : errno
            close(descriptor)
            throw StateStoreError(operation: "open", path: positionPath, code: code)
        }
        if Int(status.st_size) != SavedPosition.fileBytes {
            guard ftruncate(descriptor, off_t(SavedPosition.fileBytes)) == 0 else {
                let code = errno
                close(descriptor)
                throw StateStoreError(operation: "truncate", path: positionPath, code: code)
            }
        }
        positionDescriptor = descriptor
        return descriptor
    }

    private func writeAll(_ data: [UInt8], to descriptor: Int32, path: String) throws(StateStoreError) {
        var offset = 0
        while offset < data.count {
            WaitGuard.check("a state file's write to the disk")
            let count = data.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw StateStoreError(operation: "write", path: path, code: errno)
            }
            offset += count
        }
    }

    /// Creates the directory and its parents; the earshot directory itself is made (or made again) 0700.
    private func createDirectory() throws(StateStoreError) {
        if let failure = PrivateDirectory.create(directory) {
            throw StateStoreError(operation: "create directory", path: failure.path, code: failure.code)
        }
    }

    /// Flushes the directory entry changes (rename, unlink, create) to disk. Best effort: a failure here cannot undo
    /// the change, and the file itself is already safe.
    private func syncDirectory() {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        WaitGuard.check("fsync")
        fsync(descriptor)
        close(descriptor)
    }
}
