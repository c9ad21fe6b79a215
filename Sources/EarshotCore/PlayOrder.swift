// The order the queue plays in: repeat and shuffle. The rules consult it at every track boundary (rule 13) and for
// next and previous; the executor asks it which track the decoder joins to the one it is finishing, so that a repeated
// track, a repeated queue and a shuffled one are as gapless as any other boundary.
//
// Shuffle needs chance, and the core reads no clock and no device: the seed comes from outside (the service draws it
// and the saved state keeps it), and a small deterministic generator, carried in the state, does the rest. The same
// state therefore always gives the same order, before and after a restart.

/// What happens at the end of a track and at the end of the queue.
public enum RepeatMode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Each track once; the player stops at the end of the queue.
    case off
    /// The current track again and again; `next` still moves on (as MPD does).
    case track
    /// The whole queue again after its last track (with shuffle on, in a fresh order each round).
    case queue

    /// `off`, `track` or `queue`, as the CLI and status name it.
    public var description: String { rawValue }
}

/// A deterministic generator of 64-bit numbers (SplitMix64): tiny, fast, and good enough to order a queue. Its whole
/// state is one integer, which the saved state keeps.
public struct ShuffleGenerator: Hashable, Sendable {
    /// The generator's state: the next number is drawn from it.
    public var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next number; the state moves on.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in `0..<bound` (`bound` > 0). The modulo's bias is below 2^-40 for any queue a person makes.
    public mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// `items` in a random order (Fisher-Yates).
    public mutating func shuffled(_ items: [Int]) -> [Int] {
        var result = items
        var last = result.count - 1
        while last > 0 {
            result.swapAt(last, below(last + 1))
            last -= 1
        }
        return result
    }
}

/// The shuffled order of the queue for the current round: every track once, so that none plays again before every
/// other has played.
public struct ShuffleOrder: Hashable, Sendable {
    /// The queue's indices in the order they play this round: a permutation of `0..<trackCount`.
    public var order: [Int]
    /// The generator that draws the next round and the places of added tracks.
    public var generator: ShuffleGenerator

    /// An order as saved; `PlayerState` checks it against its queue before taking it.
    public init(order: [Int], generator: ShuffleGenerator) {
        self.order = order
        self.generator = generator
    }

    /// Whether the order holds each of `0..<trackCount` exactly once.
    public func isPermutation(ofTrackCount trackCount: Int) -> Bool {
        guard order.count == trackCount else { return false }
        var seen = [Bool](repeating: false, count: trackCount)
        for index in order {
            guard (0..<trackCount).contains(index), !seen[index] else { return false }
            seen[index] = true
        }
        return true
    }

    /// A round of `trackCount` tracks with `first` first and the rest in a random order.
    static func round(trackCount: Int, first: Int, generator: inout ShuffleGenerator) -> [Int] {
        guard trackCount > 0 else { return [] }
        let rest = (0..<trackCount).filter { $0 != first }
        return [first] + generator.shuffled(rest)
    }

    /// The round after this one, and the generator after drawing it, without changing this one: the executor asks
    /// for the next round's first track before the listener reaches it, and the rules draw the same round then.
    func upcomingRound() -> (order: [Int], generator: ShuffleGenerator) {
        var generator = self.generator
        var next = generator.shuffled(Array(0..<order.count))
        // A new round never opens with the track that closed the last one: that would be a repeat back to back.
        if next.count > 1, next.first == order.last { next.swapAt(0, 1) }
        return (next, generator)
    }
}

extension PlayerState {
    // MARK: The order (what the executor and the rules ask)

    /// The queue's indices in play order for the current round: the shuffled order, or `0..<trackCount`.
    public var playOrder: [Int] {
        if let shuffle, shuffle.order.count == queue.trackCount { return shuffle.order }
        return Array(0..<queue.trackCount)
    }

    /// The track that follows `index`: at the end of the track when `trackEnded` (where `repeat track` plays it
    /// again), or for `next` and a skipped track otherwise; nil at the end of the queue when nothing repeats.
    public func track(after index: Int, trackEnded: Bool) -> Int? {
        guard (0..<queue.trackCount).contains(index) else { return nil }
        if trackEnded {
            // Single first (rules 35 and 36): it stops the player after the track, or has it again under repeat.
            switch singleEnd {
            case .stop: return nil
            case .again: return index
            case nil: if repeatMode == .track { return index }
            }
        }
        let order = shuffledOrder
        let place = self.place(of: index, in: order) ?? index
        if place + 1 < queue.trackCount { return Self.track(atPlace: place + 1, in: order) }
        guard repeatMode == .queue else { return nil }
        if let shuffle { return shuffle.upcomingRound().order.first }
        return Self.track(atPlace: 0, in: order)
    }

