// Reading the state files back: their JSON tree (JSONTree) checked field by field. The reasons are the ones
// JSONDecoder's errors gave, named by field only and never quoting a value (a path is private). `state.json` of every
// version so far reads here: `queueId` is optional (a file written before the position had a file of its own has none).
import EarshotJSON
import EarshotService
import TrackPaths

extension PersistedState {
    /// Why a well-formed or malformed file cannot be read as a state (or a position): the reason StateStore reports.
    struct Unreadable: Error {
        let reason: String
    }

    /// The state in the file's `bytes`, checked for types only (`inconsistency` checks the values).
    init(fileBytes bytes: [UInt8]) throws(Unreadable) {
        let object = try Self.object(in: bytes)
        // In declaration order, as the synthesized decoder went, so several problems report the same one.
        let version = try Self.integer("version", in: object)
        let queue = try Self.queue(in: object)
        let trackIndex = try Self.integer("trackIndex", in: object)
        let positionMilliseconds = try Self.integer("positionMilliseconds", in: object)
        let volumePercent = try Self.integer("volumePercent", in: object)
        // Absent (or null) in a file written before the position had a file of its own.
        let queueId = object["queueId"] == nil || object["queueId"] is JSONNull
            ? nil : try Self.integer("queueId", in: object)
        self.init(
            queue: queue, trackIndex: trackIndex, positionMilliseconds: positionMilliseconds,
            volumePercent: volumePercent, queueId: queueId, version: version)
        playModes = try SavedPlayModes(stateObject: object)
    }

    /// The top-level object of a state file's `bytes`.
    static func object(in bytes: [UInt8]) throws(Unreadable) -> [String: Any] {
        let tree: Any
        do {
            tree = try JSONTree.parseValue(bytes)
        } catch {
            throw Unreadable(reason: "not valid JSON")
        }
        guard let object = tree as? [String: Any] else { throw Unreadable(reason: "wrong type for the top level") }
        return object
    }

    /// The value under `key`: missing and null are reasons of their own.
    static func present(_ key: String, in object: [String: Any]) throws(Unreadable) -> Any {
        guard let value = object[key] else { throw Unreadable(reason: "missing field \"\(key)\"") }
        if value is JSONNull { throw Unreadable(reason: "null for field \"\(key)\"") }
        return value
    }

    /// An integer field; a number that is not one (1.5, 1e30) is an invalid value, anything else a wrong type.
    static func integer(_ key: String, in object: [String: Any]) throws(Unreadable) -> Int {
        let value = try present(key, in: object)
        if let integer = value as? Int { return integer }
        if value is Double { throw Unreadable(reason: "invalid value for field \"\(key)\"") }
        throw Unreadable(reason: "wrong type for field \"\(key)\"")
    }

    /// The queue: an array of paths, each a string or `{"base64": ...}` (TrackPath's lossless form). Its problems
    /// are all named after the field `queue`, except an object without `base64`, as JSONDecoder named it.
    private static func queue(in object: [String: Any]) throws(Unreadable) -> TrackList {
        guard let elements = try present("queue", in: object) as? [Any] else {
            throw Unreadable(reason: "wrong type for field \"queue\"")
        }
        var list = TrackList()
        for element in elements {
            let bytes: [UInt8]
            if let text = element as? String {
                bytes = Array(text.utf8)
            } else if element is JSONNull {
                throw Unreadable(reason: "null for field \"queue\"")
            } else if let encoded = element as? [String: Any] {
                guard let base64 = encoded[TrackPath.base64Key] else {
                    throw Unreadable(reason: "missing field \"\(TrackPath.base64Key)\"")
                }
                guard let text = base64 as? String else { throw Unreadable(reason: "wrong type for field \"queue\"") }
                guard let decoded = Base64.decode(text.utf8) else {
                    throw Unreadable(reason: "invalid value for field \"queue\"")
                }
                bytes = decoded
            } else {
                throw Unreadable(reason: "wrong type for field \"queue\"")
            }
            guard let path = TrackPath(bytes: bytes) else {
                throw Unreadable(reason: "invalid value for field \"queue\"")
            }
            list.append(path)
        }
        return list
    }
}
