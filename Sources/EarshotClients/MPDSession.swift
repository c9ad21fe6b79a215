// One MPD client's commands in Earshot's terms: each typed `MPDCommand` becomes the same `ControlRequest` the CLI
// sends (so the rulebook decides, as for any user), and the owner's JSON reply becomes MPD's `key: value` lines.
// `pause 1` is `pause`, `pause 0` is the user's `play`, bare `pause` (MPD's old toggle) is `toggle`; nothing here
// reaches the stream. Runs on the client's own thread, which may wait for the owner's reply; the owner never waits.
import EarshotJSON
import EarshotService
import MPDProtocol
import TrackPaths

/// The commands one MPD connection may run, and the connection's own state (whether it asked to close).
public struct MPDSession {
    /// Asks the owner one request and returns its reply line (the control socket's handler).
    public typealias Ask = (ControlRequest) -> String

    /// The protocol version in the greeting: the commands answered are MPD 0.23's.
    public static let greeting = "OK MPD 0.23.0\n"

    /// The commands this server answers; every other name is MPD's unknown command. `idle` and `noidle` are the
    /// server's own (MPDServer, MPDChanges), never `run`'s.
    public static let answered: [String] = [
        "add", "addid", "albumart", "binarylimit", "clear", "clearerror", "close", "commands", "consume", "count",
        "crossfade", "currentsong", "decoders", "delete", "deleteid", "disableoutput", "enableoutput", "find",
        "findadd", "getvol", "idle", "list", "listall", "listallinfo", "listfiles", "listplaylist",
        "listplaylistinfo", "listplaylists", "load", "lsinfo", "move", "moveid", "next", "noidle", "notcommands",
        "outputs", "password", "pause", "ping", "play", "playid", "playlistadd", "playlistclear", "playlistdelete",
        "playlistfind", "playlistid", "playlistinfo", "playlistsearch", "plchanges", "plchangesposid", "previous",
        "prio", "prioid", "random", "readpicture", "rename", "repeat", "replay_gain_mode", "replay_gain_status",
        "rescan", "rm", "save", "search", "searchadd", "seek", "seekcur", "seekid", "setvol", "shuffle", "single",
        "stats", "status", "stop", "swap", "swapid", "tagtypes", "toggleoutput", "update", "urlhandlers", "volume",
    ]

    /// The tags `tagtypes` lists: those the library reads.
    static let tagTypes = ["Artist", "AlbumArtist", "Album", "Title", "Track", "Genre", "Date", "Composer", "Disc"]

    private let ask: Ask
    /// The stored playlists' folder (nil: none configured, the commands are refused).
    let playlists: MPDStoredPlaylists?
    /// The music folders `listfiles` reads.
    let musicFolders: MPDMusicFolders
    /// What this connection's commands changed that the event log does not tell (a stored playlist, the output, the
    /// ReplayGain mode): the server hands it to every connection's `idle` and empties it.
    public var changed: Set<MPDSubsystem> = []
    /// The password that unlocks this connection (configuration `mpdPassword`); nil: none needed.
    let password: String?
    /// Whether this connection may run every command: no password is configured, or it sent the right one.
    var authorized: Bool
    /// The largest binary chunk this client takes (`binarylimit`; MPD's default).
    var binaryLimit = 8192
    /// The last picture read, by its URI and kind: a client reads one picture in many chunks.
    var lastPicture: (key: String, picture: MPDPicture?)?
    /// Earshot's one output, switched by `enableoutput` and `disableoutput` (shared by every connection).
    let outputSwitch: MPDOutputSwitch
    /// Set by `close`: the server closes the connection after the reply.
    public private(set) var closeRequested = false

    /// A session that reaches the owner through `ask`, with stored playlists in `playlistDirectory` and the files
    /// of `musicFolders` for `listfiles`.
    public init(ask: @escaping Ask, playlistDirectory: String? = nil, password: String? = nil,
                outputSwitch: MPDOutputSwitch = MPDOutputSwitch(), musicFolders: [TrackPath] = []) {
        self.ask = ask
        self.musicFolders = MPDMusicFolders(roots: musicFolders)
        playlists = playlistDirectory.map(MPDStoredPlaylists.init(directory:))
        self.password = password
        authorized = password == nil
        self.outputSwitch = outputSwitch
    }

