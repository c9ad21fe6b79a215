// LibraryScanner: walks the music folders and brings the database in line with them. What it takes and skips:
// - files whose names end as Earshot's formats do (AudioFileKind.fileExtensions), and `.m3u`/`.m3u8` playlists;
//   what a file is decided by its content when it is read, as for playing;
// - symbolic links are followed (to files and to folders) but each folder is entered once, by its device and inode,
//   so a link back up the tree or two links to one folder cannot loop or count twice;
// - names starting with "." (hidden files and folders) are skipped, as MPD skips them; other file systems mounted
//   inside a music folder are followed (MPD does too);
// - incremental: a file whose size and modification time are unchanged is not read again (`rescan` reads all);
// - what cannot be read (a folder or file without permission, a file that is no audio, a dangling link) is counted by
//   its reason and kept out of the results; nothing stops the scan but the database failing.
// Written in transactions of `batchSize` files, so readers see whole batches and a crash loses at most one.
import AudioPipeline
import Glibc
import SystemSupport
import TrackPaths

/// What a scan did, in counts.
public struct ScanCounts: Equatable, Sendable {
    /// Files read (new or changed) and recorded as tracks.
    public var read = 0
    /// Files whose size and modification time were unchanged.
    public var unchanged = 0
    /// Files recorded before and gone now.
    public var removed = 0
    /// Playlists found.
    public var playlists = 0
    /// Hidden files and folders skipped.
    public var hidden = 0
    /// Files and folders that could not be taken, by reason ("permission", "notAudio", "loop", ...).
    public var skipped: [String: Int] = [:]

    /// Creates empty counts.
    public init() {}

    /// All skipped files and folders.
    public var skippedTotal: Int { skipped.values.reduce(0, +) }
}

/// Walks music folders into a `LibraryDatabase`.
public struct LibraryScanner {
    /// Files written per transaction.
    static let batchSize = 256

    /// The music folders, as configured.
    public let roots: [TrackPath]

    /// A scanner of `roots`.
    public init(roots: [TrackPath]) {
        self.roots = roots
    }

    /// A file found by the walk.
    struct Candidate {
        var relativePath: [UInt8]
        var size: Int
        var modificationTime: Int
        var isPlaylist: Bool
    }

    /// Scans into `database`: every music folder, or only `below` (a relative path, or an absolute one inside a
    /// music folder). `rescan` reads every file again. `progress` is called with (files read, files to read) as the
    /// scan goes; `cancelled` is asked between files. Throws when the database fails.
    public func scan(
        into database: LibraryDatabase, below: TrackPath? = nil, rescan: Bool = false,
        progress: (Int, Int) -> Void = { _, _ in }, cancelled: () -> Bool = { false }
    ) throws(SQLiteError) -> ScanCounts {
        var counts = ScanCounts()
        // Forget music folders no longer configured (only on a whole scan).
        if below == nil {
            for (id, path) in try database.roots() where !roots.contains(path) { try database.removeRoot(id) }
        }
        var work: [(root: TrackPath, id: Int, files: [(Candidate, KnownFile?)], gone: [KnownFile])] = []
        for root in roots {
            guard let scope = Self.scope(of: below, in: root) else { continue }
            let id = try database.rootID(root)
            let known = try database.knownFiles(root: id)
            guard Self.isPresent(root, knowingFiles: !known.isEmpty) else {
                // Missing, unreadable, or empty while the library holds files of it: a disk unmounted (or not yet
                // mounted) far more often than a collection deleted, so its tracks are kept, and it is counted.
                counts.skipped["musicFolderGone", default: 0] += 1
                continue
            }
            var found: [Candidate] = []
            walk(root: root, from: scope, into: &found, counts: &counts)
            let (files, gone) = Self.merge(found, known, scope: scope)
            work.append((root, id, files, gone))
        }
        func unchanged(_ candidate: Candidate, _ known: KnownFile?) -> Bool {
            guard !rescan, let known else { return false }
            return known.size == candidate.size && known.modificationTime == candidate.modificationTime
        }
        let total = work.reduce(0) { sum, item in sum + item.files.count(where: { !unchanged($0.0, $0.1) }) }
        progress(0, total)
        var done = 0
        for item in work {
            var gone = item.gone
            var pending: [(LibraryEntry, Int?)] = []
            func flush() throws(SQLiteError) {
                guard !pending.isEmpty else { return }
                try database.inTransaction { () throws(SQLiteError) in
                    for (entry, old) in pending { try database.store(entry, root: item.id, replacing: old) }
                }
                pending.removeAll(keepingCapacity: true)
            }
            for (candidate, known) in item.files {
                if candidate.isPlaylist { counts.playlists += 1 }
                if unchanged(candidate, known) {
                    counts.unchanged += 1
                    continue
                }
                guard !cancelled() else { break }
                let entry = Self.read(candidate, root: item.root)
                if entry.failure == "vanished" {
                    // Gone between the walk and the read (deleted or moved mid-scan): counted, and forgotten as any
                    // file no longer there is (a move is seen where it went).
                    counts.skipped["vanished", default: 0] += 1
                    if let known { gone.append(known) }
                    done += 1
                    progress(done, total)
                    continue
                }
                if entry.kind == .failed {
                    counts.skipped[entry.failure ?? "unreadable", default: 0] += 1
                } else if !candidate.isPlaylist {
                    counts.read += 1
                }
                pending.append((entry, known?.id))
                done += 1
                if pending.count >= Self.batchSize { try flush() }
                progress(done, total)
            }
            try flush()
            guard !cancelled() else { break }
            if !gone.isEmpty {
                try database.inTransaction { () throws(SQLiteError) in
                    for file in gone { try database.deleteFile(file.id) }
                }
                counts.removed += gone.count
            }
        }
        return counts
    }

