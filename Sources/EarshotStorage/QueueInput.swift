// Turning what a user names on the command line into queue entries: files as they are, directories
// recursively in natural order, and M3U and PLS playlists entry by entry. Paths become absolute, since the service
// runs in another working directory.
//
// Everything here works on bytes (TrackPath), never on Strings: a file name need not be UTF-8, and
// FileManager would hand such a name back with U+FFFD in place of its bytes, naming another file.
// Directories are read with opendir/readdir, and files are told apart with stat(2).
import AudioPipeline
import Glibc
import SystemSupport
import TrackPaths

/// Expands files, directories and playlists into absolute paths of files to queue.
public enum QueueInput {
    /// The expansion, with a note for each name that could not be used (the user's own terminal shows them).
    public struct Expansion: Equatable, Sendable {
        /// Absolute paths, in queue order.
        public var paths: [TrackPath]
        /// One line per missing or unusable name (names shown escaped, as `TrackPath.displayText`).
        public var problems: [String]
    }

    /// Expands `names`, relative to `directory` (by default the working directory).
    public static func expand(_ names: [TrackPath], relativeTo directory: TrackPath? = nil) -> Expansion {
        let base = directory ?? workingDirectory()
        var expansion = Expansion(paths: [], problems: [])
        for name in names {
            // An internet stream is queued as its URL; what it answers is the decoder's to report.
            if name.isStreamURL {
                expansion.paths.append(name)
                continue
            }
            let path = absolute(name, relativeTo: base)
            switch kind(of: path) {
            case nil:
                expansion.problems.append("\(name.displayText): no such file or directory")
            case .directory:
                let found = audioFiles(under: path)
                if found.isEmpty { expansion.problems.append("\(name.displayText): no music files in this directory") }
                expansion.paths += found
            case .other where PlaylistFormat.of(path) != nil:
                let listed = playlist(at: path)
                expansion.paths += listed.paths
                expansion.problems += listed.problems
            case .other:
                expansion.paths.append(path)
            }
        }
        return expansion
    }

    /// Expands the playlists among `names` (`.m3u`, `.m3u8`, `.pls`) into their tracks, as `expand` does, and keeps
    /// every other name as it is, made absolute: what `earshot play` without a service and MPRIS `OpenUri` queue,
    /// where a file that does not play is the player's to report.
    public static func expandPlaylists(_ names: [TrackPath], relativeTo directory: TrackPath? = nil) -> Expansion {
        let base = directory ?? workingDirectory()
        var expansion = Expansion(paths: [], problems: [])
        for name in names {
            if name.isStreamURL {
                expansion.paths.append(name)
                continue
            }
            let path = absolute(name, relativeTo: base)
            guard PlaylistFormat.of(path) != nil, kind(of: path) == .other else {
                expansion.paths.append(path)
                continue
            }
            let listed = playlist(at: path)
            expansion.paths += listed.paths
            expansion.problems += listed.problems
        }
        return expansion
    }

