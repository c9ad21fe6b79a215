// LibraryLocations: where the library's database goes (`$XDG_CACHE_HOME/earshot/library.sqlite`, default
// `~/.cache/earshot/library.sqlite`: it is rebuilt from the music folders, so it is cache) and which music folders
// are scanned when the configuration names none: the user's XDG music folder from `user-dirs.dirs`, else `~/Music`.
import Glibc

/// The library's paths, from the environment.
public enum LibraryLocations {
    /// The database file for `environment`.
    public static func databasePath(environment: [String: String]) -> String {
        let cache = absolute(environment["XDG_CACHE_HOME"]) ?? home(environment) + "/.cache"
        return cache + "/earshot/library.sqlite"
    }

    /// The music folder used when `musicDirectories` is not configured: `XDG_MUSIC_DIR` from
    /// `$XDG_CONFIG_HOME/user-dirs.dirs` (xdg-user-dirs' file), else `~/Music`. A value of `$HOME` itself means the
    /// folder is disabled there, and `~/Music` is taken.
    public static func defaultMusicDirectory(environment: [String: String]) -> String {
        let home = home(environment)
        let config = absolute(environment["XDG_CONFIG_HOME"]) ?? home + "/.config"
        if let text = readSmallFile(config + "/user-dirs.dirs"), let folder = musicFolder(in: text, home: home),
           folder != home {
            return folder
        }
        return home + "/Music"
    }

    /// The `XDG_MUSIC_DIR` of a `user-dirs.dirs` text: `"$HOME/Musik"` or an absolute path in double quotes.
    public static func musicFolder(in text: String, home: String) -> String? {
        for line in text.split(separator: "\n") {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            guard trimmed.hasPrefix("XDG_MUSIC_DIR="), case let value = trimmed.dropFirst("XDG_MUSIC_DIR=".count),
                  value.hasPrefix("\""), value.count >= 2, value.hasSuffix("\"") else { continue }
            var path = String(value.dropFirst().dropLast())
            if path.hasPrefix("$HOME") { path = home + path.dropFirst("$HOME".count) }
            guard path.hasPrefix("/") else { continue }
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
            return path
        }
        return nil
    }

    /// `$HOME`, or the password database's home directory.
    static func home(_ environment: [String: String]) -> String {
        if let home = absolute(environment["HOME"]) { return home }
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return "/" }
        return String(cString: directory)
    }

    /// `value` without a trailing slash when it is an absolute path, else nil.
    private static func absolute(_ value: String?) -> String? {
        guard var value, value.hasPrefix("/") else { return nil }
        while value.count > 1 && value.hasSuffix("/") { value.removeLast() }
        return value
    }

    /// A file of at most 64 KiB as text; nil when it is missing, unreadable or larger.
    private static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64 << 10)
        var filled = 0
        while filled < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            filled += got
        }
        return String(decoding: bytes[..<filled], as: UTF8.self)
    }
}
