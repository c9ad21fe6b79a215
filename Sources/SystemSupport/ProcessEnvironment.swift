// The environment, directory listings and private directories over Glibc: what ProcessInfo and FileManager gave the product before it
// dropped FoundationEssentials (whose pages cost more resident memory in an idle service than everything here).
import Glibc

/// The process's environment variables.
public enum ProcessEnvironment {
    /// Every variable, as ProcessInfo's `environment` was: a name that appears twice keeps its first value (which is
    /// the one getenv returns), and an entry without `=` is skipped.
    public static var current: [String: String] {
        var variables: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if variables[name] == nil { variables[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return variables
    }

    /// The value of one variable, nil when it is unset.
    public static func value(named name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// Listing a directory (what FileManager's `contentsOfDirectory(atPath:)` was).
public enum DirectoryListing {
    /// The names in `path`, without `.` and `..`, in no particular order; nil when it cannot be opened.
    public static func names(in path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = String(decoding: entryName(entry), as: UTF8.self)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The name of a directory entry `readdir` returned, as bytes, read up to its NUL in place: an entry is only as
    /// long as its name needs (`d_reclen`), so copying the whole `d_name` field reads past the last entry of
    /// readdir's buffer (AddressSanitizer caught it in the library's scan).
    public static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> [UInt8] {
        let start = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        return Array(UnsafeRawBufferPointer(start: start, count: strlen(start.assumingMemoryBound(to: CChar.self))))
    }
}

/// Private directories, made as the service's state and cache folders need them.
public enum PrivateDirectory {
    /// Creates `path` and its missing parents, each new one mode 0700, and makes `path` itself 0700 when it exists
    /// with a wider mode (made by something else under the umask) and is ours. Returns nil, or the path that failed
    /// and the errno (ENOTDIR when `path` is not a directory): callers decide whether the path may be shown.
    public static func create(_ path: String) -> (path: String, code: Int32)? {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { return (prefix, errno) }
        }
        var status = stat()
        guard stat(path, &status) == 0 else { return (path, errno) }
        guard status.st_mode & S_IFMT == S_IFDIR else { return (path, ENOTDIR) }
        if status.st_mode & 0o777 != 0o700 && status.st_uid == getuid() { chmod(path, 0o700) }
        return nil
    }
}
