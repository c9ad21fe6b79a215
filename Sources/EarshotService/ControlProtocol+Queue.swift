// The control protocol's queue edits, each position a queue index (0 is the first track), each range `start` to
// `end` with `end` excluded:
//
//   {"command": "delete", "start": 2, "end": 4}        {"command": "move", "start": 0, "end": 1, "to": 5}
//   {"command": "swap", "first": 0, "second": 3}        {"command": "insert", "at": 1, "paths": ["/music/a.mp3"]}
//   {"command": "reorder", "start": 0, "end": 10}       {"command": "jump", "index": 3}
//
// `reorder` shuffles the range once (MPD's `shuffle`), with a seed the service draws; `jump` plays the track at
// `index` as the user's play. The owner checks the positions against its queue and refuses what does not fit.
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