    /// `track(after:trackEnded:)` for every track of the queue at once, indexed by track: what the decoder joins to
    /// each track it finishes (`trackEnded`) or skips. Linear in the queue, for the executor to hand over whole; not
    /// needed when the queue plays in its own order (`followsQueueOrder`).
    public func followingTracks(trackEnded: Bool) -> [Int?] {
        let order = shuffledOrder
        let count = queue.trackCount
        var table = [Int?](repeating: nil, count: count)
        for place in 0..<Swift.max(count - 1, 0) {
            table[Self.track(atPlace: place, in: order)] = Self.track(atPlace: place + 1, in: order)
        }
        if repeatMode == .queue, count > 0 {
            table[Self.track(atPlace: count - 1, in: order)] = shuffle.map { $0.upcomingRound().order.first }
                ?? Self.track(atPlace: 0, in: order)
        }
        guard trackEnded else { return table }
        if singleEnd == .again || (repeatMode == .track && single != .on) {
            for index in table.indices { table[index] = index }
        }
        // Single stops the decoder after every track (`on`, repeat off), or after the current one (`oneshot`).
        if single == .on && singleEnd == .stop {
            for index in table.indices { table[index] = nil }
        } else if single == .oneshot, table.indices.contains(queue.index) {
            table[queue.index] = nil
        }
        return table
    }

    /// Whether the queue plays in its own order: each track followed by the next, none after the last (repeat off, no
    /// shuffle, single off). The decoder joins tracks so by itself, so the executor need hand it no tables, whose making would
    /// cost the queue's length at every change of it (an `add` to a long queue).
    public var followsQueueOrder: Bool {
        repeatMode == .off && shuffledOrder == nil && single == .off
    }

    /// The shuffled order when it is the one played (it covers the queue); nil when the queue plays in its own order.
    private var shuffledOrder: [Int]? {
        guard let shuffle, shuffle.order.count == queue.trackCount else { return nil }
        return shuffle.order
    }

    /// Where track `index` comes in `order` (nil: the queue's own order, where it is its own place); nil when it is
    /// not there. Without a shuffle, nothing is allocated or searched: status and MPRIS ask at every input.
    private func place(of index: Int, in order: [Int]?) -> Int? {
        guard let order else { return (0..<queue.trackCount).contains(index) ? index : nil }
        return order.firstIndex(of: index)
    }

    /// The track at `place` in `order` (nil: the queue's own order).
    private static func track(atPlace place: Int, in order: [Int]?) -> Int {
        order?[place] ?? place
    }

    /// The track `previous` goes to: the one before `index` in play order, or the first of the round.
    public func track(before index: Int) -> Int? {
        let order = shuffledOrder
        guard let place = place(of: index, in: order) else {
            return queue.trackCount > 0 ? Self.track(atPlace: 0, in: order) : nil
        }
        return Self.track(atPlace: Swift.max(place - 1, 0), in: order)
    }

    /// Whether the listener may have reached track `index` from the current one by playing on: the track that follows
    /// at the end of this one, or any later in this round (a skipped or failed track between). An earlier one, or
    /// the same one when it does not repeat, is a stale report (rule 15), except just after a change of order: the
    /// decoder may have joined it in the order before, and what the listener hears is a fact.
    mutating func listenerMayReach(_ index: Int) -> Bool {
        guard (0..<queue.trackCount).contains(index) else { return false }
        if index == track(after: queue.index, trackEnded: true) {
            // In step with the order as it is now.
            orderChangedAhead = false
            return true
        }
        return isAhead(index) || orderChangedAhead
    }

    /// Whether `index` comes later than the current track in this round's order.
    func isAhead(_ index: Int) -> Bool {
        let order = shuffledOrder
        guard let here = place(of: queue.index, in: order), let there = place(of: index, in: order) else {
            return false
        }
        return there > here
    }

