// Live streams (internet radio, issue 40; RULES.md rows 24 and 30-33). A station has no end the player knows of and
// no position to seek to: what the listener has not heard yet is only what Earshot received and kept. The executor
// keeps receiving into a bounded buffer whatever pauses the player, and reports when that buffer had to drop bytes
// nobody heard (`liveBufferOverflowed`); the rules decide what a resume does with that: continue where it paused, or
// rejoin live (and say so, by the command's reason), and they turn a seek into a refusal or a jump to live.

/// What the rules know of the live stream the decoder has open (row 30).
public struct LiveStream: Hashable, Sendable {
    /// The stream's queue index.
    public var index: Int
    /// The receiving buffer dropped bytes nobody heard while the player was not playing (row 32): a resume cannot
    /// continue where it paused, and rejoins live.
    public var bufferOverflowed: Bool
    /// Its connection is lost and the rules are reconnecting, gave up, or found the stream ended (rows 38-41,
    /// LiveNetwork.swift); nil while it is connected.
    public var reconnection: LiveReconnection?
    /// The last reconnection answered, and when: until the connection has stayed up for the settle time, a loss goes
    /// on with it (its backoff, its give-up window) instead of starting afresh (row 38).
    public var settling: SettlingReconnection?

    /// A live stream at `index`.
    public init(index: Int, bufferOverflowed: Bool = false, reconnection: LiveReconnection? = nil,
                settling: SettlingReconnection? = nil) {
        self.index = index
        self.bufferOverflowed = bufferOverflowed
        self.reconnection = reconnection
        self.settling = settling
    }
}

/// Why the player rejoins a live stream's live edge (`rejoinLive`), as status and the log show it.
public enum LiveRejoin: Hashable, Sendable, CustomStringConvertible {
    /// The pause outlasted the buffer (`liveBufferMinutes`): what followed the pause is gone (row 32).
    case bufferOverflowed
    /// The user asked for live (`earshot live`, MPRIS `Seek` forward, row 33).
    case userAsked
    /// A stopped live stream is played again: it starts at live, as a stopped file starts at its beginning (row 34).
    case restarted

    /// `bufferOverflowed` or `userAsked`.
    public var description: String {
        switch self {
        case .bufferOverflowed: return "bufferOverflowed"
        case .userAsked: return "userAsked"
        case .restarted: return "restarted"
        }
    }
}

/// A request of the user's the rules turn down, with the reason the front-end tells the user.
public enum Refusal: Hashable, Sendable, CustomStringConvertible {
    /// A seek back, or to a position, in a live stream: it has no position to seek to (row 31).
    case seekInLiveStream
    /// `earshot live` while the current track is not a live stream (row 33).
    case notLive

    /// `seekInLiveStream` or `notLive`.
    public var description: String {
        switch self {
        case .seekInLiveStream: return "seekInLiveStream"
        case .notLive: return "notLive"
        }
    }

    /// The reason in words, for the user: no title, no address.
    public var explanation: String {
        switch self {
        case .seekInLiveStream: return "the current track is a live stream, which cannot seek (`earshot live` jumps to live)"
        case .notLive: return "the current track is not a live stream"
        }
    }
}

extension PlayerState {
    /// Whether the track the listener is on is a live stream the decoder opened (row 30).
    public var isOnLiveStream: Bool {
        guard playback != .idle, let live else { return false }
        return live.index == queue.index
    }

    /// Row 30: the decoder opened track `index` and it is live. Opened again at the same index (the same fetch, after
    /// a reposition) it keeps what the rules knew of its buffer.
    mutating func liveStreamStarted(_ index: Int) -> [Command] {
        guard playback != .idle, (0..<queue.trackCount).contains(index) else { return [] }
        // Row 38: the decoder cannot open another stream while the one the listener is on waits for its connection
        // (it has nothing to decode past it): such a report is stale (rule 15).
        if live?.index != index, let lost = liveReconnection, lost.phase != .ended { return [] }
        if live?.index != index { live = LiveStream(index: index) }
        return []
    }

    /// Row 32: the buffer of live stream `index` dropped bytes the listener had not heard. Playing, the listener is
    /// only behind by what the decoder holds, so this cannot concern a pause; otherwise the next resume rejoins live.
    mutating func liveBufferOverflowed(_ index: Int) -> [Command] {
        guard isOnLiveStream, live?.index == index, !isPlaying else { return [] }
        live?.bufferOverflowed = true
        return []
    }

    /// Row 33: the user asks for live. Playing, the show jumps there now; paused, the buffer is dropped and the
    /// resume starts at live. Not on a live stream it is refused.
    mutating func jumpToLive() -> [Command] {
        guard isOnLiveStream else { return [.refuse(.notLive)] }
        live?.bufferOverflowed = false
        return [.rejoinLive(.userAsked)]
    }

    /// Row 31: a seek in a live stream. Forward is toward live (MPRIS `Seek` past the end): a jump to live (row 33);
    /// back, or to a position, is refused. Nil when the current track is not live: the ordinary seek rules apply.
    mutating func seekInLiveStream(forward: Bool) -> [Command]? {
        guard isOnLiveStream else { return nil }
        return forward ? jumpToLive() : [.refuse(.seekInLiveStream)]
    }

    /// Row 32: an overflow concerns only the stream the listener is on; off it, it is forgotten.
    mutating func forgetOverflowOffTheLiveStream() {
        if let stream = live, stream.bufferOverflowed, !isOnLiveStream { live?.bufferOverflowed = false }
    }

    /// Row 32: what a resume on a live stream does first: nothing when the buffer kept everything since the pause, a
    /// rejoin of live when it did not (a stopped stream rejoins live anyway, row 34).
    mutating func rejoinLiveIfOverflowed() -> [Command] {
        guard isOnLiveStream, live?.bufferOverflowed == true else { return [] }
        guard playback != .stopped else {
            live?.bufferOverflowed = false
            return []
        }
        live?.bufferOverflowed = false
        return [.rejoinLive(.bufferOverflowed)]
    }
}
