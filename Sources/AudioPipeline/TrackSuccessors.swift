// Which track the decode worker goes on with after each one: the player's play order (repeat, shuffle) as two tables,
// so that the worker joins a repeated track, the queue's first track after its last, or a shuffled successor to what
// it is finishing without a gap, and without asking anyone on its own thread.

/// The track that follows each track of the queue, at its end and after a failure.
public struct TrackSuccessors: Sendable, Equatable {
    /// `afterEnd[i]`: the track decoded after track `i` was decoded to its end; nil at the end of the queue.
    public var afterEnd: [Int?]
    /// `afterFailure[i]`: the track tried after track `i` failed (a repeated track that fails is not tried again).
    public var afterFailure: [Int?]

    /// Tables for a queue of `afterEnd.count` tracks.
    public init(afterEnd: [Int?], afterFailure: [Int?]) {
        self.afterEnd = afterEnd
        self.afterFailure = afterFailure
    }

    /// The queue's own order: each track, then the next, then the end.
    public static func inQueueOrder(trackCount: Int) -> TrackSuccessors {
        let next = (0..<trackCount).map { $0 + 1 < trackCount ? $0 + 1 : nil }
        return TrackSuccessors(afterEnd: next, afterFailure: next)
    }

    /// The track after `index`, which `ended` or failed; past the tables (tracks added since they were made), the
    /// next index, as in the queue's own order. A value `>= ` the queue's length means the end.
    func next(after index: Int, ended: Bool, trackCount: Int) -> Int {
        let table = ended ? afterEnd : afterFailure
        guard table.indices.contains(index) else { return index + 1 }
        return table[index] ?? trackCount
    }
}