    /// Moves the cursor to `index`, which the listener reaches by playing on or by `next`: past the end of a
    /// shuffled round, the next round is drawn (the same one `track(after:)` announced).
    mutating func enterTrack(_ index: Int) {
        // A track heard out of this round's order (joined in the order before a change, or after a failed one) comes
        // next in it: none between is skipped this round, and none is played twice.
        if var shuffle, let here = shuffle.order.firstIndex(of: queue.index),
           let there = shuffle.order.firstIndex(of: index), there > here + 1 {
            shuffle.order.remove(at: there)
            shuffle.order.insert(index, at: here + 1)
            self.shuffle = shuffle
        }
        if var shuffle, shuffle.order.last == queue.index {
            let upcoming = shuffle.upcomingRound()
            if upcoming.order.first == index {
                shuffle.order = upcoming.order
                shuffle.generator = upcoming.generator
                self.shuffle = shuffle
            }
        }
        queue.index = index
    }

    /// The first track after the queue ran out: a shuffled queue starts a fresh round for the next play.
    mutating func rewindAfterQueueEnd() {
        orderChangedAhead = false
        guard var shuffle, !shuffle.order.isEmpty else {
            queue.index = 0
            return
        }
        let upcoming = shuffle.upcomingRound()
        shuffle.order = upcoming.order
        shuffle.generator = upcoming.generator
        self.shuffle = shuffle
        queue.index = upcoming.order[0]
    }

    // MARK: Keeping the shuffled order in step with the queue

    /// A new queue: a new round, wholly at random, and the cursor at its first track (a start index means the
    /// queue's own order, which shuffle leaves aside).
    mutating func reshuffleForNewQueue() {
        guard var shuffle else { return }
        shuffle.order = shuffle.generator.shuffled(Array(0..<queue.trackCount))
        self.shuffle = shuffle
        if let first = shuffle.order.first { queue.index = first }
    }

    /// Tracks `first..<queue.trackCount` were added to a queue that plays: shuffled in, and, where they change what
    /// follows the last track (`repeat queue`, or any shuffled order), the decoder may have joined the order before.
    mutating func tracksAdded(from first: Int) {
        if repeatMode == .queue || shuffle != nil { orderChangedAhead = true }
        shuffleInAddedTracks(from: first)
    }

    /// Tracks `from..<queue.trackCount` were added: each takes a random place among the tracks still to play this
    /// round, so none of them waits for a round that may never come, and nothing already played comes back.
    private mutating func shuffleInAddedTracks(from first: Int) {
        guard var shuffle else { return }
        let here = shuffle.order.firstIndex(of: queue.index) ?? -1
        for added in first..<queue.trackCount {
            let slots = shuffle.order.count - here
            shuffle.order.insert(added, at: here + 1 + shuffle.generator.below(slots))
        }
        self.shuffle = shuffle
    }

    // MARK: The user's choices

    /// `repeat off|track|queue`: only what follows a track changes; the music plays on as it was.
    mutating func setRepeat(_ mode: RepeatMode) -> [Command] {
        if mode != repeatMode && playback != .idle { orderChangedAhead = true }
        repeatMode = mode
        return []
    }

    /// `shuffle on|off`: on draws a round from `seed` with the current track first, so the music plays on; off
    /// returns to the queue's own order from the current track.
    mutating func setShuffle(on: Bool, seed: UInt64) -> [Command] {
        guard on else {
            if shuffle != nil && playback != .idle { orderChangedAhead = true }
            shuffle = nil
            return []
        }
        guard shuffle == nil else { return [] }
        if playback != .idle { orderChangedAhead = true }
        var generator = ShuffleGenerator(seed: seed)
        let order = ShuffleOrder.round(trackCount: queue.trackCount, first: queue.index, generator: &generator)
        shuffle = ShuffleOrder(order: order, generator: generator)
        return []
    }

    /// The saved repeat mode and shuffled order, after the saved queue: an order that does not fit the queue (the
    /// file was edited, or written by another version) is drawn again from its generator.
    mutating func restorePlayModes(repeat mode: RepeatMode, shuffle saved: ShuffleOrder?) -> [Command] {
        repeatMode = mode
        guard var saved else {
            shuffle = nil
            return []
        }
        if !saved.isPermutation(ofTrackCount: queue.trackCount) {
            saved.order = ShuffleOrder.round(trackCount: queue.trackCount, first: queue.index,
                                             generator: &saved.generator)
        }
        shuffle = saved
        return []
    }
}
