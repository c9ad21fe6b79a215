// LibraryWatcher: inotify on every folder of the music folders, so that a file added, replaced, renamed, moved or
// deleted, and a folder moved in or out, reach the library without `earshot update`. A thread of its own
// ("earshot-watch", nice 19) reads the events and notes the folders they touched; once the folders have been quiet
// for `quietNanoseconds` (or `longestWaitNanoseconds` after the first change, for a copy that never pauses), it asks
// the library to scan those folders, which reads only what changed. A thousand files changed at once become one scan
// per folder, or one whole scan past `mostFolders`. New folders are watched as they appear; folders are entered once,
// by device and inode, as the scanner does. When the kernel's watch limit is reached, or its queue overflows, the
// library is scanned whole and the watcher says so in its report.
import Glibc
import SystemSupport
import TrackPaths

/// Watches the music folders and asks for scans of what changed.
final class LibraryWatcher: @unchecked Sendable {
    // Unchecked Sendable: everything but `wakeWriter` is used on the watcher's thread only; `stop` writes one byte
    // to the pipe.

    /// How long the folders must be quiet before a scan.
    static let quietNanoseconds: UInt64 = 200_000_000
    /// The longest a change waits for its scan, however busy the folders are.
    static let longestWaitNanoseconds: UInt64 = 700_000_000
    /// More changed folders than this are scanned as the whole library.
    static let mostFolders = 64

    /// What changed, for the library: folders (absolute paths) to scan, or everything.
    enum Change: Equatable {
        case folders([TrackPath])
        case everything(reason: String)
    }

    private let roots: [TrackPath]
    private let changed: @Sendable (Change) -> Void
    private let inotify: Int32
    private let wakeReader: Int32
    private let wakeWriter: Int32
    /// The folder each watch descriptor watches, as an absolute path.
    private var folders: [Int32: [UInt8]] = [:]
    /// The identity of each watched folder, and of all of them (a folder is watched once, whatever leads to it).
    private var identities: [Int32: FileIdentity] = [:]
    private var watched = Set<FileIdentity>()
    /// Whether a watch could not be added (the kernel's limit): changes there are not seen.
    private(set) var incomplete = false

    /// A watcher of `roots` telling `changed` what to scan; nil when inotify is not available.
    init?(roots: [TrackPath], changed: @escaping @Sendable (Change) -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            close(descriptor)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        inotify = descriptor
        wakeReader = ends[0]
        wakeWriter = ends[1]
        self.roots = roots
        self.changed = changed
    }

    /// Adds the watches and starts the thread.
    func start() {
        SystemThread.start(named: "earshot-watch") { [self] in
            // Nice 19, not SCHED_IDLE as the scan: it does little, but a loaded machine must not starve it for long.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
            for root in roots { watchTree(root.bytes) }
            run()
        }
    }

    /// Stops the thread (it closes its descriptors).
    func stop() {
        var byte: UInt8 = 1
        // One byte into an empty pipe: it does not wait in practice, but a write(2) may, so it asks the guard.
        WaitGuard.check("the library watcher's wake-up")
        _ = write(wakeWriter, &byte, 1)
    }

    /// The events that change what a folder holds.
    private static let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// Watches `folder` and every folder below it not yet watched (hidden ones skipped, each entered once).
    private func watchTree(_ folder: [UInt8]) {
        var pending = [folder]
        while let next = pending.popLast() {
            var status = stat()
            guard LibraryScanner.status(next, &status, follow: true), status.st_mode & S_IFMT == S_IFDIR,
                  watched.insert(FileIdentity(status)).inserted else { continue }
            let cPath = next.map { CChar(bitPattern: $0) } + [0]
            let descriptor = inotify_add_watch(inotify, cPath, Self.mask)
            guard descriptor >= 0 else {
                if errno == ENOSPC { incomplete = true }
                continue
            }
            folders[descriptor] = next
            identities[descriptor] = FileIdentity(status)
            for name in LibraryScanner.names(in: next) ?? [] where name.first != UInt8(ascii: ".") {
                pending.append(LibraryScanner.join(next, name))
            }
        }
    }

    private func run() {
        defer {
            close(inotify)
            close(wakeReader)
            close(wakeWriter)
        }
        if incomplete { changed(.everything(reason: "watchLimit")) }
        var touched = Set<[UInt8]>()
        var overflowed = false
        var firstChange: UInt64 = 0
        var lastChange: UInt64 = 0
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            var timeout: Int32 = -1
            if !touched.isEmpty || overflowed {
                let now = Condition.monotonicNanoseconds()
                let due = min(lastChange + Self.quietNanoseconds, firstChange + Self.longestWaitNanoseconds)
                if now >= due {
                    if overflowed || touched.count > Self.mostFolders {
                        changed(.everything(reason: overflowed ? "queueOverflow" : "manyFolders"))
                    } else {
                        changed(.folders(touched.sorted { $0.lexicographicallyPrecedes($1) }
                            .compactMap { TrackPath(bytes: $0) }))
                    }
                    touched.removeAll()
                    overflowed = false
                    continue
                }
                timeout = Int32((due - now) / 1_000_000) + 1
            }
            var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return }
            if descriptors[1].revents != 0 { return }
            guard descriptors[0].revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            let now = Condition.monotonicNanoseconds()
            if touched.isEmpty && !overflowed { firstChange = now }
            lastChange = now
            overflowed = note(buffer[..<count], into: &touched) || overflowed
        }
    }

    /// Notes the folders the events in `bytes` touched, and watches new folders; true when the kernel's queue
    /// overflowed (events were lost).
    private func note(_ bytes: ArraySlice<UInt8>, into touched: inout Set<[UInt8]>) -> Bool {
        var overflowed = false
        var offset = bytes.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.endIndex {
            func field(_ at: Int) -> UInt32 {
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + at + $1]) << (8 * $1) }
            }
            let descriptor = Int32(bitPattern: field(0))
            let mask = field(4)
            let length = Int(field(12))
            let nameBytes = bytes[(offset + header)..<min(bytes.endIndex, offset + header + length)]
            let name = Array(nameBytes.prefix { $0 != 0 })
            offset += header + length
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                overflowed = true
                continue
            }
            guard let folder = folders[descriptor] else { continue }
            if mask & UInt32(IN_IGNORED) != 0 {
                forget(descriptor)
                continue
            }
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                // The folder itself went: its parent's scan (which the parent's own event asks for) removes its files.
                continue
            }
            guard name.first != UInt8(ascii: ".") else { continue }
            touched.insert(folder)
            guard mask & UInt32(IN_ISDIR) != 0 else { continue }
            let path = LibraryScanner.join(folder, name)
            // A folder moved away keeps its watches, under its old name: they go, and it is watched again under the
            // new name if it moved within the music folders.
            if mask & UInt32(IN_MOVED_FROM) != 0 { unwatchTree(path) }
            if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { watchTree(path) }
        }
        return overflowed
    }

    /// Removes the watches of `path` and of every folder below it.
    private func unwatchTree(_ path: [UInt8]) {
        let below = path + [UInt8(ascii: "/")]
        for (descriptor, folder) in folders where folder == path || folder.starts(with: below) {
            inotify_rm_watch(inotify, descriptor)
            forget(descriptor)
        }
    }

    /// Forgets the watch `descriptor` (removed, or its folder gone).
    private func forget(_ descriptor: Int32) {
        folders[descriptor] = nil
        if let identity = identities.removeValue(forKey: descriptor) { watched.remove(identity) }
    }
}
