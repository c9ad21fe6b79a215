// Single and consume, MPD's two play modes beside repeat and shuffle (rules 35-37 of shared/RULES.md). Single stops
// the player after a track: after every track (`on`, with repeat off; with repeat on it plays the track again, as MPD's
// single with repeat does) or after this one only (`oneshot`, which then returns to off). Stopping there is the queue's
// end for the decoder, which joins nothing to the track; when it has been played out the player stops at the track
// the order names next, so that a play goes on from there (MPD pauses at that track's start instead). Consume takes a
// track out of the queue once the listener has left it: played to its end, or skipped with `next` (as MPD does; a
// failed track and a track left by choosing another one stay).

/// Whether the player stops after a track.
public enum SingleMode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Tracks follow one another as repeat and shuffle say.
    case off
    /// The player stops after each track (with repeat on: the track plays again).
    case on
    /// The player stops after the current track, and single returns to off.
    case oneshot

    /// `off`, `on` or `oneshot`, as the CLI and status name it.
    public var description: String { rawValue }
}

/// What single makes of a track's end.
enum SingleEnd {
    /// The player stops after the track.
    case stop
    /// The track plays again.
    case again
}

extension PlayerState {
    /// What single makes of the end of a track now; nil when it leaves the end to repeat and the order.
    var singleEnd: SingleEnd? {
        switch single {
        case .off: return nil
        case .oneshot: return .stop
        case .on: return repeatMode == .off ? .stop : .again
        }
    }

    /// `single off|on|oneshot` (rules 35 and 36): only what follows the current track changes, as for repeat. What the
    /// decoder joined already is heard (the order before the change, as for repeat and shuffle).
    mutating func setSingle(_ mode: SingleMode) -> [Command] {
        if mode != single && playback != .idle { orderChangedAhead = true }
        single = mode
        return []
    }

    /// `consume on|off` (rule 37): from the next track left on.
    mutating func setConsume(_ on: Bool) -> [Command] {
        consume = on
        return []
    }

    /// Rules 13, 22, 35 and 36: the last audio the decoder had was played out. When single stopped the decoder after
    /// the current track and the order has a next one, the player stops at it (a oneshot is spent); otherwise it is
    /// the queue's end. Under consume the track played leaves the queue (rule 37).
    mutating func playedOut() -> [Command] {
        let ended = queue.index
        let stoppedBySingle = singleEnd == .stop
        if single == .oneshot { single = .off }
        guard stoppedBySingle, let next = track(after: ended, trackEnded: false) else {
            return advance(to: nil) + consumed(ended)
        }
        let cork: [Command] = isPlaying ? [.cork] : []
        orderChangedAhead = false
        enterTrack(next)
        playback = .stopped
        resumeIntent = .none
        let removal = consumed(ended)
        guard policy.frontEnd == .foreground else { return cork + removal }
        return cork + removal + [.exitForeground(.queuePlayed)]
    }

    /// Rule 13 (and 37): the listener reached track `index` by playing on; under consume the track it left goes.
    mutating func heard(_ index: Int) -> [Command] {
        let left = queue.index
        let commands = advance(to: index)
        guard consume, left != queue.index else { return commands }
        let removal = consumed(left)
        // The decoder's queue is renumbered: it takes the new one from the last frame heard.
        return commands + removal + (removal.isEmpty || playback == .idle ? [] : [.requeue(index: queue.index)])
    }

    /// `next` (and rule 37): the cursor moves on in the order; under consume, when the track skipped was playing or
    /// paused, it leaves the queue, and the next one starts in the queue without it.
    mutating func skip() -> [Command] {
        let left = queue.index
        let wasStopped = playback == .stopped
        let commands = moveCursor(to: track(after: left, trackEnded: false))
        guard consume, !wasStopped, left != queue.index else { return commands }
        let removal = consumed(left)
        return removal + [.playTrack(index: queue.index)]
    }

    /// Rule 37: under consume, track `played`, which the cursor has left (or which ended the queue), leaves the queue:
    /// the executor removes it (`removeTrack`), and the cursor and the shuffled order close up behind it. The last
    /// track gone leaves an idle player, as a queue cleared.
    mutating func consumed(_ played: Int) -> [Command] {
        guard consume, playback != .idle, (0..<queue.trackCount).contains(played) else { return [] }
        guard queue.trackCount > 1 else {
            return emptyQueue() + [.removeTrack(index: played), .cue(index: 0, milliseconds: 0)]
        }
        queue.trackCount -= 1
        if queue.index > played || queue.index == queue.trackCount { queue.index -= 1 }
        // Row 30: the live stream moves with the queue, and is forgotten when it is the track that goes.
        if let stream = live {
            live = stream.index == played ? nil
                : LiveStream(index: stream.index > played ? stream.index - 1 : stream.index,
                             bufferOverflowed: stream.bufferOverflowed)
        }
        if var shuffle {
            shuffle.order = shuffle.order.compactMap { $0 == played ? nil : ($0 > played ? $0 - 1 : $0) }
            self.shuffle = shuffle
        }
        return [.removeTrack(index: played)]
    }
}
