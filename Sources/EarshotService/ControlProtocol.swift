// The control protocol: one JSON object per line each way, over a Unix socket.
//
//   request:  {"command": "pause"}            {"command": "seek", "seconds": 30.5}
//   reply:    {"ok": true, "status": {...}}   {"ok": false, "error": "unknown command 'paws'"}
//
// File paths are bytes, and a Linux file name need not be UTF-8, while a JSON line must be. So each entry of
// `paths` (and of a `queue` reply) is a JSON string when the path is valid UTF-8, as it always was, and an
// object `{"base64": "..."}` holding the raw bytes otherwise (TrackPath's lossless JSON form):
//
//   {"command": "add", "paths": ["/music/a.mp3", {"base64": "L211c2ljL//+Lm1wMw=="}]}
//
// Parsing is a pure function of the line's bytes, so it can be tested (and fuzzed) without a socket.
import AudioPipeline
import EarshotCore
import EarshotJSON
import Glibc
import TrackPaths

/// A request a client can make of the player.
public enum ControlRequest: Equatable, Sendable {
    /// Play or resume.
    case play
    /// Pause (idempotent).
    case pause
    /// Play if paused, pause if playing.
    case toggle
    /// Stop.
    case stop
    /// Next track.
    case next
    /// Previous track.
    case previous
    /// Move to `seconds` into the current track.
    case seek(seconds: Double)
    /// Jump to a live stream's live edge (RULES.md row 33).
    case live
    /// Set the volume in percent.
    case volume(percent: Int)
    /// Choose what follows a track's end and the queue's end: `{"command": "repeat", "mode": "track"}`.
    case repeatMode(RepeatMode)
    /// Turn shuffle on or off: `{"command": "shuffle", "on": true}`.
    case shuffle(on: Bool)
    /// Stop after each track, after this one, or never (rules 35 and 36): `{"command": "single", "mode": "oneshot"}`.
    case single(SingleMode)
    /// Take each track played or skipped out of the queue (rule 37): `{"command": "consume", "on": true}`.
    case consume(on: Bool)
    /// Choose which ReplayGain value plays, from the next track: `{"command": "replaygain", "mode": "album"}`.
    case replayGain(ReplayGainMode)
    /// Report the status.
    case status
    /// Keep the connection open and receive every event-log line as it happens.
    case events
    /// Replace the queue with `paths` (and play them when `play`).
    case load(paths: [TrackPath], play: Bool)
    /// Append `paths` to the queue.
    case add(paths: [TrackPath])
    /// Empty the queue.
    case clear
    /// List the queue.
    case queue
    /// Scan the music library (every folder, or `path` only; `rescan` reads unchanged files again):
    /// `{"command": "update", "path": "Jazz"}`, `{"command": "rescan"}`.
    case update(path: TrackPath?, rescan: Bool)
    /// A library query in mpc's words: `search`, `find`, `list`, `searchadd` or `findadd` and its TAG VALUE words:
    /// `{"command": "search", "words": ["artist", "miles"]}`. The library answers it, off the owner. Tracks come as
    /// their paths only unless `tags` (`"tags": true`) asks for every field (what `--json` prints).
    case libraryQuery(verb: String, words: [String], tags: Bool = false)
    /// List a folder of the library (`{"command": "ls", "path": "Jazz"}`; no path for the top).
    case browse(path: TrackPath?)
    /// Edit the queue in place (ControlProtocol+Queue.swift): `paths` are the tracks an insertion adds.
    case edit(QueueEdit, paths: [TrackPath])
    /// Play the track at `index` of the queue: `{"command": "jump", "index": 3}`.
    case jump(index: Int)
    /// A queue entry's command by its id (MPD's song id), which the owner resolves to a position as it handles it:
    /// nothing can change the queue between the two (ControlProtocol+Queue.swift).
    case byID(EntryIDRequest)

    /// The command names the protocol accepts.
    public static let commandNames = [
        "play", "pause", "toggle", "stop", "next", "previous", "seek", "live", "volume", "repeat", "shuffle", "single",
        "consume", "replaygain",
        "status", "events", "load", "add", "clear", "queue", "update", "rescan", "search", "find", "list", "searchadd",
        "findadd", "ls", "delete", "move", "swap", "insert", "reorder", "jump", "playid", "deleteid", "moveid", "swapid",
        "seekid",
    ]

    /// The library's query commands.
    public static let libraryQueryNames = ["search", "find", "list", "searchadd", "findadd"]
}

