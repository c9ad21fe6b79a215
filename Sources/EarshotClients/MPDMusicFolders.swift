// `listfiles [URI]` as MPD 0.23 answers it: what is on disk in one folder of the music folders, read from the disk,
// not from the library's records (a file the library skipped, a cover, a hidden file are there too). Runs on the MPD
// client's thread, which may wait for the disk; the owner never does.
import Glibc
import MPDProtocol
import SystemSupport
import TrackPaths

/// The music folders as `listfiles` reads them.
struct MPDMusicFolders: Sendable {
    /// The configured music folders, absolute; a relative URI names a folder below each of them.
    let roots: [TrackPath]

    /// The folder `uri` names below the music folders, as components: nil when it is absolute, a URL or leaves the
    /// music folders by `..` (MPD 0.23 lists its parent there). A symbolic link the URI passes through is followed,
    /// as the library's scan follows it, so a link to a folder elsewhere lists that folder, as MPD does.
    static func components(of uri: String) -> [String]? {
        guard !uri.hasPrefix("/"), !uri.contains("://") else { return nil }
        var components: [String] = []
        for part in uri.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !components.isEmpty else { return nil }
                components.removeLast()
            default: components.append(String(part))
            }
        }
        return components
    }

    /// MPD's lines for the folder `uri` (nil or empty: the top): each entry but `.` and `..`, a file as `file:` and
    /// `size:`, a folder as `directory:`, each with its `Last-Modified`, in the order the disk gives them; a symbolic
    /// link, a device or a pipe is left out (MPD does not follow links here), as is a name that holds a line break or
    /// is not UTF-8. With several music folders, every one holding the folder is listed, a name once.
    func listFiles(_ uri: String?) -> Result<String, MPDError> {
        guard let components = Self.components(of: uri ?? "") else {
            return .failure(MPDError(.permission, command: "listfiles", "Access denied"))
        }
        let below = components.map { "/" + $0 }.joined()
        var lines = ""
        var seen = Set<String>()
        // Why the folder could not be opened in any music folder (a NUL names no file); nil once one opened it.
        var failure: Int32? = ENOENT
        for root in roots where !below.utf8.contains(0) {
            guard let folder = TrackPath(bytes: root.bytes + Array(below.utf8))?.withCString({ opendir($0) }) else {
                if failure != nil { failure = errno }
                continue
            }
            failure = nil
            defer { closedir(folder) }
            let descriptor = dirfd(folder)
            while let entry = readdir(folder) {
                let bytes = DirectoryListing.entryName(entry)
                guard let name = String(validating: bytes, as: UTF8.self), name != ".", name != "..",
                      !name.contains("\n"), !seen.contains(name) else { continue }
                var info = stat()
                guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                // MPD leaves out a time before 1970.
                let modified = info.st_mtim.tv_sec < 0
                    ? "" : "Last-Modified: \(MPDStoredPlaylists.timestamp(info.st_mtim.tv_sec))\n"
                switch info.st_mode & S_IFMT {
                case S_IFREG: lines += "file: \(name)\nsize: \(info.st_size)\n" + modified
                case S_IFDIR: lines += "directory: \(name)\n" + modified
                default: continue
                }
                seen.insert(name)
            }
        }
        if let failure {
            // MPD's answer to a folder it cannot open: a system error with the cause.
            let cause = String(cString: strerror(failure))
            return .failure(MPDError(.system, command: "listfiles", "Failed to open \(uri ?? ""): \(cause)"))
        }
        return .success(lines)
    }
}
