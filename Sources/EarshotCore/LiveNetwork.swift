// The network under a live stream (issue 40; rows 38-41 in docs/design.md's "live source"). The fetch only reports
// what happened to its connection: lost, with its kind (`liveStreamLost`), answered again (`liveStreamReconnected`),
// and the decoder finding nothing left to decode while it is down (`liveStreamRanDry`). Whether to try again, when,
// whether the show has ended or the network failed, when to go quiet, whether to resume and when to give up are the
// rules' below; the waits between attempts are the rules' one timer (`armTimer`, `timerFired`).
//
// A server that closes the stream cleanly may have ended it, or may have died (a killed server's socket closes as
// cleanly as a finished one's). The rules ask at once: a reconnection the server answers with the mount gone (a 404
// for a mount whose source left, or a 410) means the stream ended, and the queue moves on to the next track; a
// reconnection the network refuses means the network failed, and so does any other refusal (a proxy's 502 or 503
// while its origin restarts must not end the station). A refused connection, a reset, an unresolved name, a
// TLS failure or 10 s of nothing is a network failure from the start: the rules try again after 1 s, then 2, 4, ...
// up to 30 s, and give up once the connection has been lost for the configured time (`radioReconnectMinutes`). After
// a network failure a refusal is no end: a restarted Icecast answers 404 until its source is back. A plain web server
// (no ICY header) closing cleanly a response of no announced length has sent a whole file: the stream ended, and
// asking again would fetch the file from its start.

/// How the fetch of a live stream lost its connection, as the fetch reports it (a kind, never an address).
public enum LiveStreamLoss: Hashable, Sendable, CustomStringConvertible {
    /// The server closed the stream cleanly: ended, or died (row 38 asks again to tell).
    case closedByServer
    /// A plain web server (no ICY header: not a station's server) closed cleanly a response that announced no length:
    /// a file read to its end, as HTTP/1.0 ends a body (row 39).
    case plainResponseClosed
    /// A reconnection was answered, but not with the stream: the mount is gone (an HTTP 404 or 410).
    case mountGone
    /// The network failed: the connection refused, reset, the name unresolved, TLS failing, or nothing for 10 s.
    case networkFailed(LiveNetworkFailure)

    /// `closedByServer`, `mountGone` or `networkFailed(KIND)`.
    public var description: String {
        switch self {
        case .closedByServer: return "closedByServer"
        case .plainResponseClosed: return "plainResponseClosed"
        case .mountGone: return "mountGone"
        case .networkFailed(let failure): return "networkFailed(\(failure))"
        }
    }
}

/// What failed on the network's side, for the log and status.
public enum LiveNetworkFailure: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Nobody listened at the address (the server is down).
    case connectionRefused
    /// The connection broke while receiving (reset).
    case connectionLost
    /// Nothing came for the fetch's silence limit (10 s).
    case timedOut
    /// The host name did not resolve.
    case unresolvedHost
    /// TLS failed: the handshake, or a certificate the system does not trust.
    case tls
    /// A server answered without the stream, but not that the mount is gone: a proxy's 502 or 503 while its origin
    /// restarts, a 500, a page (a captive portal) where audio was expected.
    case refused
    /// Anything else libcurl reports.
    case other

    /// The kind's name.
    public var description: String { rawValue }
}

/// The waits of the live stream's reconnection, as rule parameters.
public struct LiveReconnectTiming: Hashable, Sendable {
    /// The wait before the first attempt after a network failure: 1 s. Each failed attempt doubles it.
    public var firstDelayMilliseconds: Int64
    /// The longest wait between two attempts: 30 s, so a network back after a long outage is found within 30 s.
    public var maximumDelayMilliseconds: Int64
    /// How long a connection answered again must stay up before its next loss starts afresh: 30 s. Within it, the
    /// loss goes on with the reconnection (its backoff and its give-up window), so a server that accepts and closes
    /// at once is not asked again at once for ever.
    public var settleMilliseconds: Int64
    /// How long the connection may stay lost before the rules give up (`radioReconnectMinutes`, default 10): a router
    /// restarting or a DSL line resyncing takes one to three minutes, a laptop moving between access points seconds;
    /// ten minutes covers those with room, and past it the listener has long noticed the silence. Trying costs one
    /// connection every 30 s.
    public var giveUpMilliseconds: Int64

    /// The defaults above.
    public static let standard = LiveReconnectTiming(
        firstDelayMilliseconds: 1_000, maximumDelayMilliseconds: 30_000, giveUpMilliseconds: 10 * 60_000)

