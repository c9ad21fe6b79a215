// Repeat, shuffle, single and consume in `state.json`: SavedPlayModes (EarshotService) written into the state file's line and read
// back from its JSON tree. Absent keys mean off; what does not read as a mode is a wrong field, named without its value.
import EarshotJSON
import EarshotService

extension SavedPlayModes {
    /// The keys as they follow `queueId` in the state file's sorted line: each with its leading comma, none when off.
    /// (`consume`, which sorts before every other key, opens the line: StateStore.swift.)
    func appendJSONFields(to out: inout [UInt8]) {
        if repeatMode != "off" { out += #","repeat":"\#(repeatMode)""#.utf8 }
        if let shuffleOrder {
            out += #","shuffle":{"order":["#.utf8
            out += shuffleOrder.map(String.init).joined(separator: ",").utf8
            out += #"],"state":"\#(shuffleState)"}"#.utf8
        }
        if single != "off" { out += #","single":"\#(single)""#.utf8 }
    }

    /// The modes under `repeat`, `shuffle`, `single` and `consume` in a state file's top-level `object`; absent keys mean off.
    init(stateObject object: [String: Any]) throws(PersistedState.Unreadable) {
        self.init()
        if let mode = object["repeat"], !(mode is JSONNull) {
            guard let mode = mode as? String, mode.utf8.count <= 16, mode.allSatisfy(\.isLetter) else {
                throw PersistedState.Unreadable(reason: "wrong type for field \"repeat\"")
            }
            repeatMode = mode
        }
        if let mode = object["single"], !(mode is JSONNull) {
            guard let mode = mode as? String, mode.utf8.count <= 16, mode.allSatisfy(\.isLetter) else {
                throw PersistedState.Unreadable(reason: "wrong type for field \"single\"")
            }
            single = mode
        }
        if let on = object["consume"], !(on is JSONNull) {
            guard let on = on as? Bool else { throw PersistedState.Unreadable(reason: "wrong type for field \"consume\"") }
            consume = on
        }
        guard let shuffle = object["shuffle"], !(shuffle is JSONNull) else { return }
        guard let fields = shuffle as? [String: Any], let order = fields["order"] as? [Any],
              let state = fields["state"] as? String
        else { throw PersistedState.Unreadable(reason: "wrong type for field \"shuffle\"") }
        let indices = order.compactMap { $0 as? Int }
        guard indices.count == order.count, let seed = UInt64(state) else {
            throw PersistedState.Unreadable(reason: "invalid value for field \"shuffle\"")
        }
        shuffleOrder = indices
        shuffleState = seed
    }
}
