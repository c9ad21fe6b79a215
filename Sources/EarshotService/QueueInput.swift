// Turning what a user names on the command line into queue entries: files as they are, directories
// recursively in natural order, and M3U playlists line by line. Paths become absolute, since the service
// runs in another working directory.
import Foundation

/// Expands files, directories and playlists into absolute paths of files to queue.
public enum QueueInput {
    /// The expansion, with a note for each name that could not be used (the user's own terminal shows them).
    public struct Expansion: Equatable, Sendable {
        /// Absolute paths, in queue order.
        public var paths: [String]
        /// One line per missing or unusable name.
        public var problems: [String]
    }

    /// Expands `names`, relative to `directory`.
    public static func expand(_ names: [String], relativeTo directory: String = FileManager.default.currentDirectoryPath)
        -> Expansion {
        var expansion = Expansion(paths: [], problems: [])
        for name in names {
            let path = absolute(name, relativeTo: directory)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                expansion.problems.append("\(name): no such file or directory")
                continue
            }
            if isDirectory.boolValue {
                let found = audioFiles(under: path)
                if found.isEmpty { expansion.problems.append("\(name): no .mp3 files in this directory") }
                expansion.paths += found
            } else if path.lowercased().hasSuffix(".m3u") || path.lowercased().hasSuffix(".m3u8") {
                let listed = playlist(at: path)
                expansion.paths += listed.paths
                expansion.problems += listed.problems
            } else {
                expansion.paths.append(path)
            }
        }
        return expansion
    }

    /// `name` as an absolute, standardised path.
    static func absolute(_ name: String, relativeTo directory: String) -> String {
        let joined = name.hasPrefix("/") ? name : directory + "/" + name
        return (joined as NSString).standardizingPath
    }

    /// Every `.mp3` below `directory`, in natural order ("2 x" before "10 x"), directories in order too.
    static func audioFiles(under directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var files: [String] = []
        for name in names.sorted(by: naturallyBefore) where !name.hasPrefix(".") {
            let path = directory + "/" + name
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                files += audioFiles(under: path)
            } else if name.lowercased().hasSuffix(".mp3") {
                files.append(path)
            }
        }
        return files
    }

    /// The entries of an M3U playlist: comment lines skipped, relative entries taken from its directory.
    static func playlist(at path: String) -> Expansion {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return Expansion(paths: [], problems: ["\(path): playlist is unreadable or not UTF-8"])
        }
        let base = (path as NSString).deletingLastPathComponent
        var expansion = Expansion(paths: [], problems: [])
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let entry = line.hasPrefix("file://") ? (URL(string: line)?.path ?? line) : line
            let resolved = absolute(entry, relativeTo: base)
            if FileManager.default.fileExists(atPath: resolved) {
                expansion.paths.append(resolved)
            } else {
                expansion.problems.append("\(line) (in \((path as NSString).lastPathComponent)): no such file")
            }
        }
        return expansion
    }

    /// Natural order: digit runs compare by value, the rest case-insensitively.
    static func naturallyBefore(_ lhs: String, _ rhs: String) -> Bool {
        lhs.compare(rhs, options: [.numeric, .caseInsensitive]) == .orderedAscending
    }
}