    /// A timing.
    public init(firstDelayMilliseconds: Int64, maximumDelayMilliseconds: Int64, giveUpMilliseconds: Int64,
                settleMilliseconds: Int64 = 30_000) {
        self.firstDelayMilliseconds = firstDelayMilliseconds
        self.maximumDelayMilliseconds = maximumDelayMilliseconds
        self.giveUpMilliseconds = giveUpMilliseconds
        self.settleMilliseconds = settleMilliseconds
    }
}

/// A reconnection the server answered at `connectedAt`, kept until the connection has stayed up for the settle time.
public struct SettlingReconnection: Hashable, Sendable {
    /// The reconnection as it stood when answered.
    public var episode: LiveReconnection
    /// When it was answered.
    public var connectedAt: Moment

    /// A reconnection answered at `connectedAt`.
    public init(episode: LiveReconnection, connectedAt: Moment) {
        self.episode = episode
        self.connectedAt = connectedAt
    }
}

/// A live stream whose connection is lost, and what the rules do about it (row 38).
public struct LiveReconnection: Hashable, Sendable {
    /// What the rules make of the loss so far.
    public enum Cause: Hashable, Sendable {
        /// The server closed cleanly, and no attempt has failed on the network since: a refusal now means the end.
        case closedCleanly
        /// The network failed: a refusal means the server is back without its source yet, and the rules try on.
        case networkFailed
    }

    /// Where the reconnection stands.
    public enum Phase: Hashable, Sendable, CustomStringConvertible {
        /// An attempt is under way: its answer is `liveStreamReconnected` or another `liveStreamLost`.
        case connecting
        /// The rules wait until this moment (their timer) before the next attempt.
        case waiting(until: Moment)
        /// The connection stayed lost past `giveUpMilliseconds`: no more attempts until the user plays (row 41).
        case gaveUp
        /// The stream ended (row 39): the decoder plays out what it received, and the queue goes on.
        case ended

        /// `reconnecting`, `waiting`, `gaveUp` or `ended`, as status shows it.
        public var description: String {
            switch self {
            case .connecting: return "reconnecting"
            case .waiting: return "waiting"
            case .gaveUp: return "gaveUp"
            case .ended: return "ended"
            }
        }
    }

    /// When the connection was lost; nil after a user's play restarted a given-up reconnection (the next loss sets it).
    public var since: Moment?
    /// What the loss is taken for.
    public var cause: Cause
    /// The wait before the attempt after the next failed one.
    public var nextDelayMilliseconds: Int64
    /// Where the reconnection stands.
    public var phase: Phase
    /// The decoder found nothing left to decode while the connection was down (row 40).
    public var ranDry = false

    /// A reconnection.
    public init(since: Moment?, cause: Cause, nextDelayMilliseconds: Int64, phase: Phase, ranDry: Bool = false) {
        self.since = since
        self.cause = cause
        self.nextDelayMilliseconds = nextDelayMilliseconds
        self.phase = phase
        self.ranDry = ranDry
    }
}

extension PlayerState {
    /// The reconnection of the live stream the listener is on, when its connection is lost.
    public var liveReconnection: LiveReconnection? {
        isOnLiveStream ? live?.reconnection : nil
    }

    /// The moment the reconnection waits for, when it waits: the rules' timer is armed for it (with the calls').
    var reconnectionDeadline: Moment? {
        if case .waiting(let until)? = live?.reconnection?.phase { return until }
        return nil
    }

