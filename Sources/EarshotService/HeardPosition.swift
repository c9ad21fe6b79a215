// Where the listener is in the queue: the owner's position bookkeeping, as a value with no I/O (see Player.swift).
import AudioPipeline

/// What the listener has heard, worked out from the ring frame the stream's timing says is being played now.
///
/// Ring frames count every frame the decoder ever wrote. The decoder's markers (`DecodeWorker.locate`) turn a ring
/// frame into a track and a frame within it. Two things make that mapping need bookkeeping of its own:
/// - after a reposition (a seek, a jump, a flush), frames written before it were dropped unheard, yet the stream's
///   clock may still name one of them until new audio is heard: until then the position is the reposition's target
///   (the floor). Where the new audio starts in the ring is known only once the decoder has answered the reposition
///   (`.restarted`, whose ring frame the ring's consumer skips to); until then every ring frame is below the floor.
///   Once heard past, the floor's frame stays a bound: the stream's clock can step back below it (a timing reading
///   that corrects a run ahead, or the frame kept at the flush), and a dropped frame is never placed by the decoder's
///   markers, which name the tracks by their places in the queue of before (a queue edit's reposition would
///   otherwise hear a boundary into the track that held the current one's old place);
/// - a track boundary is reported once, when the listener crosses it (`heardTrack`), not when the decoder does.
struct HeardPosition: Sendable, Equatable {
    /// The last position the listener heard; nil before anything was heard or positioned.
    private(set) var current: TrackPosition?
    /// Ring frames before `ringFrame` were dropped by the last reposition: until the listener hears past it, the
    /// position is `position`.
    private var floor: Floor?
    /// Where in the ring each decoded track ends, oldest first: a track the decoder joined to itself (`repeat track`)
    /// ends once a round.
    private var trackEnds: [Int: [Int]] = [:]
    /// The ring frame the listener had heard at the last observation.
    private(set) var lastRingFrame: Int?
    /// The track the listener was last reported to hear.
    private var reportedTrack: Int?

    /// A reposition's target and the ring frame where its audio starts (nil until the decoder has said); `passed`
    /// once a frame from that start on was heard.
    private struct Floor: Sendable, Equatable {
        var ringFrame: Int?
        var position: TrackPosition
        var passed = false

        /// Whether `ringFrame` was written before the reposition's audio (or the start is not known yet).
        func isAbove(_ ringFrame: Int) -> Bool {
            guard let start = self.ringFrame else { return true }
            return ringFrame < start
        }
    }

    /// Nothing heard yet.
    init() {}

    /// The position for the ring frame being heard now (`ringFrame`, nil without a stream), given the decoder's
    /// mapping `locate`; the last known position when the frame cannot be placed. Changes nothing.
    func position(atRingFrame ringFrame: Int?, locate: (Int) -> TrackPosition?) -> TrackPosition? {
        guard let ringFrame else { return current }
        if let floor, floor.isAbove(ringFrame) { return floor.passed ? current : floor.position }
        return locate(ringFrame) ?? current
    }

    /// The listener is at `ringFrame` now: the position moves there, the floor is passed once it is heard past,
    /// and the track being heard is returned when it differs from the one last reported (a boundary was crossed).
    mutating func observe(ringFrame: Int, locate: (Int) -> TrackPosition?) -> Int? {
        lastRingFrame = ringFrame
        let position: TrackPosition?
        if let floor, floor.isAbove(ringFrame) {
            // Heard past the floor already: the clock stepped back into dropped audio, and nothing new was heard.
            if floor.passed { return nil }
            position = floor.position
        } else {
            floor?.passed = true
            position = locate(ringFrame)
        }
        guard let position else { return nil }
        // The same track from an earlier frame, with no reposition between: the decoder joined the track to itself
        // (`repeat track`), and the listener crossed that boundary.
        let playedAgain = position.trackIndex == current?.trackIndex && position.frame < current?.frame ?? 0
        current = position
        guard position.trackIndex != reportedTrack || playedAgain else { return nil }
        reportedTrack = position.trackIndex
        return position.trackIndex
    }

    /// Keeps `position` as what was heard (read once more as the stream corked or died).
    mutating func settle(at position: TrackPosition) {
        current = position
    }

    /// Audio before `floorRingFrame` was dropped and decoding continues at `position`: that is where the listener is,
    /// and what the decoder had told of track ends no longer holds. A nil `floorRingFrame` (the decoder has not taken
    /// the new position yet) keeps every ring frame below the floor until `newAudioStarts(atRingFrame:)`.
    mutating func repositioned(to position: TrackPosition, floorRingFrame: Int?) {
        floor = Floor(ringFrame: floorRingFrame, position: position)
        current = position
        trackEnds = [:]
        lastRingFrame = nil
        reportedTrack = position.trackIndex
    }

    /// The decoder took the last reposition: its audio starts at `ringFrame`, which becomes the floor's frame.
    mutating func newAudioStarts(atRingFrame ringFrame: Int) {
        floor?.ringFrame = ringFrame
    }

    /// The decoder finished track `index` at ring frame `ringFrame`.
    mutating func trackDecoded(_ index: Int, endsAtRingFrame ringFrame: Int) {
        // Ends the listener has passed are of no more use.
        let heard = lastRingFrame ?? Int.min
        trackEnds[index, default: []].removeAll { $0 <= heard }
        trackEnds[index, default: []].append(ringFrame)
    }

    /// Frames the listener has still to hear of track `index` (to its next end), once both its end and a heard frame
    /// are known; negative when the listener is past its last known end.
    func framesLeft(inTrack index: Int) -> Int? {
        guard let lastRingFrame, let ends = trackEnds[index], let last = ends.last else { return nil }
        return (ends.first { $0 > lastRingFrame } ?? last) - lastRingFrame
    }
}
