// Repeat and shuffle in `state.json` (StateStore.swift): two optional keys, so that a file of an earlier version (which
// has neither) restores with repeat off and no shuffle, and an earlier version reading a new file ignores them:
//
//   "repeat": "track",   "shuffle": {"order": [2, 0, 1], "state": "1234567890123456789"}
//
// The shuffled order is kept whole (which track plays when, this round), with its generator's state as a decimal
// string: a 64-bit number a JSON reader keeping doubles would round.

/// The repeat mode and shuffled order as saved.
public struct SavedPlayModes: Codable, Equatable, Sendable {
    /// `off`, `track` or `queue` (a mode this version does not know restores as off).
    public var repeatMode: String
    /// The queue's indices in shuffled order for the current round; nil when shuffle is off.
    public var shuffleOrder: [Int]?
    /// The shuffle generator's state (unused when shuffle is off).
    public var shuffleState: UInt64

    /// Saved modes; the default is repeat off and no shuffle.
    public init(repeatMode: String = "off", shuffleOrder: [Int]? = nil, shuffleState: UInt64 = 0) {
        self.repeatMode = repeatMode
        self.shuffleOrder = shuffleOrder
        self.shuffleState = shuffleState
    }

    /// Repeat off, no shuffle: what a file without the keys means.
    public static let off = SavedPlayModes()

    /// The keys as they follow `queueId` in the state file's sorted line: each with its leading comma, none when off.
    func appendJSONFields(to out: inout [UInt8]) {
        if repeatMode != "off" { out += #","repeat":"\#(repeatMode)""#.utf8 }
        guard let shuffleOrder else { return }
        out += #","shuffle":{"order":["#.utf8
        out += shuffleOrder.map(String.init).joined(separator: ",").utf8
        out += #"],"state":"\#(shuffleState)"}"#.utf8
    }

    /// The modes under `repeat` and `shuffle` in a state file's top-level `object`; absent keys mean off.
    init(stateObject object: [String: Any]) throws(PersistedState.Unreadable) {
        self.init()
        if let mode = object["repeat"], !(mode is JSONNull) {
            guard let mode = mode as? String, mode.utf8.count <= 16, mode.allSatisfy(\.isLetter) else {
                throw PersistedState.Unreadable(reason: "wrong type for field \"repeat\"")
            }
            repeatMode = mode
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