    /// Row 38: the fetch of live stream `index` lost its connection, or an attempt to reconnect failed. A clean close
    /// is asked again at once; a network failure waits the backoff; a refusal after a clean close is the stream's end
    /// (row 39); past `giveUpMilliseconds` since the loss the rules give up (row 41). The stream may be one the decoder
    /// opened ahead of the listener (the next track): its end must be known too, or its decoder would wait for ever.
    mutating func liveStreamLost(_ index: Int, _ loss: LiveStreamLoss, at moment: Moment) -> [Command] {
        // Only a stream that started reports a loss: one the decoder is still opening (libsndfile reads ahead of
        // `liveStreamStarted`) is known from here on, as its start would make it (row 30).
        if live?.index != index { _ = liveStreamStarted(index) }
        guard playback != .idle, let stream = live, stream.index == index else { return [] }
        let timing = policy.liveReconnect
        if loss == .plainResponseClosed, (stream.reconnection?.phase ?? .connecting) == .connecting {
            // Row 39: a file served without its length ends so; asked again, it would be sent from its start.
            live?.settling = nil
            live?.reconnection = LiveReconnection(since: stream.reconnection?.since ?? moment, cause: .closedCleanly,
                                                  nextDelayMilliseconds: timing.firstDelayMilliseconds, phase: .ended)
            return endStream(index)
        }
        guard var reconnection = stream.reconnection else {
            if let settling = stream.settling,
               moment.milliseconds(since: settling.connectedAt) < timing.settleMilliseconds {
                return lostAgainSoon(index, loss, settling.episode, at: moment)
            }
            // The first loss of a connection that played.
            live?.settling = nil
            switch loss {
            case .closedByServer, .mountGone, .plainResponseClosed:
                live?.reconnection = LiveReconnection(since: moment, cause: .closedCleanly,
                                                      nextDelayMilliseconds: timing.firstDelayMilliseconds,
                                                      phase: .connecting)
                return [.reconnectLiveStream(index: index)]
            case .networkFailed:
                live?.reconnection = LiveReconnection(since: moment, cause: .networkFailed,
                                                      nextDelayMilliseconds: timing.firstDelayMilliseconds,
                                                      phase: .connecting)
                return retryLater(at: moment)
            }
        }
        // Rule 15: only an attempt under way has an answer to give.
        guard reconnection.phase == .connecting else { return [] }
        if reconnection.since == nil { reconnection.since = moment }
        if case .networkFailed = loss { reconnection.cause = .networkFailed }
        live?.reconnection = reconnection
        if loss == .mountGone && reconnection.cause == .closedCleanly {
            // Row 39: the server is there and the stream is not: it ended. A player quiet for want of audio plays out
            // what the ring kept, and the queue moves on as at any track's end.
            live?.reconnection?.phase = .ended
            return endStream(index)
        }
        return retryLater(at: moment)
    }

    /// Row 38: the connection answered again is lost before it settled: the reconnection goes on where it was, its
    /// backoff and give-up window kept; even a clean close waits the backoff. Row 39: a clean close again after a
    /// clean close whose reconnection was answered (a file served without a length, sent again and again) is the
    /// stream's end.
    private mutating func lostAgainSoon(_ index: Int, _ loss: LiveStreamLoss, _ episode: LiveReconnection,
                                        at moment: Moment) -> [Command] {
        live?.settling = nil
        if loss == .closedByServer && episode.cause == .closedCleanly {
            live?.reconnection = LiveReconnection(since: episode.since, cause: .closedCleanly,
                                                  nextDelayMilliseconds: episode.nextDelayMilliseconds, phase: .ended)
            return endStream(index)
        }
        var reconnection = episode
        reconnection.since = episode.since ?? moment
        reconnection.ranDry = false
        if case .networkFailed = loss { reconnection.cause = .networkFailed }
        if loss == .mountGone && reconnection.cause == .closedCleanly {
            reconnection.phase = .ended
            live?.reconnection = reconnection
            return endStream(index)
        }
        live?.reconnection = reconnection
        return retryLater(at: moment)
    }

    /// Row 39: the stream ended: its decoder plays out what the ring kept, and a player quiet for want of audio plays
    /// on, as at any track's end.
    private mutating func endStream(_ index: Int) -> [Command] {
        let endCommand: [Command] = [.endLiveStream(index: index)]
        guard playback == .paused(.networkLost) else { return endCommand }
        return endCommand + startPlaying()
    }

    /// Row 38: the next attempt waits the current delay (doubled for the one after, up to the cap), unless the
    /// connection has been lost for the give-up time (row 41) or the user stopped the player (a play tries again).
    private mutating func retryLater(at moment: Moment) -> [Command] {
        guard var reconnection = live?.reconnection else { return [] }
        let timing = policy.liveReconnect
        let lostFor = moment.milliseconds(since: reconnection.since ?? moment)
        if playback == .stopped || lostFor >= timing.giveUpMilliseconds {
            reconnection.phase = .gaveUp
        } else {
            reconnection.phase = .waiting(until: moment.advanced(by: reconnection.nextDelayMilliseconds))
            reconnection.nextDelayMilliseconds = min(reconnection.nextDelayMilliseconds * 2,
                                                     timing.maximumDelayMilliseconds)
        }
        live?.reconnection = reconnection
        return []
    }

    /// Row 38: the rules' timer went off; a reconnection whose wait is over tries again.
    mutating func reconnectionTimerFired(at moment: Moment) -> [Command] {
        guard case .waiting(let until)? = live?.reconnection?.phase, until <= moment, let index = live?.index else {
            return []
        }
        live?.reconnection?.phase = .connecting
        return [.reconnectLiveStream(index: index)]
    }

