// MPD's stored playlists as `.m3u` files in one folder of Earshot's data (configuration `playlistDirectory`, by
// default `$XDG_DATA_HOME/earshot/playlists`): one absolute path a line, written whole to a temporary file and renamed
// over the old one, so that a reader never sees half a playlist. Read with TrackPaths' M3U reader (comments skipped,
// relative lines taken from the folder), so a playlist written by another program loads too. Runs on an MPD client's
// thread, which may wait for the disk; the owner never does.
import Glibc
import Synchronization
import SystemSupport
import TrackPaths

/// The folder of stored playlists and the operations MPD's commands make on it.
struct MPDStoredPlaylists: Sendable {
    /// The folder, absolute.
    let directory: String

    /// What went wrong, in MPD's terms.
    enum Failure: Error, Equatable {
        /// The name is empty, holds a slash or a line break, or starts with a dot.
        case badName
        /// No playlist has that name.
        case noSuchPlaylist
        /// A playlist of that name exists already.
        case exists
        /// A position past the playlist's end.
        case badIndex
        /// The disk refused (the reason's kind, never a path).
        case system(String)
    }

    /// The default folder: `$XDG_DATA_HOME/earshot/playlists`, else `~/.local/share/earshot/playlists`.
    static func defaultDirectory(environment: [String: String]) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/earshot/playlists" }
        return (environment["HOME"] ?? "/") + "/.local/share/earshot/playlists"
    }

    /// Whether `name` can name a playlist file (MPD refuses slashes and line breaks; a dot first would hide it).
    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && name.utf8.count <= 200
            && !name.unicodeScalars.contains { $0 == "/" || $0 == "\n" || $0 == "\r" || $0 == "\0" }
    }

    private func file(_ name: String) -> String { directory + "/" + name + ".m3u" }

    /// The playlists by name, with their last change as MPD writes it (`2026-12-07T00:45:00Z`), sorted by name.
    func list() -> [(name: String, modified: String)] {
        guard let folder = opendir(directory) else { return [] }
        defer { closedir(folder) }
        var found: [(String, String)] = []
        while let entry = readdir(folder) {
            let name = String(decoding: DirectoryListing.entryName(entry), as: UTF8.self)
            guard name.hasSuffix(".m3u"), !name.hasPrefix(".") else { continue }
            let playlist = String(name.dropLast(4))
            var info = stat()
            guard stat(file(playlist), &info) == 0 else { continue }
            found.append((playlist, Self.timestamp(info.st_mtim.tv_sec)))
        }
        return found.sorted { $0.0 < $1.0 }
    }

    /// The paths of playlist `name`.
    func read(_ name: String) -> Result<[TrackPath], Failure> {
        guard Self.isValid(name) else { return .failure(.badName) }
        let descriptor = open(file(name), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(errno == ENOENT ? .noSuchPlaylist : .system("open")) }
        defer { close(descriptor) }
        var reader = M3UReader()
        var paths: [TrackPath] = []
        let folder = TrackPath(directory + "/")
        func take(_ entry: M3UEntry) {
            guard case .path(let path) = entry else { return }
            // An absolute path or a station's URL stays as written; anything else is relative to the folder.
            let kept = path.bytes.first == 0x2F || path.isStreamURL
            paths.append(kept ? path : TrackPath(bytes: folder.bytes + path.bytes) ?? path)
        }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return .failure(.system("read")) }
            if count == 0 { break }
            reader.feed(Array(chunk[..<count]), take)
        }
        reader.finish(take)
        return .success(paths)
    }

    /// Writes `paths` as playlist `name`; `mustBeNew` refuses a name in use (MPD's `save`).
    func write(_ name: String, _ paths: [TrackPath], mustBeNew: Bool = false) -> Result<Void, Failure> {
        guard Self.isValid(name) else { return .failure(.badName) }
        if mkdirs(directory) != 0 { return .failure(.system("mkdir")) }
        if mustBeNew, access(file(name), F_OK) == 0 { return .failure(.exists) }
        // A temporary file of this write's own (two clients may save at once), renamed over the playlist.
        var template = Array((directory + "/." + name + ".m3u.XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return .failure(.system("open")) }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var bytes: [UInt8] = []
        for path in paths where !path.bytes.contains(0x0A) && !path.bytes.contains(0x0D) {
            bytes += path.bytes
            bytes.append(0x0A)
        }
        var written = 0
        // An MPD client's thread, never the owner's: it may wait for the disk.
        WaitGuard.check("a stored playlist written to disk")
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(descriptor)
                unlink(temporary)
                return .failure(.system("write"))
            }
            written += count
        }
        WaitGuard.check("a stored playlist synced to disk")
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard synced, Glibc.rename(temporary, file(name)) == 0 else {
            unlink(temporary)
            return .failure(.system("rename"))
        }
        return .success(())
    }

    /// Changes playlist `name` by `change`; a missing playlist is MPD's "No such playlist" unless `create`.
    func modify(_ name: String, create: Bool = false,
                _ change: (inout [TrackPath]) -> Result<Void, Failure>) -> Result<Void, Failure> {
        // One change at a time across every client's thread: two clients adding to one playlist keep both additions.
        Self.changing.withLock { _ in modifyAlone(name, create: create, change) }
    }

    /// Serialises `modify`s (a read, a change and a write) in this process.
    private static let changing = Mutex(())

    private func modifyAlone(_ name: String, create: Bool,
                             _ change: (inout [TrackPath]) -> Result<Void, Failure>) -> Result<Void, Failure> {
        var paths: [TrackPath]
        switch read(name) {
        case .success(let existing): paths = existing
        case .failure(.noSuchPlaylist) where create: paths = []
        case .failure(let failure): return .failure(failure)
        }
        if case .failure(let failure) = change(&paths) { return .failure(failure) }
        WaitGuard.check("a stored playlist written to disk")
        return write(name, paths)
    }

    /// Deletes playlist `name`.
    func remove(_ name: String) -> Result<Void, Failure> {
        guard Self.isValid(name) else { return .failure(.badName) }
        guard unlink(file(name)) == 0 else { return .failure(errno == ENOENT ? .noSuchPlaylist : .system("unlink")) }
        return .success(())
    }

    /// Renames playlist `name` to `newName`, which must be free.
    func rename(_ name: String, to newName: String) -> Result<Void, Failure> {
        guard Self.isValid(name), Self.isValid(newName) else { return .failure(.badName) }
        guard access(file(name), F_OK) == 0 else { return .failure(.noSuchPlaylist) }
        guard access(file(newName), F_OK) != 0 else { return .failure(.exists) }
        guard Glibc.rename(file(name), file(newName)) == 0 else { return .failure(.system("rename")) }
        return .success(())
    }

    /// Makes `path` and its parents (mode 0700); 0 when it exists after.
    private func mkdirs(_ path: String) -> Int32 {
        if access(path, F_OK) == 0 { return 0 }
        let parent = PathText.directory(of: path)
        if parent != path, !parent.isEmpty, parent != "/" { _ = mkdirs(parent) }
        return mkdir(path, 0o700) == 0 || errno == EEXIST ? 0 : -1
    }

    /// Seconds since 1970 as MPD's `Last-Modified` (UTC, ISO 8601).
    static func timestamp(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