/// Why a request line was refused. The message never repeats the request's content beyond its command
/// name, so a client cannot make the service echo arbitrary bytes into logs.
public struct ControlRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A one-line explanation for the client.
    public var message: String

    /// An error with `message`.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension ControlRequest {
    /// The longest request line the service reads; longer lines are refused without being buffered whole.
    public static let maximumLineBytes = 64 * 1024

    /// Parses one request line (without its newline).
    public static func parse(_ line: some Collection<UInt8>) -> Result<ControlRequest, ControlRequestError> {
        guard line.count <= maximumLineBytes else {
            return .failure(ControlRequestError("request longer than \(maximumLineBytes) bytes"))
        }
        guard String(validating: line, as: UTF8.self) != nil else {
            return .failure(ControlRequestError("request is not valid UTF-8"))
        }
        let object: Any
        do {
            object = try JSONTree.parse(line)
        } catch {
            return .failure(ControlRequestError("request is not valid JSON"))
        }
        guard let fields = object as? [String: Any] else {
            return .failure(ControlRequestError("request must be a JSON object"))
        }
        guard let command = fields["command"] as? String else {
            return .failure(ControlRequestError("request needs a string field 'command'"))
        }
        switch command {
        case "play", "resume": return .success(.play)
        case "pause": return .success(.pause)
        case "toggle": return .success(.toggle)
        case "stop": return .success(.stop)
        case "next": return .success(.next)
        case "previous": return .success(.previous)
        case "live": return .success(.live)
        case "status": return .success(.status)
        case "events": return .success(.events)
        case "clear": return .success(.clear)
        case "queue": return .success(.queue)
        case "load", "add":
            let entries = fields["paths"] as? [Any] ?? []
            let paths = entries.compactMap(TrackPath.init(jsonValue:))
            guard !paths.isEmpty, paths.count == entries.count else {
                return .failure(ControlRequestError(
                    "\(command) needs a non-empty array field 'paths' of paths: strings, or {\"base64\": ...} "
                        + "objects for names that are not UTF-8"))
            }
            if command == "add" { return .success(.add(paths: paths)) }
            let play = fields["play"].map { ($0 as? Bool) ?? false } ?? true
            return .success(.load(paths: paths, play: play))
        case "update", "rescan", "ls":
            var path: TrackPath?
            if let value = fields["path"], !(value is JSONNull) {
                guard let given = TrackPath(jsonValue: value) else {
                    return .failure(ControlRequestError(
                        "\(command) takes an optional field 'path': a string, or a {\"base64\": ...} object"))
                }
                path = given
            }
            if command == "ls" { return .success(.browse(path: path)) }
            return .success(.update(path: path, rescan: command == "rescan"))
        case _ where queueEditNames.contains(command):
            return parseQueueEdit(command, fields)
        case _ where EntryIDRequest.names.contains(command):
            return EntryIDRequest.parse(command, fields).map { .byID($0) }
        case _ where libraryQueryNames.contains(command):
            let entries = fields["words"] as? [Any] ?? []
            let words = entries.compactMap { $0 as? String }
            guard !words.isEmpty, words.count == entries.count, words.count <= 64 else {
                return .failure(ControlRequestError("\(command) needs an array field 'words' of 1 to 64 strings"))
            }
            guard let tags = fields["tags"].map({ $0 as? Bool }) ?? false else {
                return .failure(ControlRequestError("\(command) takes an optional Boolean field 'tags'"))
            }
            return .success(.libraryQuery(verb: command, words: words, tags: tags))
        case "seek":
            // Rounded to milliseconds, the player's step, before the range check. Rounding also makes a request
            // survive its own JSON line: a decimal longer than a Double holds could parse one unit in the last place
            // away from its written-back form (found by fuzzing).
            guard let given = number(fields["seconds"]), case let seconds = (given * 1000).rounded() / 1000,
                seconds.isFinite, seconds >= 0, seconds < 1e7
            else {
                return .failure(ControlRequestError("seek needs a number field 'seconds' >= 0"))
            }
            return .success(.seek(seconds: seconds))
        case "volume":
            guard let percent = number(fields["percent"]), percent.isFinite, (0...150).contains(percent) else {
                return .failure(ControlRequestError("volume needs a number field 'percent' from 0 to 150"))
            }
            return .success(.volume(percent: Int(percent.rounded())))
        case "repeat":
            guard let mode = (fields["mode"] as? String).flatMap(RepeatMode.init(rawValue:)) else {
                return .failure(ControlRequestError("repeat needs a string field 'mode': off, track or queue"))
            }
            return .success(.repeatMode(mode))
        case "replaygain":
            guard let mode = (fields["mode"] as? String).flatMap(ReplayGainMode.init(rawValue:)) else {
                return .failure(
                    ControlRequestError("replaygain needs a string field 'mode': off, track, album or auto"))
            }
            return .success(.replayGain(mode))
        case "shuffle":
            guard let on = fields["on"] as? Bool else {
                return .failure(ControlRequestError("shuffle needs a Boolean field 'on'"))
            }
            return .success(.shuffle(on: on))
        case "single":
            guard let mode = (fields["mode"] as? String).flatMap(SingleMode.init(rawValue:)) else {
                return .failure(ControlRequestError("single needs a string field 'mode': off, on or oneshot"))
            }
            return .success(.single(mode))
        case "consume":
            guard let on = fields["on"] as? Bool else {
                return .failure(ControlRequestError("consume needs a Boolean field 'on'"))
            }
            return .success(.consume(on: on))
        default:
            let shown = command.count <= 32 && command.allSatisfy { $0.isLetter } ? "'\(command)'" : "given"
            return .failure(ControlRequestError(
                "unknown command \(shown); known: \(commandNames.joined(separator: ", "))"))
        }
    }

    /// A JSON number as a Double (JSONTree reads integral numbers as Int, others as Double, Booleans as Bool).
    private static func number(_ value: Any?) -> Double? {
        if let integer = value as? Int { return Double(integer) }
        return value as? Double
    }

    /// The request as one JSON line, as a client sends it.
    public var jsonLine: String {
        switch self {
        case .seek(let seconds): return #"{"command":"seek","seconds":\#(seconds)}"#
        case .volume(let percent): return #"{"command":"volume","percent":\#(percent)}"#
        case .repeatMode(let mode): return #"{"command":"repeat","mode":"\#(mode.rawValue)"}"#
        case .shuffle(let on): return #"{"command":"shuffle","on":\#(on)}"#
        case .single(let mode): return #"{"command":"single","mode":"\#(mode.rawValue)"}"#
        case .consume(let on): return #"{"command":"consume","on":\#(on)}"#
        case .replayGain(let mode): return #"{"command":"replaygain","mode":"\#(mode.rawValue)"}"#
        case .load(let paths, let play):
            return ControlReply.line(["command": "load", "paths": paths.map(\.jsonValue), "play": play])
        case .add(let paths): return ControlReply.line(["command": "add", "paths": paths.map(\.jsonValue)])
        case .update(let path, _), .browse(let path):
            var object: [String: Any] = ["command": name]
            if let path { object["path"] = path.jsonValue }
            return ControlReply.line(object)
        case .edit, .jump: return queueEditLine
        case .byID(let request): return request.line
        case .libraryQuery(let verb, let words, let tags):
            return ControlReply.line(tags ? ["command": verb, "words": words, "tags": true]
                                          : ["command": verb, "words": words])
        default: return #"{"command":"\#(name)"}"#
        }
    }

    /// The request as the lines a client sends, each within `maximumLineBytes`: a long `load` or `add` (a big
    /// directory, a 10 000-track playlist) becomes one `load` or `add` of the first paths and then `add`s of the
    /// rest, in order. Any other request is itself.
    public func splitForSending(maximumLineBytes limit: Int = maximumLineBytes) -> [ControlRequest] {
        let paths: [TrackPath]
        switch self {
        case .load(let all, _), .add(let all): paths = all
        default: return [self]
        }
        var batches: [[TrackPath]] = [[]]
        // The envelope (command, play flag, brackets) is under 64 bytes; each path adds its own JSON (measured with
        // the encoder, so escaping counts exactly) and a comma; the line's newline takes one byte of the limit.
        var size = 65
        for path in paths {
            let pathBytes = ControlReply.line(["p": [path.jsonValue]]).utf8.count - #"{"p":[]}"#.utf8.count + 1
            if size + pathBytes > limit, !batches[batches.count - 1].isEmpty {
                batches.append([])
                size = 65
            }
            batches[batches.count - 1].append(path)
            size += pathBytes
        }
        return batches.enumerated().map { index, batch in
            if index == 0, case .load(_, let play) = self { return .load(paths: batch, play: play) }
            return .add(paths: batch)
        }
    }

    /// The command's name.
    public var name: String {
        switch self {
        case .play: return "play"
        case .pause: return "pause"
        case .toggle: return "toggle"
        case .stop: return "stop"
        case .next: return "next"
        case .previous: return "previous"
        case .live: return "live"
        case .seek: return "seek"
        case .volume: return "volume"
        case .repeatMode: return "repeat"
        case .shuffle: return "shuffle"
        case .single: return "single"
        case .consume: return "consume"
        case .replayGain: return "replaygain"
        case .status: return "status"
        case .events: return "events"
        case .load: return "load"
        case .add: return "add"
        case .clear: return "clear"
        case .queue: return "queue"
        case .update(_, let rescan): return rescan ? "rescan" : "update"
        case .libraryQuery(let verb, _, _): return verb
        case .browse: return "ls"
        case .edit(let edit, _): return Self.editName(edit)
        case .jump: return "jump"
        case .byID(let request): return request.name
        }
    }
}

/// Encodes replies as single JSON lines.
public enum ControlReply {
    /// `{"ok":true}` with optional extra fields.
    public static func success(_ fields: [String: Any] = [:]) -> String {
        var object = fields
        object["ok"] = true
        return line(object)
    }

    /// `{"ok":false,"error":message}`.
    public static func failure(_ message: String) -> String {
        line(["ok": false, "error": message])
    }

    /// One JSON object as a line (sorted keys, no newline inside).
    public static func line(_ object: [String: Any]) -> String {
        guard let text = try? JSONTree.text(object) else {
            return #"{"error":"internal: reply could not be encoded","ok":false}"#
        }
        return text
    }
}
