// The environment and directory listings over Glibc: what ProcessInfo and FileManager gave the product before it
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
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
