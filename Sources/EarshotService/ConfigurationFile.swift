// The configuration file: `$XDG_CONFIG_HOME/earshot/config.json` (default `~/.config/earshot/config.json`).
//
// A missing file means the defaults. Anything else the service does not fully understand (an unknown key,
// a wrong type, a value out of range, invalid JSON, an unreadable file) is an error naming the key and the
// file, and the service refuses to start: guessing what the user meant could mean playing when they asked
// it not to. `Config/config.json` in the repository documents every key with its default.
import EarshotCore
import FoundationEssentials
import Glibc

/// Why the configuration file was refused. The message names the key and the file's path.
public struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong with the file.
    public enum Problem: Equatable, Sendable {
        /// The file exists but cannot be read (the reason is the system's, e.g. "Permission denied").
        case unreadable(reason: String)
        /// The file is not valid JSON.
        case invalidJSON
        /// The file is JSON, but not an object at the top level.
        case notAnObject
        /// Keys the service does not know, sorted.
        case unknownKeys([String])
        /// `key` holds a value of the wrong type; `expected` describes the right one.
        case wrongType(key: String, expected: String)
        /// `key` holds a value of the right type outside what is allowed, described by `allowed`.
        case outOfRange(key: String, allowed: String)
    }

    /// What is wrong.
    public var problem: Problem
    /// The file's path.
    public var path: String

    /// An error about the file at `path`.
    public init(_ problem: Problem, path: String) {
        self.problem = problem
        self.path = path
    }

    /// The key the error is about, if it is about one (the first of several unknown keys).
    public var key: String? {
        switch problem {
        case .unreadable, .invalidJSON, .notAnObject: return nil
        case .unknownKeys(let keys): return keys.first
        case .wrongType(let key, _), .outOfRange(let key, _): return key
        }
    }

    /// One line for the user, e.g. `config.json: unknown key "resumeWindow" in /home/u/.config/earshot/config.json`.
    public var description: String {
        switch problem {
        case .unreadable(let reason):
            return "config.json: cannot read \(path): \(reason)"
        case .invalidJSON:
            return "config.json: not valid JSON in \(path)"
        case .notAnObject:
            return "config.json: the top level must be a JSON object in \(path)"
        case .unknownKeys(let keys):
            let named = keys.map { "\"\($0)\"" }.joined(separator: ", ")
            let known = ConfigurationFile.knownKeys.joined(separator: ", ")
            return "config.json: unknown key\(keys.count == 1 ? "" : "s") \(named) in \(path) (known keys: \(known))"
        case .wrongType(let key, let expected):
            return "config.json: key \"\(key)\" must be \(expected) in \(path)"
        case .outOfRange(let key, let allowed):
            return "config.json: key \"\(key)\" is out of range: it must be \(allowed) in \(path)"
        }
    }
}

/// Reads the user's configuration file into a `PlayerConfiguration`.
public enum ConfigurationFile {
    /// The header key `Config/config.json` uses as a comment (JSON has none); its value must be a string.
    public static let commentKey = "//"

    /// The keys the file may hold, in documentation order.
    public static let knownKeys = [
        "triggerRoles", "interruptionScope", "resumeAfterInterruption", "resumeWindowMinutes", "mediaRole",
        "targetLatencyMilliseconds", "logLevel", "sink",
    ]

    /// The allowed target latencies, in milliseconds.
    public static let targetLatencyRange = 10...2000
    /// The allowed resume windows, in minutes (up to one day).
    public static let resumeWindowMinutesRange = 0.0...1440.0
    /// The allowed log levels.
    public static let logLevels = ["info", "debug"]

    /// The file's path: `$XDG_CONFIG_HOME/earshot/config.json`, or `~/.config/earshot/config.json` when
    /// `XDG_CONFIG_HOME` is unset, empty or relative (the XDG specification says to ignore a relative one).
    public static func path(environment: [String: String]) -> String {
        XDGDirectory.configHome(environment: environment) + "/earshot/config.json"
    }

