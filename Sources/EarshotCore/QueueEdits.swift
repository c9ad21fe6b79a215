// Editing the queue in place (MPD's delete, move, swap, insert at a position and shuffle): one value says the edit,
// and one function says where every track goes, so that the executor (which holds the paths) and the rules (which
// hold the cursor) cannot disagree. The rules keep playing the current track wherever it moves; when it is deleted,
// the track that takes its place plays on as MPD does, and the queue's end stops the player as at any end (rules 13
// and 22). Rule 25 of shared/RULES.md.

/// An edit of the queue in place, its positions those of the queue before it.
public enum QueueEdit: Hashable, Sendable, CustomStringConvertible {
    /// The tracks at `start..<end` are removed.
    case delete(start: Int, end: Int)
    /// The tracks at `start..<end` move so that the first of them lands at `to`, a position in the queue after the
    /// move (MPD's `move`).
    case move(start: Int, end: Int, to: Int)
    /// The tracks at `first` and `second` change places.
    case swap(first: Int, second: Int)
    /// `count` new tracks are inserted at `at` (0 through the queue's length).
    case insert(count: Int, at: Int)
    /// The tracks at `start..<end` are put in a random order drawn from `seed` (the service draws it).
    case shuffle(start: Int, end: Int, seed: UInt64)

    /// The edit's name, for the log: `delete(2..<4)`.
    public var description: String {
        switch self {
        case .delete(let start, let end): return "delete(\(start)..<\(end))"
        case .move(let start, let end, let to): return "move(\(start)..<\(end), to \(to))"
        case .swap(let first, let second): return "swap(\(first), \(second))"
        case .insert(let count, let at): return "insert(\(count), at \(at))"
        case .shuffle(let start, let end, _): return "shuffle(\(start)..<\(end))"
        }
    }

    /// The queue after the edit of a queue of `trackCount` tracks, each position naming the track that was there
    /// before (nil: an inserted one); nil when the edit does not fit the queue (a position past its end, an empty
    /// range).
    public func arrangement(ofTrackCount trackCount: Int) -> [Int?]? {
        let before: [Int?] = Array(0..<trackCount)
        func fits(_ start: Int, _ end: Int) -> Bool { start >= 0 && start < end && end <= trackCount }
        switch self {
        case .delete(let start, let end):
            guard fits(start, end) else { return nil }
            return Array(before[..<start] + before[end...])
        case .move(let start, let end, let to):
            guard fits(start, end), to >= 0, to + (end - start) <= trackCount else { return nil }
            var rest = Array(before[..<start] + before[end...])
            rest.insert(contentsOf: before[start..<end], at: to)
            return rest
        case .swap(let first, let second):
            guard (0..<trackCount).contains(first), (0..<trackCount).contains(second) else { return nil }
            var result = before
            result.swapAt(first, second)
            return result
        case .insert(let count, let at):
            guard count > 0, (0...trackCount).contains(at) else { return nil }
            var result = before
            result.insert(contentsOf: [Int?](repeating: nil, count: count), at: at)
            return result
        case .shuffle(let start, let end, let seed):
            guard fits(start, end) else { return nil }
            var generator = ShuffleGenerator(seed: seed)
            let order = generator.shuffled(Array(start..<end))
            return Array(before[..<start]) + order.map { Optional($0) } + Array(before[end...])
        }
    }
}

extension PlayerState {
    /// The queue was edited in place (`queueEdited`): the current track plays on where it went; a deleted current
    /// track gives way to the one now at its place, or to the queue's end.
    mutating func editQueue(_ edit: QueueEdit) -> [Command] {
        guard let arrangement = edit.arrangement(ofTrackCount: queue.trackCount), playback != .idle else {
            // An edit that does not fit is refused before it is sent (rule 15); an idle player has no queue to edit
            // but an insertion, which is a first queue like any addition.
            if playback == .idle, case .insert(let count, _) = edit, count > 0 {
                return decide(.queueExtended(trackCount: count))
            }
            return []
        }
        let old = queue.index
        lastFailure = nil
        guard !arrangement.isEmpty else {
            // Everything was deleted: as a queue replaced by nothing.
            return emptyQueue() + [.cue(index: 0, milliseconds: 0)]
        }
        queue.trackCount = arrangement.count
        // Row 30: the live stream moves with the edit (a reposition of the same fetch keeps its buffer).
        if let stream = live { live = arrangement.firstIndex(of: stream.index).map { LiveStream(index: $0,
            bufferOverflowed: stream.bufferOverflowed) } }
        // The decoder starts afresh in the edited queue: nothing it joined ahead in the old one is heard.
        orderChangedAhead = false
        if let kept = arrangement.firstIndex(of: old) {
            queue.index = kept
            redrawShuffle(first: kept)
            switch playback {
            case .stopped: return [.cue(index: kept, milliseconds: 0)]
            default: return [.requeue(index: kept)]
            }
        }
        // The current track was deleted: the one after it in the queue takes its place (MPD's behaviour).
        let firstRemoved: Int
        if case .delete(let start, _) = edit { firstRemoved = start } else { firstRemoved = old }
        guard firstRemoved < arrangement.count else {
            // It was the last: the queue's end, as if played out (rules 13 and 22: quiet, stopped, at the start).
            let cork: [Command] = isPlaying ? [.cork] : []
            queue.index = 0
            redrawShuffle(first: 0)
            playback = .stopped
            resumeIntent = .none
            return cork + [.cue(index: 0, milliseconds: 0)]
        }
        queue.index = firstRemoved
        redrawShuffle(first: firstRemoved)
        return playback == .stopped ? [.cue(index: firstRemoved, milliseconds: 0)] : [.playTrack(index: firstRemoved)]
    }

    /// The queue's last track went (deleted, or consumed: rule 37): idle, as a queue replaced by nothing, with no live
    /// stream; the stream corked if it was playing.
    mutating func emptyQueue() -> [Command] {
        let cork: [Command] = isPlaying ? [.cork] : []
        live = nil
        playback = .idle
        queue = .empty
        reshuffleForNewQueue()
        resumeIntent = .none
        orderChangedAhead = false
        return cork
    }

    /// The user chose track `index` to play (MPD's `play POSITION` and `playid`): the cursor moves there, then it is
    /// the user's play (rules 8 and 9: during a call it waits for the call's end).
    mutating func playTrack(_ index: Int) -> [Command] {
        guard playback != .idle, (0..<queue.trackCount).contains(index) else { return [] }
        // The decoder starts afresh at the chosen track (from its beginning, as MPD's `play` of the current one).
        orderChangedAhead = false
        redrawShuffle(first: index)
        // A stopped player starts the chosen track on its play; the others jump now.
        let jump: [Command] = playback == .stopped ? [] : [.playTrack(index: index)]
        return jump + decide(.userPlay)
    }

    /// A shuffle on draws a new round with `first` first: the edited queue's tracks each play once more.
    private mutating func redrawShuffle(first: Int) {
        queue.index = first
        guard var shuffle else { return }
        shuffle.order = ShuffleOrder.round(trackCount: queue.trackCount, first: first, generator: &shuffle.generator)
        self.shuffle = shuffle
    }
}
