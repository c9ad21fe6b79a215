// CoverArtCache: the cover pictures of the tracks played, each written once to
// `$XDG_CACHE_HOME/earshot/art/<sha256>.<ext>` (default `~/.cache/earshot/art/`) so that MPRIS can name it as
// `mpris:artUrl`. Writes are atomic (a temporary file renamed into place), and the folder is kept under
// `capacityBytes`: the pictures used longest ago (by modification time, refreshed on every use) go first.
//
// It runs on the decode thread (`settle`, called from the worker's notice handler), never on the owner's inbox: a
// picture is read from its file, hashed and written there, and only the cached file's path travels on. The bytes are
// held only while one track's picture is being stored.
import AudioPipeline
import Glibc
import SystemSupport
import TrackPaths

/// What became of a track's cover picture.
enum CoverArtOutcome: Equatable, Sendable {
    /// Stored (or found stored) at this path.
    case stored(TrackPath)
    /// Not stored, for this reason (no path, no tag text): too large, malformed, unreadable, or the cache failed.
    case skipped(String)
}

/// The cover-art folder: pictures by content hash, bounded in total size.
final class CoverArtCache: @unchecked Sendable {
    // Unchecked Sendable: `directory` and `capacityBytes` are immutable; `lock` guards `recent` and serializes all
    // file-system work (one decode thread calls, but tests may call from several).
    private let lock = Lock()

    /// The folder holding the pictures.
    let directory: String
    /// The most bytes the folder's pictures may take together (64 MiB by default).
    let capacityBytes: Int
    /// The cached path of pictures stored lately, by where they were read from, so that the `.trackStarted` of every
    /// seek does not read and hash the same picture again. Guarded by `lock`; bounded.
    private var recent: [String: TrackPath] = [:]

    /// The default bound on the folder's size.
    static let defaultCapacityBytes = 64 << 20
    /// The prefix of temporary files; a leftover is removed when the folder is next trimmed.
    static let temporaryPrefix = ".tmp-"

    /// A cache in `directory` (created, mode 0700, on the first store).
    init(directory: String, capacityBytes: Int = CoverArtCache.defaultCapacityBytes) {
        self.directory = directory
        self.capacityBytes = capacityBytes
    }

    /// The cache in `$XDG_CACHE_HOME/earshot/art`, or `~/.cache/earshot/art`.
    convenience init(environment: [String: String]) {
        self.init(directory: XDGDirectory.cacheHome(environment: environment) + "/earshot/art")
    }

    /// `notice` with a `.trackStarted`'s picture stored and taken out of its metadata, and what became of it.
    func settle(_ notice: DecodeNotice) -> (notice: DecodeNotice, cover: CoverArtOutcome?) {
        guard case .trackStarted(let index, let ringFrame, let format, let lengthFrames, var metadata) = notice else {
            return (notice, nil)
        }
        let outcome = metadata.cover.map(store) ?? metadata.coverProblem.map { .skipped($0) }
        metadata.cover = nil
        return (.trackStarted(index: index, ringFrame: ringFrame, format: format, lengthFrames: lengthFrames,
                              metadata: metadata), outcome)
    }

    /// Stores `picture` (unless a file with its content is there already) and returns its path.
    func store(_ picture: CoverPicture) -> CoverArtOutcome {
        lock.lock()
        defer { lock.unlock() }
        let key = Self.sourceKey(picture)
        if let key, let path = recent[key], path.withCString({ access($0, F_OK) }) == 0 {
            touch(path)
            return .stored(path)
        }
        guard picture.byteCount <= CoverPicture.maximumBytes else { return .skipped("picture too large") }
        guard let bytes = picture.load() else { return .skipped("picture unreadable (the file changed)") }
        let name = ContentHash.sha256Hex(bytes) + "." + Self.fileExtension(picture.mimeType)
        let path = directory + "/" + name
        var status = stat()
        if stat(path, &status) == 0 && Int(status.st_size) == bytes.count {
            touch(TrackPath(path))
        } else if let failure = write(bytes, to: path) {
            return .skipped("cache not written (\(failure))")
        }
        trim(keeping: name)
        if let key {
            if recent.count >= 64 { recent.removeAll() }
            recent[key] = TrackPath(path)
        }
        return .stored(TrackPath(path))
    }

    /// The file name ending for a MIME type: jpg, png, gif or webp, else bin.
    static func fileExtension(_ mimeType: String) -> String {
        switch mimeType {
        case "image/jpeg", "image/jpg": return "jpg"
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        default: return "bin"
        }
    }

    /// Where a picture in a file comes from, with the file's size and modification time (a rewritten file is read
    /// again); nil for a picture in memory.
    private static func sourceKey(_ picture: CoverPicture) -> String? {
        guard case .inFile(let path, let offset) = picture.bytes else { return nil }
        var status = stat()
        guard path.withCString({ stat($0, &status) }) == 0 else { return nil }
        return "\(path.bytes) \(offset) \(picture.byteCount) \(status.st_size) \(status.st_mtim.tv_sec)"
            + ".\(status.st_mtim.tv_nsec)"
    }

    /// Writes `bytes` to a temporary file and renames it to `path`; the failed step and its reason, or nil.
    private func write(_ bytes: [UInt8], to path: String) -> String? {
        // The reason only, never the path: it reaches the default-level log.
        if let failure = PrivateDirectory.create(directory) {
            return "create directory: " + String(cString: strerror(failure.code))
        }
        let temporary = directory + "/" + Self.temporaryPrefix + "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return "create: " + String(cString: strerror(errno)) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(descriptor)
                unlink(temporary)
                return "write: " + reason
            }
            offset += count
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return "rename: " + reason
        }
        return nil
    }

    /// Marks `path` as used now, so the trimming keeps it longest.
    private func touch(_ path: TrackPath) {
        _ = path.withCString { utimensat(AT_FDCWD, $0, nil, 0) }
    }

    /// Removes the pictures used longest ago until the folder is within `capacityBytes`, never `kept` (the one just
    /// stored), and any leftover temporary file.
    private func trim(keeping kept: String) {
        guard let names = DirectoryListing.names(in: directory) else { return }
        var files: [(name: String, size: Int, used: timespec)] = []
        var total = 0
        for name in names {
            let path = directory + "/" + name
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            if name.hasPrefix(Self.temporaryPrefix) && !name.hasPrefix(Self.temporaryPrefix + "\(getpid())-") {
                unlink(path)
                continue
            }
            total += Int(status.st_size)
            if name != kept { files.append((name, Int(status.st_size), status.st_mtim)) }
        }
        files.sort { ($0.used.tv_sec, $0.used.tv_nsec, $0.name) < ($1.used.tv_sec, $1.used.tv_nsec, $1.name) }
        for file in files where total > capacityBytes {
            if unlink(directory + "/" + file.name) == 0 { total -= file.size }
        }
    }
}