    /// Runs one request: its reply lines (each ending with a newline), or MPD's error.
    public mutating func run(_ request: MPDRequest) -> Result<String, MPDError> {
        guard Self.answered.contains(request.name) else {
            return .failure(MPDError(.unknown, "unknown command \"\(request.name)\""))
        }
        if let refusal = refusal(of: request.name) { return .failure(refusal) }
        switch MPDCommand.parse(request) {
        case .failure(let error): return .failure(error)
        case .success(let command): return run(command, name: request.name)
        }
    }

    private mutating func run(_ command: MPDCommand, name: String) -> Result<String, MPDError> {
        switch command {
        case .ping, .notcommands, .urlhandlers: return .success("")
        case .binarylimit(let size):
            binaryLimit = size
            return .success("")
        case .albumart, .readpicture:
            // Binary replies are the server's (`picture`), outside command lists only.
            return .failure(MPDError(.argument, command: name, "\(name) is answered outside command lists only"))
        case .close:
            closeRequested = true
            return .success("")
        case .commands: return .success(Self.answered.map { "command: \($0)\n" }.joined())
        case .tagtypes(let words):
            return .success(words.isEmpty ? Self.tagTypes.map { "tagtype: \($0)\n" }.joined() : "")
        case .decoders:
            return .success("plugin: earshot\n" + ["mp3", "flac", "ogg", "oga", "opus"].map { "suffix: \($0)\n" }
                .joined())
        case .status: return status().map(Self.statusLines)
        case .stats: return .success("uptime: 0\nplaytime: 0\n")
        case .getvol: return status().map { "volume: \(Self.integer($0["volume"]) ?? 0)\n" }
        case .play(nil): return perform(.play, name)
        case .pause(let paused):
            switch paused {
            case true?: return perform(.pause, name)
            case false?: return perform(.play, name)
            case nil: return perform(.toggle, name)
            }
        case .stop: return perform(.stop, name)
        case .next: return perform(.next, name)
        case .previous: return perform(.previous, name)
        case .seekcur(.to(let seconds)): return perform(.seek(seconds: seconds), name)
        case .seekcur(.by(let seconds)):
            return status().flatMap { status in
                let now = Double(Self.integer(status["positionMs"]) ?? 0) / 1000
                return perform(.seek(seconds: max(0, now + seconds)), name)
            }
        case .setvol(let percent): return perform(.volume(percent: percent), name)
        case .volume(let change):
            return status().flatMap { status in
                let percent = min(100, max(0, (Self.integer(status["volume"]) ?? 0) + change))
                return perform(.volume(percent: percent), name)
            }
        case .repeat(let on):
            guard on else { return perform(.repeatMode(.off), name) }
            // Earshot's repeat of one track is already MPD's repeat (with single): it stays.
            return status().flatMap { status in
                status["repeat"] as? String ?? "off" == "off" ? perform(.repeatMode(.queue), name) : .success("")
            }
        case .random(let on): return perform(.shuffle(on: on), name)
        case .clear: return perform(.clear, name)
        case .currentsong:
            return queue(name).flatMap { queue in
                guard let status = try? status().get(), status["playback"] as? String != "stopped",
                      let index = Self.integer(status["trackIndex"]), queue.paths.indices.contains(index) else {
                    return .success("")
                }
                return .success(queue.songLines(index))
            }
        case .playlistinfo(let range):
            return queue(name).flatMap { queue in
                let start = range?.start ?? 0
                let end = min(range?.end ?? queue.paths.count, queue.paths.count)
                if let range, range.start >= queue.paths.count, !(range.start == 0 && range.end == nil) {
                    return .failure(MPDError(.argument, command: name, "Bad song index"))
                }
                guard start < end else { return .success("") }
                return .success((start..<end).map(queue.songLines).joined())
            }
        default:
            if let reply = queueReply(command, name: name) ?? libraryReply(command, name: name) { return reply }
            if let reply = playlistReply(command, name: name) ?? outputReply(command, name: name) { return reply }
            // Typed by the parser but not answered by this server yet: unknown, as in `commands`.
            return .failure(MPDError(.unknown, "unknown command \"\(name)\""))
        }
    }

    /// Sends `request` and answers with no lines, or the owner's refusal as MPD's error for `name`.
    func perform(_ request: ControlRequest, _ name: String) -> Result<String, MPDError> {
        reply(to: request, name).map { _ in "" }
    }