    /// Pairs the files found (sorted by path) with the files recorded (sorted the same way) in one pass: each found
    /// file with its record, if any, and the records of files no longer found inside `scope` (those outside it were
    /// not looked for).
    static func merge(_ found: [Candidate], _ known: [KnownFile], scope: [UInt8])
        -> (files: [(Candidate, KnownFile?)], gone: [KnownFile]) {
        let prefix = scope.isEmpty ? [] : scope + [UInt8(ascii: "/")]
        var files: [(Candidate, KnownFile?)] = []
        files.reserveCapacity(found.count)
        var gone: [KnownFile] = []
        var next = 0
        for candidate in found {
            while next < known.count, known[next].path.lexicographicallyPrecedes(candidate.relativePath) {
                let file = known[next]
                if scope.isEmpty || file.path.starts(with: prefix) || file.path == scope { gone.append(file) }
                next += 1
            }
            if next < known.count, known[next].path == candidate.relativePath {
                files.append((candidate, known[next]))
                next += 1
            } else {
                files.append((candidate, nil))
            }
        }
        for file in known[next...] where scope.isEmpty || file.path.starts(with: prefix) || file.path == scope {
            gone.append(file)
        }
        return (files, gone)
    }

    /// Reads every track of the music folders as a scan does (the same walk, the same reading), without a database:
    /// each entry, failed ones too, goes to `visit` in path order. What `earshot decode --tags` prints, which
    /// scripts/bench sets beside TagLib on the same files.
    public func readAll(_ visit: (LibraryEntry) -> Void) -> ScanCounts {
        var counts = ScanCounts()
        for root in roots {
            var found: [Candidate] = []
            walk(root: root, from: [], into: &found, counts: &counts)
            for candidate in found where !candidate.isPlaylist {
                let entry = Self.read(candidate, root: root)
                if entry.kind == .failed {
                    counts.skipped[entry.failure ?? "unreadable", default: 0] += 1
                } else {
                    counts.read += 1
                }
                visit(entry)
            }
        }
        return counts
    }

    /// The relative folder `below` names inside `root` ("" for all of it), or nil when it is not inside `root`.
    static func scope(of below: TrackPath?, in root: TrackPath) -> [UInt8]? {
        guard let below else { return [] }
        var bytes = below.bytes
        while bytes.last == UInt8(ascii: "/") && bytes.count > 1 { bytes.removeLast() }
        guard bytes.first == UInt8(ascii: "/") else { return bytes }
        var rootBytes = root.bytes
        while rootBytes.last == UInt8(ascii: "/") && rootBytes.count > 1 { rootBytes.removeLast() }
        if bytes == rootBytes { return [] }
        guard bytes.starts(with: rootBytes + [UInt8(ascii: "/")]) else { return nil }
        return Array(bytes.dropFirst(rootBytes.count + 1))
    }

