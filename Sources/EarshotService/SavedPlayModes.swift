// Repeat, shuffle, single and consume as the owner hands them to the storage, which writes them in `state.json` as optional keys
// (EarshotStorage's SavedPlayModesFile.swift), so that a file of an earlier version (which has neither) restores with
// repeat off and no shuffle, and an earlier version reading a new file ignores them:
//
//   "repeat": "track",   "shuffle": {"order": [2, 0, 1], "state": "1234567890123456789"},   "single": "oneshot",
//   "consume": true
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
    /// `off`, `on` or `oneshot` (a mode this version does not know restores as off).
    public var single: String
    /// Whether consume is on.
    public var consume: Bool

    /// Saved modes; the default is repeat off, no shuffle, single and consume off.
    public init(repeatMode: String = "off", shuffleOrder: [Int]? = nil, shuffleState: UInt64 = 0,
                single: String = "off", consume: Bool = false) {
        self.repeatMode = repeatMode
        self.shuffleOrder = shuffleOrder
        self.shuffleState = shuffleState
        self.single = single
        self.consume = consume
    }

    /// Repeat off, no shuffle: what a file without the keys means.
    public static let off = SavedPlayModes()
}
