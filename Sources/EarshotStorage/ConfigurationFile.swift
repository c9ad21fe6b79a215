// The configuration file: `$XDG_CONFIG_HOME/earshot/config.json` (default `~/.config/earshot/config.json`).
//
// A missing file means the defaults. Anything else the service does not fully understand (an unknown key,
// a wrong type, a value out of range, invalid JSON, an unreadable file) is an error naming the key and the
// file, and the service refuses to start: guessing what the user meant could mean playing when they asked
// it not to. `Config/config.json` in the repository documents every key with its default.
import AudioPipeline
import EarshotCore
import EarshotJSON
import EarshotService
import Glibc
import SystemSupport

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
        "targetLatencyMilliseconds", "logLevel", "sink", "callDetection", "callIgnoreApplications", "pauseOnLock",
        "fadeMs", "duckRoles", "duckLevel", "inhibitIdleSuspend", "musicDirectories", "replayGain",
        "replayGainPreampDb", "replayGainFallbackDb", "mpdListen", "playlistDirectory", "mpdPassword",
        "mpdConnectionTimeoutSeconds", "liveBufferMinutes", "radioReconnectMinutes",
    ]

    /// The allowed target latencies, in milliseconds.
    public static let targetLatencyRange = 10...2000
    /// The allowed resume windows, in minutes (up to one day).
    public static let resumeWindowMinutesRange = 0.0...1440.0
    /// The allowed live buffers, in minutes: fractions allowed, from 0.1 (6 s, more than a station's prebuffer and the
    /// ring hold while it plays) to two hours (at 2.4 MB a minute, 288 MB at most: the buffer lives in memory).
    public static let liveBufferMinutesRange = 0.1...120.0
    /// The allowed MPD connection timeouts, in seconds (up to one day).
    public static let mpdConnectionTimeoutRange = 1...86_400
    /// The allowed times a station's lost connection is retried, in minutes: fractions allowed, from 0.05 (3 s: an
    /// attempt or two) to a day.
    public static let radioReconnectMinutesRange = 0.05...1440.0
    /// The allowed fade lengths, in milliseconds (0: no fade; longer than half a second is a slow pause, not an edge).
    public static let fadeMillisecondsRange = 0...500
    /// The allowed duck levels, in decibels under the user's volume (0: no ducking).
    public static let duckLevelRange = -60.0...0.0
    /// The allowed ReplayGain preamps and fallback gains, in dB: as far as a tagged gain may go.
    public static let replayGainDecibelsRange = -ReplayGainTags.gainLimitDb...ReplayGainTags.gainLimitDb
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
        environment: [String: String] = ProcessEnvironment.current
    ) throws(ConfigurationError) -> PlayerConfiguration {
        let path = path(environment: environment)
        let data: [UInt8]
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

    /// Reads the file's `data` and applies it onto `base`; `path` only names the file in errors.
    public static func parse(
        _ data: some Collection<UInt8>, path: String, onto base: PlayerConfiguration = PlayerConfiguration()
    ) throws(ConfigurationError) -> PlayerConfiguration {
        let tree: Any
        do {
            tree = try JSONTree.parseValue(data)
        } catch {
            throw ConfigurationError(.invalidJSON, path: path)
        }
        guard let object = tree as? [String: Any] else { throw ConfigurationError(.notAnObject, path: path) }
        do {
            return try ConfigurationContents(object).applied(onto: base)
        } catch {
            throw ConfigurationError(error, path: path)
        }
    }

    private enum ReadFailure: Error {
        case missing
        case failed(reason: String)
    }

    /// The file's bytes. Read with POSIX calls so a missing file is told apart from an unreadable one.
    private static func readFile(at path: String) throws(ReadFailure) -> [UInt8] {
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
        var contents: [UInt8] = []
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

/// The file as read: every field optional, so that an absent key keeps its default.
struct ConfigurationContents {
    /// `triggerRoles`: stream roles that interrupt Earshot.
    var triggerRoles: [String]?
    /// `interruptionScope`: "session" or "sameSink".
    var interruptionScope: InterruptionScope?
    /// `resumeAfterInterruption`.
    var resumeAfterInterruption: Bool?
    /// `resumeWindowMinutes` (0...1440).
    var resumeWindowMinutes: Double?
    /// `liveBufferMinutes` (0.1...1440).
    var liveBufferMinutes: Double?
    /// `radioReconnectMinutes` (0.05...1440): how long a station's lost connection is retried (rule 41).
    var radioReconnectMinutes: Double?
    /// `mediaRole`: our stream's `media.role`.
    var mediaRole: String?
    /// `targetLatencyMilliseconds` (10...2000).
    var targetLatencyMilliseconds: Int?
    /// `logLevel`: "info" or "debug".
    var logLevel: String?
    /// `sink`: a sink name; absent or null for the server's default.
    var sink: String?
    /// `callDetection`: "microphone", "knownApps" or "roles".
    var callDetection: CallDetection?
    /// `callIgnoreApplications`: application names whose captures never count as calls.
    var callIgnoreApplications: [String]?
    /// `pauseOnLock`: whether a screen lock pauses as sleep does.
    var pauseOnLock: Bool?
    /// `inhibitIdleSuspend`: whether the desktop's idle suspend is held off while playing.
    var inhibitIdleSuspend: Bool?
    /// `fadeMs`: how long a fade lasts (0...500, 0: none).
    var fadeMilliseconds: Int?
    /// `duckRoles`: stream roles that duck Earshot.
    var duckRoles: [String]?
    /// `duckLevel`: decibels under the user's volume while ducked (-60...0).
    var duckLevel: Double?
    /// `replayGain`: "off", "track", "album" or "auto".
    var replayGainMode: ReplayGainMode?
    /// `replayGainPreampDb` and `replayGainFallbackDb` (-40...40).
    var replayGainPreampDb: Double?
    var replayGainFallbackDb: Double?
    /// `musicDirectories`: the library's music folders (absolute, or `~/...`); absent or null for the XDG music folder.
    var musicDirectories: [String]?
    /// `mpdListen`: where MPD's protocol is served, "HOST:PORT" strings and absolute socket paths; empty: off; absent
    /// or null: 127.0.0.1:6600 and `mpd.socket` beside the control socket.
    var mpdListen: [String]?
    /// `playlistDirectory`: the folder of MPD's stored playlists (absolute, or `~/...`); absent or null for
    /// `$XDG_DATA_HOME/earshot/playlists`.
    var playlistDirectory: String?
    /// `mpdPassword`: the password MPD's clients must send before any other command; null: none. Required for an
    /// `mpdListen` address that is not loopback.
    var mpdPassword: String?
    /// `mpdConnectionTimeoutSeconds` (1...86400): how long an MPD client outside `idle` may send nothing.
    var mpdConnectionTimeoutSeconds: Int?

    /// Reads the file's top-level object, refusing unknown keys, wrong types and values out of range with a
    /// `ConfigurationError.Problem` that names the key. Keys are checked in this order, so a file with several
    /// mistakes is always refused for the same one.
    init(_ object: [String: Any]) throws(ConfigurationError.Problem) {
        let allowed = Set(ConfigurationFile.knownKeys + [ConfigurationFile.commentKey])
        let unknown = object.keys.filter { !allowed.contains($0) }.sorted()
        if !unknown.isEmpty { throw .unknownKeys(unknown) }

        _ = try Self.value(ConfigurationFile.commentKey, in: object, expected: "a string") { $0 as? String }
        triggerRoles = try Self.value("triggerRoles", in: object, expected: "an array of strings") { value in
            guard let elements = value as? [Any] else { return nil }
            let strings = elements.compactMap { $0 as? String }
            return strings.count == elements.count ? strings : nil
        }
        if let roles = triggerRoles, roles.contains(where: { $0.isEmpty }) {
            throw .outOfRange(key: "triggerRoles", allowed: "an array of non-empty strings")
        }
        if let scope = try Self.value("interruptionScope", in: object, expected: "a string", { $0 as? String }) {
            guard let known = InterruptionScope(rawValue: scope) else {
                let scopes = InterruptionScope.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
                throw .outOfRange(key: "interruptionScope", allowed: scopes)
            }
            interruptionScope = known
        }
        resumeAfterInterruption = try Self.value(
            "resumeAfterInterruption", in: object, expected: "a boolean (true or false)") { $0 as? Bool }
        // JSONTree reads an integral number as an Int; a number of minutes may be either.
        resumeWindowMinutes = try Self.value("resumeWindowMinutes", in: object, expected: "a number") { value in
            (value as? Int).map(Double.init) ?? (value as? Double)
        }
        if let minutes = resumeWindowMinutes, !ConfigurationFile.resumeWindowMinutesRange.contains(minutes) {
            let range = ConfigurationFile.resumeWindowMinutesRange
            throw .outOfRange(
                key: "resumeWindowMinutes", allowed: "a number of minutes from \(Int(range.lowerBound)) to "
                    + "\(Int(range.upperBound))")
        }
        liveBufferMinutes = try Self.minutes("liveBufferMinutes", in: object,
                                             within: ConfigurationFile.liveBufferMinutesRange)
        radioReconnectMinutes = try Self.minutes("radioReconnectMinutes", in: object,
                                                 within: ConfigurationFile.radioReconnectMinutesRange)
        mediaRole = try Self.value("mediaRole", in: object, expected: "a string") { $0 as? String }
        if mediaRole?.isEmpty == true {
            throw .outOfRange(key: "mediaRole", allowed: "a non-empty string")
        }
        targetLatencyMilliseconds = try Self.value(
            "targetLatencyMilliseconds", in: object, expected: "an integer") { $0 as? Int }
        if let latency = targetLatencyMilliseconds, !ConfigurationFile.targetLatencyRange.contains(latency) {
            let range = ConfigurationFile.targetLatencyRange
            throw .outOfRange(
                key: "targetLatencyMilliseconds",
                allowed: "an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        logLevel = try Self.value("logLevel", in: object, expected: "a string") { $0 as? String }
        if let level = logLevel, !ConfigurationFile.logLevels.contains(level) {
            let levels = ConfigurationFile.logLevels.map { "\"\($0)\"" }.joined(separator: " or ")
            throw .outOfRange(key: "logLevel", allowed: levels)
        }
        sink = try Self.value("sink", in: object, expected: "a string or null", nullAllowed: true) { $0 as? String }
        if sink?.isEmpty == true {
            throw .outOfRange(key: "sink", allowed: "a sink name, or null for the server's default sink")
        }
        if let detection = try Self.value("callDetection", in: object, expected: "a string", { $0 as? String }) {
            guard let known = CallDetection(rawValue: detection) else {
                let kinds = CallDetection.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                throw .outOfRange(key: "callDetection", allowed: "one of \(kinds)")
            }
            callDetection = known
        }
        callIgnoreApplications = try Self.value(
            "callIgnoreApplications", in: object, expected: "an array of strings") { value in
            guard let elements = value as? [Any] else { return nil }
            let strings = elements.compactMap { $0 as? String }
            return strings.count == elements.count ? strings : nil
        }
        if let names = callIgnoreApplications, names.contains(where: { $0.isEmpty }) {
            throw .outOfRange(key: "callIgnoreApplications", allowed: "an array of non-empty application names")
        }
        pauseOnLock = try Self.value("pauseOnLock", in: object, expected: "a boolean (true or false)") { $0 as? Bool }
        inhibitIdleSuspend = try Self.value("inhibitIdleSuspend", in: object, expected: "a boolean (true or false)") {
            $0 as? Bool
        }
        try readEdges(object)
        try readReplayGain(object)
        musicDirectories = try Self.value(
            "musicDirectories", in: object, expected: "an array of strings or null", nullAllowed: true) { value in
            guard let elements = value as? [Any] else { return nil }
            let strings = elements.compactMap { $0 as? String }
            return strings.count == elements.count ? strings : nil
        }
        if let folders = musicDirectories, folders.contains(where: { !$0.hasPrefix("/") && !$0.hasPrefix("~/") }) {
            throw .outOfRange(key: "musicDirectories", allowed: "an array of absolute paths (or paths starting ~/)")
        }
        mpdListen = try Self.value(
            "mpdListen", in: object, expected: "an array of strings or null", nullAllowed: true) { value in
            guard let elements = value as? [Any] else { return nil }
            let strings = elements.compactMap { $0 as? String }
            return strings.count == elements.count ? strings : nil
        }
        if let addresses = mpdListen, !addresses.allSatisfy(Self.isListenAddress) {
            throw .outOfRange(key: "mpdListen", allowed: "an array of \"HOST:PORT\" strings and absolute socket paths")
        }
        playlistDirectory = try Self.value(
            "playlistDirectory", in: object, expected: "a string or null", nullAllowed: true) { $0 as? String }
        if let folder = playlistDirectory, !folder.hasPrefix("/") && !folder.hasPrefix("~/") {
            throw .outOfRange(key: "playlistDirectory", allowed: "an absolute path (or a path starting ~/)")
        }
        mpdPassword = try Self.value("mpdPassword", in: object, expected: "a string or null", nullAllowed: true) {
            guard let text = $0 as? String, !text.isEmpty, !text.contains("\n") else { return nil }
            return text
        }
        mpdConnectionTimeoutSeconds = try Self.value(
            "mpdConnectionTimeoutSeconds", in: object, expected: "an integer") { $0 as? Int }
        if let timeout = mpdConnectionTimeoutSeconds, !ConfigurationFile.mpdConnectionTimeoutRange.contains(timeout) {
            let range = ConfigurationFile.mpdConnectionTimeoutRange
            throw .outOfRange(key: "mpdConnectionTimeoutSeconds",
                              allowed: "an integer from \(range.lowerBound) to \(range.upperBound) (seconds)")
        }
        if mpdPassword == nil, let addresses = mpdListen, addresses.contains(where: { !Self.isLoopback($0) }) {
            throw .outOfRange(key: "mpdListen",
                              allowed: "loopback addresses and socket paths, unless mpdPassword is set")
        }
    }

    /// A socket path, `localhost` or an address of 127.0.0.0/8.
    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("/") || address.hasPrefix("localhost:") || address.hasPrefix("127.")
    }

    /// An absolute path, or an IPv4 address (or `localhost`), a colon and a port from 1 to 65535.
    static func isListenAddress(_ text: String) -> Bool {
        if text.hasPrefix("/") { return text.utf8.count < 108 }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (1...65535).contains(port) else { return false }
        let host = text[..<colon]
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && (Int(part) ?? 256) < 256
        }
    }

    /// Reads the fade and ducking keys (`fadeMs`, `duckRoles`, `duckLevel`).
    private mutating func readEdges(_ object: [String: Any]) throws(ConfigurationError.Problem) {
        fadeMilliseconds = try Self.value("fadeMs", in: object, expected: "an integer") { $0 as? Int }
        if let fade = fadeMilliseconds, !ConfigurationFile.fadeMillisecondsRange.contains(fade) {
            let range = ConfigurationFile.fadeMillisecondsRange
            throw .outOfRange(key: "fadeMs", allowed: "an integer from \(range.lowerBound) to \(range.upperBound) "
                                + "(milliseconds; 0 turns fades off)")
        }
        duckRoles = try Self.value("duckRoles", in: object, expected: "an array of strings") { value in
            guard let elements = value as? [Any] else { return nil }
            let strings = elements.compactMap { $0 as? String }
            return strings.count == elements.count ? strings : nil
        }
        if let roles = duckRoles, roles.contains(where: { $0.isEmpty }) {
            throw .outOfRange(key: "duckRoles", allowed: "an array of non-empty strings")
        }
        duckLevel = try Self.value("duckLevel", in: object, expected: "a number") { value in
            (value as? Int).map(Double.init) ?? (value as? Double)
        }
        if let level = duckLevel, !ConfigurationFile.duckLevelRange.contains(level) {
            let range = ConfigurationFile.duckLevelRange
            throw .outOfRange(key: "duckLevel", allowed: "a number of decibels from \(Int(range.lowerBound)) to "
                                + "\(Int(range.upperBound)) (0 turns ducking off)")
        }
    }

    /// Reads the ReplayGain keys (`replayGain`, `replayGainPreampDb`, `replayGainFallbackDb`).
    private mutating func readReplayGain(_ object: [String: Any]) throws(ConfigurationError.Problem) {
        if let mode = try Self.value("replayGain", in: object, expected: "a string", { $0 as? String }) {
            guard let known = ReplayGainMode(rawValue: mode) else {
                let modes = ReplayGainMode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                throw .outOfRange(key: "replayGain", allowed: "one of \(modes)")
            }
            replayGainMode = known
        }
        for key in ["replayGainPreampDb", "replayGainFallbackDb"] {
            let decibels = try Self.value(key, in: object, expected: "a number") { value in
                (value as? Int).map(Double.init) ?? (value as? Double)
            }
            if let decibels, !ConfigurationFile.replayGainDecibelsRange.contains(decibels) {
                let range = ConfigurationFile.replayGainDecibelsRange
                throw .outOfRange(key: key, allowed: "a number of decibels from \(Int(range.lowerBound)) to "
                                    + "\(Int(range.upperBound))")
            }
            if key == "replayGainPreampDb" { replayGainPreampDb = decibels } else { replayGainFallbackDb = decibels }
        }
    }

    /// The value under `key` as `read` makes it, nil when absent (or null where allowed); a value `read` refuses
    /// (nil) is a wrong type, as is null where it is not allowed.
    /// A number of minutes at `key` (fractions allowed) within `range`, or nil when absent.
    private static func minutes(
        _ key: String, in object: [String: Any], within range: ClosedRange<Double>
    ) throws(ConfigurationError.Problem) -> Double? {
        let minutes = try value(key, in: object, expected: "a number") { value in
            (value as? Int).map(Double.init) ?? (value as? Double)
        }
        if let minutes, !range.contains(minutes) {
            throw .outOfRange(key: key,
                              allowed: "a number of minutes from \(range.lowerBound) to \(Int(range.upperBound))")
        }
        return minutes
    }

    private static func value<T>(
        _ key: String, in object: [String: Any], expected: String, nullAllowed: Bool = false,
        _ read: (Any) -> T?
    ) throws(ConfigurationError.Problem) -> T? {
        guard let value = object[key] else { return nil }
        if value is JSONNull {
            if nullAllowed { return nil }
            throw .wrongType(key: key, expected: expected)
        }
        guard let typed = read(value) else { throw .wrongType(key: key, expected: expected) }
        return typed
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
        if let callDetection { configuration.callDetection = callDetection }
        if let callIgnoreApplications { configuration.callIgnoreApplications = Set(callIgnoreApplications) }
        if let pauseOnLock { configuration.policy.pauseOnLock = pauseOnLock }
        if let inhibitIdleSuspend { configuration.policy.inhibitIdleSuspend = inhibitIdleSuspend }
        if let fadeMilliseconds { configuration.fadeMilliseconds = fadeMilliseconds }
        if let liveBufferMinutes { configuration.liveBufferSeconds = liveBufferMinutes * 60 }
        if let radioReconnectMinutes {
            configuration.policy.liveReconnect.giveUpMilliseconds = Int64(radioReconnectMinutes * 60_000)
        }
        if let duckRoles { configuration.duckRoles = Set(duckRoles) }
        if let duckLevel { configuration.duckLevelDecibels = duckLevel }
        if let musicDirectories { configuration.musicDirectories = musicDirectories }
        if let replayGainMode { configuration.replayGain.mode = replayGainMode }
        if let replayGainPreampDb { configuration.replayGain.preampDb = replayGainPreampDb }
        if let replayGainFallbackDb { configuration.replayGain.fallbackDb = replayGainFallbackDb }
        if let mpdListen { configuration.mpdListen = mpdListen }
        if let playlistDirectory { configuration.playlistDirectory = playlistDirectory }
        if let mpdPassword { configuration.mpdPassword = mpdPassword }
        if let mpdConnectionTimeoutSeconds { configuration.mpdConnectionTimeoutSeconds = mpdConnectionTimeoutSeconds }
        return configuration
    }
}

// Thrown from inside `ConfigurationContents.init`, which has no path; `parse` adds it.
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