    /// Whether the music folder `root` is there to scan: a folder that can be listed, and not empty when the library
    /// knows files of it (a mount point whose disk went away is an empty folder).
    static func isPresent(_ root: TrackPath, knowingFiles: Bool) -> Bool {
        var status = stat()
        guard Self.status(root.bytes, &status, follow: true), status.st_mode & S_IFMT == S_IFDIR,
              let names = names(in: root.bytes) else { return false }
        return !names.isEmpty || !knowingFiles
    }

    /// Collects the candidate files below `start` (relative) of `root`, depth first.
    func walk(root: TrackPath, from start: [UInt8], into found: inout [Candidate], counts: inout ScanCounts) {
        var visited = Set<FileIdentity>()
        // Below a folder, the folders above it count as entered: a link back up finds them seen, as a whole scan does.
        var above: [UInt8] = []
        for component in start.split(separator: UInt8(ascii: "/")).dropLast() {
            var status = stat()
            if Self.status(Self.join(root.bytes, above), &status, follow: true) { visited.insert(FileIdentity(status)) }
            above = above.isEmpty ? Array(component) : above + [UInt8(ascii: "/")] + component
        }
        if !start.isEmpty {
            var status = stat()
            if Self.status(Self.join(root.bytes, above), &status, follow: true) { visited.insert(FileIdentity(status)) }
        }
        var folders: [[UInt8]] = [start]
        while let folder = folders.popLast() {
            let path = Self.join(root.bytes, folder)
            var status = stat()
            guard Self.status(path, &status, follow: true) else {
                counts.skipped[Self.reason(errno), default: 0] += 1
                continue
            }
            guard visited.insert(FileIdentity(status)).inserted else {
                counts.skipped["loop", default: 0] += 1
                continue
            }
            guard let entries = Self.entries(in: path) else {
                counts.skipped[Self.reason(errno), default: 0] += 1
                continue
            }
            var subfolders: [[UInt8]] = []
            for (name, status, error) in entries.sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) {
                if name.first == UInt8(ascii: ".") {
                    counts.hidden += 1
                    continue
                }
                let relative = folder.isEmpty ? name : folder + [UInt8(ascii: "/")] + name
                guard let entry = status else {
                    counts.skipped[error == ENOENT || error == ELOOP ? "brokenLink" : Self.reason(error), default: 0]
                        += 1
                    continue
                }
                switch entry.st_mode & S_IFMT {
                case S_IFDIR:
                    subfolders.append(relative)
                case S_IFREG:
                    guard let isPlaylist = Self.wanted(name) else { continue }
                    found.append(Candidate(relativePath: relative, size: Int(entry.st_size),
                                           modificationTime: Int(entry.st_mtim.tv_sec), isPlaylist: isPlaylist))
                default:
                    continue
                }
            }
            // Reversed onto the stack: folders are entered in name order, so of two ways to one folder (its own
            // name and a link to it) the first by name is the one the library shows.
            folders += subfolders.reversed()
        }
        found.sort { $0.relativePath.lexicographicallyPrecedes($1.relativePath) }
    }

    /// Whether a file named `name` is taken: true for a playlist, false for a track, nil when it is neither.
    static func wanted(_ name: [UInt8]) -> Bool? {
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let ending = String(decoding: name[dot...], as: UTF8.self).lowercased()
        if ending == ".m3u" || ending == ".m3u8" { return true }
        return AudioFileKind.fileExtensions.contains(ending) ? false : nil
    }

    /// Reads one candidate: its kind by content, its tags, length and rate from its headers (TrackHeaders) where they
    /// settle them, else from the decoder's open. A file that cannot be read becomes a `.failed` entry with its
    /// reason's kind (never shown with the path).
    static func read(_ candidate: Candidate, root: TrackPath) -> LibraryEntry {
        var entry = LibraryEntry(root: root, relativePath: candidate.relativePath, kind: .failed,
                                 size: candidate.size, modificationTime: candidate.modificationTime)
        if candidate.isPlaylist {
            entry.kind = .playlist
            return entry
        }
        let path = entry.absolute
        if let facts = TrackHeaders.read(path) {
            entry.kind = LibraryEntry.Kind(rawValue: facts.kind.rawValue) ?? .failed
            entry.take(facts.metadata)
            entry.sampleRate = facts.sampleRate
            entry.durationSeconds = facts.seconds
            return entry
        }
        do {
            // Identified once, and opened by kind (openDecoder would read the file's first bytes again).
            let kind = try AudioFileKind.identify(path)
            let decoder: any AudioDecoder = kind == .mp3 ? try MP3Decoder(path: path)
                : try SndfileDecoder(path: path, kind: kind)
            // The file's own rate: libmpg123 delivers an MP3 of another rate than 44.1 or 48 kHz converted to 44.1.
            let fileRate = (decoder as? MP3Decoder)?.nativeSampleRate ?? decoder.format.sampleRate
            entry.kind = LibraryEntry.Kind(rawValue: kind.rawValue) ?? .failed
            entry.take(decoder.metadata)
            entry.sampleRate = fileRate
            // The length is in the frames delivered, so at their rate: as played, gapless trim applied when the file
            // has a LAME tag to say it (at any rate, converted or not).
            entry.durationSeconds = decoder.lengthFrames.map { Double($0) / Double(decoder.format.sampleRate) }
        } catch {
            var status = stat()
            if !Self.status(path.bytes, &status, follow: true) && errno == ENOENT {
                entry.failure = "vanished"
            } else {
                entry.failure = error.kind == .cannotOpen && error.message.contains("ermission")
                    ? "permission" : error.kind.rawValue
            }
        }
        return entry
    }

    /// The reason an errno gives, for the counts.
    static func reason(_ code: Int32) -> String {
        switch code {
        case EACCES, EPERM: return "permission"
        case ENOENT: return "vanished"
        case ELOOP: return "loop"
        default: return "error\(code)"
        }
    }

    /// `root` and `relative` joined with one slash.
    static func join(_ root: [UInt8], _ relative: [UInt8]) -> [UInt8] {
        guard !relative.isEmpty else { return root }
        return root.last == UInt8(ascii: "/") ? root + relative : root + [UInt8(ascii: "/")] + relative
    }

    /// stat(2) (or lstat) of a path given as bytes.
    static func status(_ path: [UInt8], _ status: inout stat, follow: Bool) -> Bool {
        let cPath = path.map { CChar(bitPattern: $0) } + [0]
        return (follow ? stat(cPath, &status) : lstat(cPath, &status)) == 0
    }

    /// The names in the folder at `path` (as `names(in:)` gives them), each but the hidden ones with its status,
    /// following links, or the errno of its failure. Each is looked up by name in the open folder (fstatat), which
    /// spares the kernel walking the whole path again for every file of a scan. Nil with errno set when the folder
    /// cannot be opened.
    static func entries(in path: [UInt8]) -> [(name: [UInt8], status: stat?, error: Int32)]? {
        let cPath = path.map { CChar(bitPattern: $0) } + [0]
        guard let directory = opendir(cPath) else { return nil }
        defer { closedir(directory) }
        let folder = dirfd(directory)
        var entries: [(name: [UInt8], status: stat?, error: Int32)] = []
        while let entry = readdir(directory) {
            let name = DirectoryListing.entryName(entry)
            if name == [UInt8(ascii: ".")] || name == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            if name.first == UInt8(ascii: ".") {
                entries.append((name, nil, 0))
                continue
            }
            var status = stat()
            let found = (name.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
                fstatat(folder, $0.baseAddress!, &status, 0) == 0
            }
            entries.append(found ? (name, status, 0) : (name, nil, errno))
        }
        return entries
    }

    /// The names in the folder at `path` as bytes (not necessarily UTF-8), without "." and ".."; nil with errno set
    /// when it cannot be opened.
    static func names(in path: [UInt8]) -> [[UInt8]]? {
        let cPath = path.map { CChar(bitPattern: $0) } + [0]
        guard let directory = opendir(cPath) else { return nil }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = DirectoryListing.entryName(entry)
            if name != [UInt8(ascii: ".")] && name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(name) }
        }
        return names
    }
}

extension LibraryEntry {
    /// Takes a track's tags, keeping of its cover only that it has one.
    mutating func take(_ metadata: TrackMetadata) {
        var tags = metadata
        hasCover = tags.hasEmbeddedCover
        tags.cover = nil
        tags.coverProblem = nil
        self.tags = tags
    }
}

/// A file's identity: its device and inode.
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}