    /// Row 38: the attempt found no open stream to fetch into: its decoder was let go (the cursor moved on, a file
    /// plays), so there is nothing to reconnect, and the reconnection ends. A player quiet for want of audio on that
    /// station stays quiet, given up: the user's play opens it again.
    mutating func liveStreamNotOpen(_ index: Int) -> [Command] {
        guard live?.index == index, live?.reconnection?.phase == .connecting else { return [] }
        if isOnLiveStream && playback == .paused(.networkLost) {
            live?.reconnection?.phase = .gaveUp
        } else {
            live?.reconnection = nil
        }
        return []
    }

    /// Row 41 after a stop: the attempts end as if given up (the loss's moment kept), so a stopped player does not
    /// reconnect for ever; a play tries again. An attempt under way still has its answer come.
    mutating func stopReconnecting() {
        guard let phase = live?.reconnection?.phase, phase != .ended else { return }
        live?.reconnection?.phase = .gaveUp
    }

    /// Row 40: the connection is back. A player quiet for want of audio resumes: it was playing, and nobody paused it.
    /// A station the decoder opened afresh (after its old decoder was let go while waiting or given up) is connected
    /// as well: its reconnection is over whatever phase it was in.
    /// The reconnection is kept aside until the connection has stayed up for the settle time (row 38).
    mutating func liveStreamReconnected(_ index: Int, at moment: Moment) -> [Command] {
        guard playback != .idle, live?.index == index, let reconnection = live?.reconnection,
              reconnection.phase != .ended else {
            return []
        }
        live?.reconnection = nil
        live?.settling = SettlingReconnection(episode: reconnection, connectedAt: moment)
        return playback == .paused(.networkLost) && isOnLiveStream ? startPlaying() : []
    }

    /// Row 40: the decoder has nothing left to decode and the connection is down. Playing, the player goes quiet with
    /// the reason (`paused(networkLost)`), corked at once: what the ring still holds is kept for the resume. Not
    /// playing, the next resume waits for the network instead of sounding for a moment.
    mutating func liveStreamRanDry(_ index: Int) -> [Command] {
        guard playback != .idle, live?.index == index, let reconnection = live?.reconnection,
              reconnection.phase != .ended, !reconnection.ranDry
        else { return [] }
        live?.reconnection?.ranDry = true
        guard isPlaying, isOnLiveStream else { return [] }
        playback = .paused(.networkLost)
        return [.cork]
    }

    /// Rows 40 and 41, before any resume: with the connection down and nothing left to decode, the player waits for
    /// the network, quiet, instead of sounding (nil: play as usual). A reconnection given up tries again (`since`
    /// unknown until the next loss says when). Returns also the attempt a given-up reconnection needs when the player
    /// still has audio to play.
    mutating func waitForTheNetwork() -> (waits: Bool, commands: [Command]) {
        guard let reconnection = liveReconnection, reconnection.phase != .ended, let index = live?.index else {
            return (false, [])
        }
        var commands: [Command] = []
        if reconnection.phase == .gaveUp {
            live?.reconnection = LiveReconnection(since: nil, cause: .networkFailed,
                                                  nextDelayMilliseconds: policy.liveReconnect.firstDelayMilliseconds,
                                                  phase: .connecting, ranDry: reconnection.ranDry)
            commands.append(.reconnectLiveStream(index: index))
        }
        guard reconnection.ranDry else { return (false, commands) }
        playback = .paused(.networkLost)
        resumeIntent = .none
        return (true, commands)
    }

    /// Row 40: `paused(networkLost)` holds only a player on a live stream whose connection is down and ran dry; the
    /// cursor moved off it (a `next`, a new queue) or the stream ended, the player plays on as it was meant to. The
    /// cursor leaving the stream the listener was on (`heardBefore`, its index) lets its decoder go, and with it the
    /// reconnection (row 32's rule); a stream the decoder opened ahead keeps its own.
    mutating func resumeOffTheLostNetwork(heardBefore: Int?) -> [Command] {
        if let heardBefore, live?.index == heardBefore, !isOnLiveStream {
            live?.reconnection = nil
            live?.settling = nil
        }
        guard playback == .paused(.networkLost) else { return [] }
        if let reconnection = liveReconnection, reconnection.ranDry, reconnection.phase != .ended { return [] }
        return startPlaying()
    }
}
