// Which track the decode worker goes on with after each one it decodes to its end: the player's play order (repeat,
// shuffle) as a table, so that the worker joins a repeated track, the queue's first track after its last, or a
// shuffled successor to what it is finishing without a gap, and without asking anyone on its own thread. After a
// failed track the worker asks instead: it waits for the rules to name the next (`DecodeWorker.skipFailedTrack`).

/// The track that follows each track of the queue at its end.
public struct TrackSuccessors: Sendable, Equatable {
    /// `afterEnd[i]`: the track decoded after track `i` was decoded to its end; nil at the end of the queue.
    public var afterEnd: [Int?]

    /// A table for a queue of `afterEnd.count` tracks.
    public init(afterEnd: [Int?]) {
        self.afterEnd = afterEnd
    }

    /// The track after `index`, decoded to its end; past the table (tracks added since it was made), the next index, as
    /// in the queue's own order. A value `>= ` the queue's length means the end.
    func next(after index: Int, trackCount: Int) -> Int {
        guard afterEnd.indices.contains(index) else { return index + 1 }
        return afterEnd[index] ?? trackCount
    }
}