    /// The queue as the owner lists it: paths (a path that is not UTF-8 is shown as such), ids, versions.
    func queue(_ name: String) -> Result<MPDQueueView, MPDError> {
        reply(to: .queue, name).map { object in
            let entries = object["queue"] as? [Any] ?? []
            let paths = entries.map { entry in
                if let text = entry as? String { return text }
                // TrackPath's lossless form for bytes that are not UTF-8: MPD's protocol is UTF-8 only.
                return "(not UTF-8)"
            }
            func integers(_ key: String) -> [Int] { (object[key] as? [Any] ?? []).map { Self.integer($0) ?? 0 } }
            return MPDQueueView(paths: paths, ids: integers("ids"), versions: integers("versions"),
                                version: Self.integer(object["version"]) ?? 0,
                                current: Self.integer(object["current"]) ?? 0)
        }
    }

    /// The owner's status object.
    func status() -> Result<[String: Any], MPDError> {
        reply(to: .status, "status").flatMap { object in
            guard let status = object["status"] as? [String: Any] else {
                return .failure(MPDError(.system, command: "status", "the player's status could not be read"))
            }
            return .success(status)
        }
    }

    /// The owner's reply to `request`, or its refusal as MPD's error: `missing` (MPD's bad index, an argument error)
    /// when the owner refused with that reason.
    func reply(to request: ControlRequest, _ name: String, missing: String? = nil) -> Result<[String: Any], MPDError> {
        let line = ask(request)
        guard let object = (try? JSONTree.parse(Array(line.utf8))) as? [String: Any] else {
            return .failure(MPDError(.system, command: name, "the player's reply could not be read"))
        }
        guard object["ok"] as? Bool == true else {
            if let missing, object["error"] as? String == missing {
                return .failure(MPDError(.argument, command: name, missing))
            }
            // A query the library could not parse is the client's argument error, a folder it lacks MPD's no-exist.
            let refusal = object["refusal"] as? String
            let code: MPDErrorCode = refusal == "query" ? .argument : refusal == "missing" ? .noExist : .system
            return .failure(MPDError(code, command: name, object["error"] as? String ?? "refused"))
        }
        return .success(object)
    }

    /// MPD's `status` lines from Earshot's status object.
    static func statusLines(_ status: [String: Any]) -> String {
        let state: String
        switch status["playback"] as? String {
        case "playing": state = "play"
        case "paused": state = "pause"
        default: state = "stop"
        }
        let repeatMode = status["repeat"] as? String ?? "off"
        let single = status["single"] as? String ?? "off"
        let count = integer(status["trackCount"]) ?? 0
        var lines = [
            "volume: \(integer(status["volume"]) ?? 0)",
            "repeat: \(repeatMode == "off" ? 0 : 1)",
            "random: \(status["shuffle"] as? Bool == true ? 1 : 0)",
            // Earshot's single; its repeat of one track is MPD's repeat with single.
            "single: \(single == "oneshot" ? "oneshot" : single == "on" || repeatMode == "track" ? "1" : "0")",
            "consume: \(status["consume"] as? Bool == true ? 1 : 0)",
            "playlist: \(integer(status["queueVersion"]) ?? 1)",
            "playlistlength: \(count)",
            "state: \(state)",
        ]
        if state != "stop", let index = integer(status["trackIndex"]), index >= 0, index < count {
            lines.append("song: \(index)")
            lines.append("songid: \(integer(status["trackID"]) ?? index + 1)")
            lines.append("elapsed: \(seconds(milliseconds: integer(status["positionMs"]) ?? 0))")
            if let duration = integer(status["durationMs"]) {
                lines.append("duration: \(seconds(milliseconds: duration))")
            }
        }
        if state != "stop", let next = integer(status["nextTrackIndex"]), let nextID = integer(status["nextTrackID"]) {
            lines.append("nextsong: \(next)")
            lines.append("nextsongid: \(nextID)")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// A JSON number as an integer (JSON numbers with a fraction are rounded down).
    static func integer(_ value: Any?) -> Int? {
        if let value = value as? Int { return value }
        if let value = value as? Double, value.isFinite, abs(value) < 1e15 { return Int(value) }
        return nil
    }

    /// Milliseconds as MPD writes seconds: three decimals.
    static func seconds(milliseconds: Int) -> String {
        let value = max(0, milliseconds)
        let fraction = String(value % 1000)
        return "\(value / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