    /// Reads the file named by `environment` and applies it onto the defaults. A missing file means the
    /// defaults; anything else wrong is an error.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> PlayerConfiguration {
        let path = path(environment: environment)
        let data: Data
        do {
            data = try readFile(at: path)
        } catch {
            switch error {
            case .missing: return PlayerConfiguration()
            case .failed(let reason): throw ConfigurationError(.unreadable(reason: reason), path: path)
            }
        }
        return try parse(data, path: path)
    }

    /// Decodes the file's `data` and applies it onto `base`; `path` only names the file in errors.
    public static func parse(
        _ data: Data, path: String, onto base: PlayerConfiguration = PlayerConfiguration()
    ) throws(ConfigurationError) -> PlayerConfiguration {
        let contents: ConfigurationContents
        do {
            contents = try JSONDecoder().decode(ConfigurationContents.self, from: data)
        } catch let problem as ConfigurationError.Problem {
            throw ConfigurationError(problem, path: path)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            throw ConfigurationError(.notAnObject, path: path)
        } catch {
            // Foundation reports malformed JSON as `dataCorrupted` at the top level, with no useful detail.
            throw ConfigurationError(.invalidJSON, path: path)
        }
        return contents.applied(onto: base)
    }

    private enum ReadFailure: Error {
        case missing
        case failed(reason: String)
    }

    /// The file's bytes. Read with POSIX calls so a missing file is told apart from an unreadable one.
    private static func readFile(at path: String) throws(ReadFailure) -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { throw .missing }
            throw .failed(reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .failed(reason: String(cString: strerror(errno))) }
        // A directory opens fine with O_RDONLY; reading it would fail with a less helpful EISDIR.
        guard status.st_mode & S_IFMT == S_IFREG else { throw .failed(reason: "not a regular file") }
        // A configuration file is a few hundred bytes; a huge one is a mistake, not something to buffer.
        let limit = 1 << 20
        var contents = Data()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while contents.count <= limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .failed(reason: String(cString: strerror(errno)))
            }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[..<count])
        }
        throw .failed(reason: "larger than 1 MiB")
    }
}

/// The file as decoded: every field optional, so that an absent key keeps its default.
struct ConfigurationContents: Decodable {
    /// `triggerRoles`: stream roles that interrupt Earshot.
    var triggerRoles: [String]?
    /// `interruptionScope`: "session" or "sameSink".
    var interruptionScope: InterruptionScope?
    /// `resumeAfterInterruption`.
    var resumeAfterInterruption: Bool?
    /// `resumeWindowMinutes` (0...1440).
    var resumeWindowMinutes: Double?
    /// `mediaRole`: our stream's `media.role`.
    var mediaRole: String?
    /// `targetLatencyMilliseconds` (10...2000).
    var targetLatencyMilliseconds: Int?
    /// `logLevel`: "info" or "debug".
    var logLevel: String?
    /// `sink`: a sink name; absent or null for the server's default.
    var sink: String?

    /// Any key, so unknown ones can be found: the synthesized decoder would silently skip them.
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes the file, refusing unknown keys, wrong types and values out of range with a
    /// `ConfigurationError.Problem` that names the key.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let allowed = Set(ConfigurationFile.knownKeys + [ConfigurationFile.commentKey])
        let unknown = container.allKeys.map(\.stringValue).filter { !allowed.contains($0) }.sorted()
        if !unknown.isEmpty { throw ConfigurationError.Problem.unknownKeys(unknown) }