    /// The working directory's path.
    static func workingDirectory() -> TrackPath {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil,
              let path = TrackPath(bytes: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }) else {
            return "/"
        }
        return path
    }

    /// `name` as an absolute path with `.`, `..` and repeated slashes resolved textually.
    static func absolute(_ name: TrackPath, relativeTo directory: TrackPath) -> TrackPath {
        let slash = UInt8(ascii: "/")
        let joined = name.bytes.first == slash ? name.bytes : directory.bytes + [slash] + name.bytes
        // Most names (every line of a long playlist) have nothing to resolve: no `.`, `..` or empty component.
        if isResolved(joined) { return TrackPath(bytes: joined) ?? "/" }
        var components: [ArraySlice<UInt8>] = []
        for component in joined.split(separator: slash, omittingEmptySubsequences: true) {
            if component.elementsEqual(".".utf8) { continue }
            if component.elementsEqual("..".utf8) {
                _ = components.popLast()
                continue
            }
            components.append(component)
        }
        var bytes: [UInt8] = []
        for component in components {
            bytes.append(slash)
            bytes += component
        }
        return TrackPath(bytes: bytes) ?? "/"
    }

    /// Whether `path` is absolute with no `.`, `..` or empty component and no trailing slash (index arithmetic: this
    /// runs for every entry of a playlist, in debug builds too).
    private static func isResolved(_ path: [UInt8]) -> Bool {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        guard path.count > 1, path[0] == slash, path[path.count - 1] != slash else { return false }
        var componentStart = 1
        for index in 1...path.count where index == path.count || path[index] == slash {
            let length = index - componentStart
            if length == 0 { return false }
            if path[componentStart] == dot && (length == 1 || length == 2 && path[componentStart + 1] == dot) {
                return false
            }
            componentStart = index + 1
        }
        return true
    }

    private enum Kind {
        case directory, other
    }

    /// Whether `path` is a directory or something else (following symbolic links); nil when it does not exist.
    private static func kind(of path: TrackPath) -> Kind? {
        var status = stat()
        guard path.withCString({ stat($0, &status) }) == 0 else { return nil }
        return status.st_mode & S_IFMT == S_IFDIR ? .directory : .other
    }

    /// Whether `path` ends in `suffix`, ignoring ASCII case.
    private static func hasSuffix(_ path: TrackPath, _ suffix: String) -> Bool {
        let tail = Array(suffix.utf8), bytes = path.bytes
        guard bytes.count >= tail.count else { return false }
        // Index arithmetic: this runs twice for every entry of a playlist, in debug builds too.
        let offset = bytes.count - tail.count
        for index in tail.indices where lowercased(bytes[offset + index]) != tail[index] { return false }
        return true
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// Every music file below `directory` (named with one of `AudioFileKind.fileExtensions`), in natural order
    /// ("2 x" before "10 x"), directories in order too.
    static func audioFiles(under directory: TrackPath) -> [TrackPath] {
        var files: [TrackPath] = []
        for name in entryNames(in: directory).sorted(by: naturallyBefore) where name.first != UInt8(ascii: ".") {
            guard let path = TrackPath(bytes: directory.bytes + [UInt8(ascii: "/")] + name) else { continue }
            switch kind(of: path) {
            case .directory: files += audioFiles(under: path)
            case .other where AudioFileKind.fileExtensions.contains(where: { hasSuffix(path, $0) }): files.append(path)
            case .other, nil: continue
            }
        }
        return files
    }

    /// The names in `directory` (without `.` and `..`), as raw bytes; empty when it cannot be read.
    private static func entryNames(in directory: TrackPath) -> [[UInt8]] {
        guard let stream = directory.withCString({ opendir($0) }) else { return [] }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            let name = DirectoryListing.entryName(entry)
            if name == Array(".".utf8) || name == Array("..".utf8) { continue }
            names.append(name)
        }
        return names
    }

    /// The most entries one playlist queues; the lines past it are counted and reported, not kept (a playlist of a
    /// million lines costs what is queued, and a queue that long is a mistake, not a listening plan).
    static let maximumPlaylistEntries = 100_000

    /// The most problems reported for one playlist; the rest are counted in one last line.
    static let maximumPlaylistProblems = 20

    /// The entries of an M3U or PLS playlist (`M3UReader`: comment lines skipped, `file://` entries percent-decoded to
    /// bytes), relative entries taken from its directory, each checked to exist.
    ///
    /// A playlist never brings in another playlist: an entry naming the playlist itself, or any other playlist, is
    /// reported and skipped, so no playlist can loop or multiply. The file is read in chunks, and what is kept is
    /// bounded: at most `maximumPlaylistEntries` paths and `maximumPlaylistProblems` problem lines.
    static func playlist(at path: TrackPath) -> Expansion {
        let shownName = TrackPath(bytes: path.bytes.split(separator: UInt8(ascii: "/")).last ?? [])?.displayText
            ?? path.displayText
        let base = absolute(TrackPath(bytes: path.bytes + Array("/..".utf8)) ?? path, relativeTo: "/")
        var expansion = Expansion(paths: [], problems: [])
        var problemCount = 0
        var leftOut = 0
        func report(_ problem: @autoclosure () -> String) {
            problemCount += 1
            if problemCount <= maximumPlaylistProblems { expansion.problems.append(problem()) }
        }
        var reader = M3UReader(format: PlaylistFormat.of(path) ?? .m3u)
        let take = { (entry: M3UEntry) in
            guard case .path(let entryPath) = entry else {
                switch entry {
                case .malformedURI: report("a file:// entry in \(shownName) is not a valid URI")
                case .nulByte: report("an entry in \(shownName) holds a NUL byte, which no file name can")
                case .tooLong: report("an entry in \(shownName) is longer than any file name")
                case .path: break
                }
                return
            }
            guard expansion.paths.count < maximumPlaylistEntries else {
                leftOut += 1
                return
            }
            // A station in a playlist (`http://...` in an M3U, `File1=https://...` in a PLS) is queued as its URL.
            let resolved = entryPath.isStreamURL ? entryPath : absolute(entryPath, relativeTo: base)
            if resolved == path {
                report("\(shownName) names itself: that entry is skipped")
            } else if PlaylistFormat.of(resolved) != nil {
                report("\(entryPath.displayText) (in \(shownName)): a playlist inside a playlist is not followed")
            } else if resolved.isStreamURL || kind(of: resolved) != nil {
                expansion.paths.append(resolved)
            } else {
                report("\(entryPath.displayText) (in \(shownName)): no such file")
            }
        }
        guard readChunks(of: path, { reader.feed($0, take) }) else {
            return Expansion(paths: [], problems: ["\(path.displayText): playlist is unreadable"])
        }
        reader.finish(take)
        if problemCount > maximumPlaylistProblems {
            expansion.problems.append("\(problemCount - maximumPlaylistProblems) more problems in \(shownName)")
        }
        if leftOut > 0 {
            expansion.problems.append("\(shownName): only its first \(maximumPlaylistEntries) entries are queued, "
                + "\(leftOut) more are left out")
        }
        return expansion
    }

    /// Reads the file at `path` in chunks, handing each to `body`; false when it cannot be opened or read.
    private static func readChunks(of path: TrackPath, _ body: (UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        let descriptor = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let chunk = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 65_536)
        defer { chunk.deallocate() }
        while true {
            let count = read(descriptor, chunk.baseAddress, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return false }
            if count == 0 { return true }
            body(UnsafeBufferPointer(rebasing: chunk[..<count]))
        }
    }

    /// Natural order: digit runs compare by value, the rest case-insensitively; names that are not UTF-8 compare
    /// by their display text, and names that compare the same are ordered by their bytes.
    static func naturallyBefore(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        let left = TrackPath(bytes: lhs)?.displayText ?? ""
        let right = TrackPath(bytes: rhs)?.displayText ?? ""
        switch naturalOrder(left, right) {
        case ..<0: return true
        case 1...: return false
        default: return lhs.lexicographicallyPrecedes(rhs)
        }
    }

    /// -1, 0 or 1 as `left` sorts before, with or after `right`: runs of ASCII digits by their value (leading zeros
    /// aside), everything else by its lowercase form (Foundation's `.numeric, .caseInsensitive`, without ICU).
    static func naturalOrder(_ left: String, _ right: String) -> Int {
        let left = Array(left.unicodeScalars), right = Array(right.unicodeScalars)
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
        var i = 0, j = 0
        while i < left.count && j < right.count {
            if isDigit(left[i]) && isDigit(right[j]) {
                var leftEnd = i, rightEnd = j
                while leftEnd < left.count && isDigit(left[leftEnd]) { leftEnd += 1 }
                while rightEnd < right.count && isDigit(right[rightEnd]) { rightEnd += 1 }
                let leftDigits = left[i..<leftEnd].drop { $0 == "0" }
                let rightDigits = right[j..<rightEnd].drop { $0 == "0" }
                if leftDigits.count != rightDigits.count { return leftDigits.count < rightDigits.count ? -1 : 1 }
                for (a, b) in zip(leftDigits, rightDigits) where a != b { return a < b ? -1 : 1 }
                i = leftEnd
                j = rightEnd
                continue
            }
            let a = left[i].properties.lowercaseMapping, b = right[j].properties.lowercaseMapping
            if a != b {
                return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) { $0.value < $1.value } ? -1 : 1
            }
            i += 1
            j += 1
        }
        if i < left.count { return 1 }
        return j < right.count ? -1 : 0
    }
}
