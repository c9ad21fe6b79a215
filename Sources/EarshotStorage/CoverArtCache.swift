// CoverArtCache: the cover pictures of the tracks played, each written once to
// `$XDG_CACHE_HOME/earshot/art/<sha256>.<ext>` (default `~/.cache/earshot/art/`) so that MPRIS can name it as
// `mpris:artUrl`. Writes are atomic (a temporary file renamed into place), and the folder is kept under
// `capacityBytes`: the pictures used longest ago (by modification time, refreshed on every use) go first.
//
// It runs on a thread of its own (`CoverArtWorker`, below), at the lowest CPU priority, never on the decode thread or
// the owner's: the owner hands a started track's picture over (its location in the file, or the bytes a tag held
// inline) without waiting, the worker reads, hashes and writes it, and only the cached file's path travels back
// through the owner's inbox. The bytes are held only while one track's picture is being stored.
//
// The digest is the Swift SHA-256 of ContentHash.swift. Measured on an 8 MiB picture on the 2-core test machine: 46-51
// ms in a release build (1.45 s unoptimised), against 6-25 ms for libgcrypt's (SHA-NI) and 52-115 ms for libmd's, both
// already mapped into the process (through libsystemd and libbsd). libgcrypt would be faster, but reaching it means a
// new C target and build dependency, or a dlsym on a library the process holds only because libsystemd happens to link
// it today (newer systemd loads it on demand); at one digest per new picture, on a thread nobody waits for, 50 ms is
// not worth either.
import AudioPipeline
import EarshotService
import Glibc
import Synchronization
import SystemSupport
import TrackPaths

/// The cover-art folder: pictures by content hash, bounded in total size.
public final class CoverArtCache: @unchecked Sendable {
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
    public convenience init(environment: [String: String]) {
        self.init(directory: XDGDirectory.cacheHome(environment: environment) + "/earshot/art")
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
            WaitGuard.check("a cover picture's write to the disk")
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

/// The cover worker: stores the pictures handed to it in a `CoverArtCache`, one at a time and in order, on a thread of
/// its own ("earshot-covers") at the lowest CPU priority, and reports each outcome through `report`.
///
/// The hand-over is lock-free, like the frame ring's: the owner (the one producer) fills a slot and publishes it with a
/// releasing store of its index, then posts a semaphore; the worker (the one consumer) acquires the index, takes the
/// slot and frees it with a releasing store of its own index. No lock is shared with the owner, so a worker that the
/// scheduler leaves waiting (it runs only when nothing else wants the CPU) can never hold the owner up.
public final class CoverArtWorker: CoverArtStoring, @unchecked Sendable {
    // Unchecked Sendable: each slot is written only by the producer while it lies in [taken + slotCount, handed) and
    // read only by the consumer in [taken, handed), handed over by the acquire/release pairs on the two indices;
    // everything else is immutable after `init`.

    /// One picture to store (the owner's `CoverArtJob`).
    public typealias Job = CoverArtJob

    /// How many pictures may wait; beyond that a new one is dropped (the worker is far behind, and the track gets its
    /// picture when it next starts).
    static let slotCount = 8

    /// Where pictures are stored.
    private let cache: CoverArtCache
    /// Receives each outcome, on the worker's thread.
    private let report: @Sendable (Job, CoverArtOutcome) -> Void
    /// The waiting jobs, `slotCount` of them, each retained while it waits.
    private let slots: UnsafeMutablePointer<Unmanaged<JobBox>?>
    /// Jobs ever handed over. Written only by the producer.
    private let handed = Atomic<Int>(0)
    /// Jobs ever taken. Written only by the worker.
    private let taken = Atomic<Int>(0)
    /// Posted once per job handed over; the worker sleeps on it.
    private let jobsWaiting: UnsafeMutablePointer<sem_t>

    /// A job in a slot (slots hold references, as raw storage must).
    private final class JobBox {
        let job: Job
        init(_ job: Job) { self.job = job }
    }

    /// Starts the worker thread, idle until a job is handed over.
    public init(cache: CoverArtCache, report: @escaping @Sendable (Job, CoverArtOutcome) -> Void) {
        self.cache = cache
        self.report = report
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: nil, count: Self.slotCount)
        jobsWaiting = .allocate(capacity: 1)
        sem_init(jobsWaiting, 0, 0)
        // The thread keeps the worker for the process's life: the player it serves lives as long.
        SystemThread.start(named: "earshot-covers") { [self] in
            SystemThread.makeIdle()
            run()
        }
    }

    /// Hands `job` over and returns at once; false when every slot is taken (the job is dropped). One caller at a
    /// time (the owner).
    @discardableResult
    public func submit(_ job: Job) -> Bool {
        // Relaxed: our own index.
        let next = handed.load(ordering: .relaxed)
        // Acquiring pairs with the worker's releasing store in `run`: once we see a slot freed, the worker is done
        // with it.
        guard next - taken.load(ordering: .acquiring) < Self.slotCount else { return false }
        slots[next % Self.slotCount] = Unmanaged.passRetained(JobBox(job))
        // Releasing: the slot's store happens before the worker can see the new index with its acquiring load.
        handed.store(next + 1, ordering: .releasing)
        sem_post(jobsWaiting)
        return true
    }

    /// The thread's body: take each job in order, store its picture, report.
    private func run() {
        while true {
            WaitGuard.check("the cover store's wait for a job")
            while sem_wait(jobsWaiting) != 0 {}
            let index = taken.load(ordering: .relaxed)
            // Acquiring pairs with `submit`'s release: the slot holds the job published with that index.
            guard index < handed.load(ordering: .acquiring), let box = slots[index % Self.slotCount] else { continue }
            slots[index % Self.slotCount] = nil
            // Releasing: we are done with the slot before the owner may fill it again.
            taken.store(index + 1, ordering: .releasing)
            let job = box.takeRetainedValue().job
            report(job, cache.store(job.picture))
        }
    }
}