        _ = try Self.value(String.self, ConfigurationFile.commentKey, in: container, expected: "a string")
        triggerRoles = try Self.value([String].self, "triggerRoles", in: container, expected: "an array of strings")
        if let roles = triggerRoles, roles.contains(where: { $0.isEmpty }) {
            throw ConfigurationError.Problem.outOfRange(key: "triggerRoles", allowed: "an array of non-empty strings")
        }
        if let scope = try Self.value(String.self, "interruptionScope", in: container, expected: "a string") {
            guard let known = InterruptionScope(rawValue: scope) else {
                let scopes = InterruptionScope.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
                throw ConfigurationError.Problem.outOfRange(key: "interruptionScope", allowed: scopes)
            }
            interruptionScope = known
        }
        resumeAfterInterruption = try Self.value(
            Bool.self, "resumeAfterInterruption", in: container, expected: "a boolean (true or false)")
        resumeWindowMinutes = try Self.value(Double.self, "resumeWindowMinutes", in: container, expected: "a number")
        if let minutes = resumeWindowMinutes, !ConfigurationFile.resumeWindowMinutesRange.contains(minutes) {
            let range = ConfigurationFile.resumeWindowMinutesRange
            throw ConfigurationError.Problem.outOfRange(
                key: "resumeWindowMinutes", allowed: "a number of minutes from \(Int(range.lowerBound)) to "
                    + "\(Int(range.upperBound))")
        }
        mediaRole = try Self.value(String.self, "mediaRole", in: container, expected: "a string")
        if mediaRole?.isEmpty == true {
            throw ConfigurationError.Problem.outOfRange(key: "mediaRole", allowed: "a non-empty string")
        }
        targetLatencyMilliseconds = try Self.value(
            Int.self, "targetLatencyMilliseconds", in: container, expected: "an integer")
        if let latency = targetLatencyMilliseconds, !ConfigurationFile.targetLatencyRange.contains(latency) {
            let range = ConfigurationFile.targetLatencyRange
            throw ConfigurationError.Problem.outOfRange(
                key: "targetLatencyMilliseconds",
                allowed: "an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        logLevel = try Self.value(String.self, "logLevel", in: container, expected: "a string")
        if let level = logLevel, !ConfigurationFile.logLevels.contains(level) {
            let levels = ConfigurationFile.logLevels.map { "\"\($0)\"" }.joined(separator: " or ")
            throw ConfigurationError.Problem.outOfRange(key: "logLevel", allowed: levels)
        }
        sink = try Self.value(String.self, "sink", in: container, expected: "a string or null", nullAllowed: true)
        if sink?.isEmpty == true {
            throw ConfigurationError.Problem.outOfRange(
                key: "sink", allowed: "a sink name, or null for the server's default sink")
        }
    }

    /// The value under `key`, nil when absent (or null where allowed); any mismatch is a wrong type.
    private static func value<T: Decodable>(
        _ type: T.Type, _ key: String, in container: KeyedDecodingContainer<AnyKey>, expected: String,
        nullAllowed: Bool = false
    ) throws -> T? {
        let codingKey = AnyKey(stringValue: key)
        guard container.contains(codingKey) else { return nil }
        do {
            if try container.decodeNil(forKey: codingKey) {
                if nullAllowed { return nil }
                throw ConfigurationError.Problem.wrongType(key: key, expected: expected)
            }
            return try container.decode(T.self, forKey: codingKey)
        } catch let problem as ConfigurationError.Problem {
            throw problem
        } catch {
            // Any decoding failure here is about this key's value. Numbers that do not fit the type (50.5 or 1e30
            // for an integer) arrive as Foundation's internal parser error rather than a DecodingError.
            throw ConfigurationError.Problem.wrongType(key: key, expected: expected)
        }
    }

    /// `base` with every key the file sets replaced.
    func applied(onto base: PlayerConfiguration) -> PlayerConfiguration {
        var configuration = base
        if let triggerRoles { configuration.triggerRoles = Set(triggerRoles) }
        if let interruptionScope { configuration.interruptionScope = interruptionScope }
        if let resumeAfterInterruption { configuration.policy.resumeAfterInterruption = resumeAfterInterruption }
        if let resumeWindowMinutes {
            configuration.policy.resumeWindowMilliseconds = Int64((resumeWindowMinutes * 60_000).rounded())
        }
        if let mediaRole { configuration.mediaRole = mediaRole }
        if let targetLatencyMilliseconds { configuration.targetLatencyMilliseconds = targetLatencyMilliseconds }
        if let logLevel { configuration.debugLogging = logLevel == "debug" }
        if let sink { configuration.sinkName = sink }
        return configuration
    }
}

// Thrown from inside `ConfigurationContents.init(from:)`, which has no path; `parse` adds it.
extension ConfigurationError.Problem: Error {}

/// The XDG base directories Earshot uses.
enum XDGDirectory {
    /// `$XDG_CONFIG_HOME`, or `~/.config`.
    static func configHome(environment: [String: String]) -> String {
        absolute(environment["XDG_CONFIG_HOME"]) ?? home(environment: environment) + "/.config"
    }

    /// `$XDG_STATE_HOME`, or `~/.local/state`.
    static func stateHome(environment: [String: String]) -> String {
        absolute(environment["XDG_STATE_HOME"]) ?? home(environment: environment) + "/.local/state"
    }

    /// `$XDG_CACHE_HOME`, or `~/.cache`.
    static func cacheHome(environment: [String: String]) -> String {
        absolute(environment["XDG_CACHE_HOME"]) ?? home(environment: environment) + "/.cache"
    }

    /// `$HOME`, or the password database's home directory when it is unset (as under some service managers).
    static func home(environment: [String: String]) -> String {
        if let home = absolute(environment["HOME"]) { return home }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, let result,
           let directory = result.pointee.pw_dir {
            return String(cString: directory)
        }
        return "/"
    }

    /// `value` without a trailing slash when it is an absolute path, else nil.
    private static func absolute(_ value: String?) -> String? {
        guard let value, value.hasPrefix("/") else { return nil }
        var trimmed = value
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        return trimmed
    }
}
