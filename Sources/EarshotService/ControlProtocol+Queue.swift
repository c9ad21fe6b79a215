// The control protocol's queue edits, each position a queue index (0 is the first track), each range `start` to
// `end` with `end` excluded:
//
//   {"command": "delete", "start": 2, "end": 4}        {"command": "move", "start": 0, "end": 1, "to": 5}
//   {"command": "swap", "first": 0, "second": 3}        {"command": "insert", "at": 1, "paths": ["/music/a.mp3"]}
//   {"command": "reorder", "start": 0, "end": 10}       {"command": "jump", "index": 3}
//
// `reorder` shuffles the range once (MPD's `shuffle`), with a seed the service draws; `jump` plays the track at
// `index` as the user's play. The owner checks the positions against its queue and refuses what does not fit. The
// same by entry ids (`playid`, `deleteid`, `moveid`, `swapid`, `seekid`: EntryIDRequest) are resolved by the owner.
import EarshotCore
import TrackPaths

extension ControlRequest {
    /// The queue-editing command names.
    static let queueEditNames = ["delete", "move", "swap", "insert", "reorder", "jump"]

    /// The protocol's name of `edit`.
    static func editName(_ edit: QueueEdit) -> String {
        switch edit {
        case .delete: return "delete"
        case .move: return "move"
        case .swap: return "swap"
        case .insert: return "insert"
        case .shuffle: return "reorder"
        }
    }

    /// An edit or a jump as one JSON line.
    var queueEditLine: String {
        var object: [String: Any] = ["command": name]
        switch self {
        case .jump(let index): object["index"] = index
        case .edit(.delete(let start, let end), _), .edit(.shuffle(let start, let end, _), _):
            object["start"] = start
            object["end"] = end
        case .edit(.move(let start, let end, let to), _):
            object["start"] = start
            object["end"] = end
            object["to"] = to
        case .edit(.swap(let first, let second), _):
            object["first"] = first
            object["second"] = second
        case .edit(.insert(_, let at), let paths):
            object["at"] = at
            object["paths"] = paths.map(\.jsonValue)
        default: break
        }
        return ControlReply.line(object)
    }

    /// Parses the fields of a queue edit named `command`.
    static func parseQueueEdit(
        _ command: String, _ fields: [String: Any]
    ) -> Result<ControlRequest, ControlRequestError> {
        func position(_ key: String) -> Int? {
            guard let value = fields[key] as? Int, (0...Int(Int32.max)).contains(value) else { return nil }
            return value
        }
        func needs(_ keys: [String]) -> ControlRequestError {
            ControlRequestError("\(command) needs queue positions (whole numbers from 0) in "
                + keys.map { "'\($0)'" }.joined(separator: ", "))
        }
        switch command {
        case "jump":
            guard let index = position("index") else { return .failure(needs(["index"])) }
            return .success(.jump(index: index))
        case "delete", "reorder":
            guard let start = position("start"), let end = position("end") else {
                return .failure(needs(["start", "end"]))
            }
            let edit: QueueEdit = command == "delete" ? .delete(start: start, end: end)
                : .shuffle(start: start, end: end, seed: 0)
            return .success(.edit(edit, paths: []))
        case "move":
            guard let start = position("start"), let end = position("end"), let to = position("to") else {
                return .failure(needs(["start", "end", "to"]))
            }
            return .success(.edit(.move(start: start, end: end, to: to), paths: []))
        case "swap":
            guard let first = position("first"), let second = position("second") else {
                return .failure(needs(["first", "second"]))
            }
            return .success(.edit(.swap(first: first, second: second), paths: []))
        default:
            let entries = fields["paths"] as? [Any] ?? []
            let paths = entries.compactMap(TrackPath.init(jsonValue:))
            guard let at = position("at"), !paths.isEmpty, paths.count == entries.count else {
                return .failure(ControlRequestError("insert needs a position 'at' and a non-empty array 'paths'"))
            }
            return .success(.edit(.insert(count: paths.count, at: at), paths: paths))
        }
    }
}

/// A queue entry's command by its id, resolved on the owner in the same step as it is carried out:
///
///   {"command": "playid", "id": 5}                     {"command": "deleteid", "id": 5}
///   {"command": "moveid", "id": 5, "to": 0}            {"command": "swapid", "first": 5, "second": 9}
///   {"command": "seekid", "id": 5, "seconds": 12.5}
///
/// An id no entry has is refused with "No such song" (MPD's words); a position that does not fit with "Bad song index".
public enum EntryIDRequest: Equatable, Sendable {
    /// Play the entry (the user's play of that track).
    case play(id: Int)
    /// Delete the entry.
    case delete(id: Int)
    /// Move the entry to position `to`.
    case move(id: Int, to: Int)
    /// Swap two entries.
    case swap(first: Int, second: Int)
    /// Seek to `seconds` into the entry, choosing it first when it is not the current track.
    case seek(id: Int, seconds: Double)

    /// The command names.
    static let names = ["playid", "deleteid", "moveid", "swapid", "seekid"]

    /// The command's name.
    var name: String {
        switch self {
        case .play: return "playid"
        case .delete: return "deleteid"
        case .move: return "moveid"
        case .swap: return "swapid"
        case .seek: return "seekid"
        }
    }

    /// The request as one JSON line.
    var line: String {
        var object: [String: Any] = ["command": name]
        switch self {
        case .seek(let id, let seconds):
            // The number as `seek` writes it (Swift's shortest form, which parses back the same).
            return #"{"command":"seekid","id":\#(id),"seconds":\#(seconds)}"#
        case .play(let id), .delete(let id): object["id"] = id
        case .move(let id, let to):
            object["id"] = id
            object["to"] = to
        case .swap(let first, let second):
            object["first"] = first
            object["second"] = second
        }
        return ControlReply.line(object)
    }

    /// Parses the fields of the command named `command`.
    static func parse(_ command: String, _ fields: [String: Any]) -> Result<EntryIDRequest, ControlRequestError> {
        func whole(_ key: String) -> Int? {
            guard let value = fields[key] as? Int, (0...Int(Int32.max)).contains(value) else { return nil }
            return value
        }
        func needs(_ keys: [String]) -> ControlRequestError {
            ControlRequestError(
                "\(command) needs whole numbers from 0 in " + keys.map { "'\($0)'" }.joined(separator: ", "))
        }
        switch command {
        case "playid", "deleteid":
            guard let id = whole("id") else { return .failure(needs(["id"])) }
            return .success(command == "playid" ? .play(id: id) : .delete(id: id))
        case "moveid":
            guard let id = whole("id"), let to = whole("to") else { return .failure(needs(["id", "to"])) }
            return .success(.move(id: id, to: to))
        case "swapid":
            guard let first = whole("first"), let second = whole("second") else {
                return .failure(needs(["first", "second"]))
            }
            return .success(.swap(first: first, second: second))
        default:
            // Rounded to milliseconds as `seek` is, so that the request survives its own JSON line.
            let number = fields["seconds"] as? Double ?? (fields["seconds"] as? Int).map(Double.init)
            guard let id = whole("id"), let given = number, case let seconds = (given * 1000).rounded() / 1000,
                  seconds.isFinite, seconds >= 0, seconds < 1e7
            else {
                return .failure(
                    ControlRequestError("seekid needs a whole number 'id' from 0 and a number 'seconds' >= 0"))
            }
            return .success(.seek(id: id, seconds: seconds))
        }
    }
}
