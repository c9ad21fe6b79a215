// LibraryWatcher: inotify on every folder of the music folders, so that a file added, replaced, renamed, moved or
// deleted, and a folder moved in or out, reach the library without `earshot update`. A thread of its own
// ("earshot-watch", nice 19) reads the events and notes the folders they touched; once the folders have been quiet
// for `quietNanoseconds` (or `longestWaitNanoseconds` after the first change, for a copy that never pauses), it asks
// the library to scan those folders, which reads only what changed. A thousand files changed at once become one scan
// per folder, or one whole scan past `mostFolders`. New folders are watched as they appear; folders are entered once,
// by device and inode, as the scanner does. When the kernel's watch limit is reached, or its queue overflows, the
// library is scanned whole and the watcher says so in its report.
//
// The music folders' own paths can change with no event in the folders watched: a disk unmounted or mounted there, the
// folder deleted, renamed or made again. The watcher looks at each path again (one stat) only when something says it
// may have changed, never on a timer, so that a paused service sleeps: the mount table changing (`/proc/self/mountinfo`
// polls with POLLPRI on every mount and unmount), an event in the folder that holds a music folder naming it, or the
// music folder's own watch reporting it deleted, moved or unmounted. A path that now leads elsewhere asks for a whole
// scan, and what it leads to is watched. A music folder whose parent is missing too is seen again at the next mount
// change or `earshot update`.
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
    /// What each music folder's path was (device and inode; nil when missing) when last looked at.
    private var rootIdentities: [[UInt8]: FileIdentity?] = [:]
    /// The watches on the folders that hold the music folders, with the names of the music folders in each.
    private var parentWatches: [Int32: Set<[UInt8]>] = [:]
    /// The mount table, polled for its changes (-1 when it cannot be opened: mounts are then seen at `update`).
    private let mountTable: Int32

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
        mountTable = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
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
            for root in roots {
                rootIdentities[root.bytes] = Self.identity(of: root.bytes)
                watchParent(of: root.bytes)
                watchTree(root.bytes)
            }
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

    /// The events in a music folder's parent that may change what the music folder's path leads to.
    private static let parentMask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR
        | IN_MASK_ADD)

    /// Watches the folder that holds the music folder `root`, for events naming it (added to whatever watch that
    /// folder already has, when it is a music folder itself).
    private func watchParent(of root: [UInt8]) {
        guard let slash = root.lastIndex(of: UInt8(ascii: "/")) else { return }
        let parent = slash == root.startIndex ? [UInt8(ascii: "/")] : Array(root[..<slash])
        let cPath = parent.map { CChar(bitPattern: $0) } + [0]
        let descriptor = inotify_add_watch(inotify, cPath, Self.parentMask)
        guard descriptor >= 0 else { return }
        parentWatches[descriptor, default: []].insert(Array(root[(slash + 1)...]))
    }

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
            if mountTable >= 0 { close(mountTable) }
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
                               pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: mountTable, events: Int16(POLLPRI), revents: 0)]
            let ready = poll(&descriptors, mountTable >= 0 ? 3 : 2, timeout)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return }
            if descriptors[1].revents != 0 { return }
            // The mount table changed (POLLPRI with POLLERR, until the next change): a disk mounted or unmounted.
            if mountTable >= 0 && descriptors[2].revents & Int16(POLLPRI | POLLERR) != 0 { checkRoots() }
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

    /// Looks at the music folders' paths again, and asks for a whole scan when one leads elsewhere now.
    private func checkRoots() {
        if rootsChanged() { changed(.everything(reason: "musicFolderChanged")) }
    }

    /// Whether a music folder's path now leads elsewhere than when last looked at (a disk unmounted or mounted
    /// there, the folder deleted or made again); what it leads to now is watched.
    private func rootsChanged() -> Bool {
        var anyChanged = false
        for root in roots {
            let now = Self.identity(of: root.bytes)
            guard rootIdentities[root.bytes] != now else { continue }
            rootIdentities[root.bytes] = now
            anyChanged = true
            watchParent(of: root.bytes)
            if now != nil { watchTree(root.bytes) }
        }
        return anyChanged
    }

    /// The device and inode of the folder at `path` (followed through links); nil when there is none.
    private static func identity(of path: [UInt8]) -> FileIdentity? {
        var status = stat()
        guard LibraryScanner.status(path, &status, follow: true), status.st_mode & S_IFMT == S_IFDIR else { return nil }
        return FileIdentity(status)
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
            // An event in a music folder's parent naming it: the music folder made, deleted or renamed.
            if parentWatches[descriptor]?.contains(name) == true { checkRoots() }
            if mask & UInt32(IN_IGNORED) != 0 { parentWatches[descriptor] = nil }
            guard let folder = folders[descriptor] else { continue }
            if mask & UInt32(IN_IGNORED) != 0 {
                forget(descriptor)
                // A music folder's own watch gone (its disk unmounted, perhaps mounted again before this was read):
                // whatever the path leads to now is watched, and looked at.
                if roots.contains(where: { $0.bytes == folder }) {
                    watchTree(folder)
                    checkRoots()
                }
                continue
            }
            if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 {
                // The folder itself went: its parent's scan (which the parent's own event asks for) removes its files;
                // a music folder itself going is looked at now.
                if roots.contains(where: { $0.bytes == folder }) { checkRoots() }
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
