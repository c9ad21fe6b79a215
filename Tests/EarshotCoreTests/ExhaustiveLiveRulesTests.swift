// The bounded exhaustive check for live streams (RULES.md rows 24 and 30-33), apart from ExhaustiveRulesTests so that
// its alphabet stays small: every state reachable from the starts through the live events and those that meet them
// (pauses of every kind, resumes, queue changes, the stream's outcomes) keeps the live invariants below.
import EarshotCore
import Testing

@Suite("Exhaustive check of the live-stream rules")
struct ExhaustiveLiveRulesTests {
    static let call = InterruptionSource.triggerStream(index: 1)

    static let events: [Event] = [
        .liveStreamStarted(index: 0), .liveStreamStarted(index: 1), .liveStreamStarted(index: 2),
        .liveBufferOverflowed(index: 0), .liveBufferOverflowed(index: 1), .userJumpToLive,
        .userPlay, .userPause, .userToggle, .userStop, .userNext, .userPrevious,
        .userSeek(milliseconds: 1_000),
        .userSeekBy(offsetMilliseconds: 5_000, fromMilliseconds: 1_000, trackLengthMilliseconds: nil),
        .userSeekBy(offsetMilliseconds: -5_000, fromMilliseconds: 9_000, trackLengthMilliseconds: nil),
        .interruptionBegan(call, at: Moment(milliseconds: 0)),
        .interruptionEnded(call, resumeAllowed: true, at: Moment(milliseconds: 4_000)),
        .outputLost(.portUnplugged), .outputLost(.serverLost), .outputAppeared,
        .streamOpened, .streamCorked, .streamUncorked, .streamClosed, .outputCommandFailed,
        .heardTrack(index: 1), .queuePlayedOut, .trackFailed(index: 0, failure: .decodeFailed, failuresInARow: 1),
        .queueReplaced(trackCount: 2, startIndex: 0), .queueExtended(trackCount: 3),
        .queueEdited(.delete(start: 0, end: 1)), .queueEdited(.swap(first: 0, second: 1)),
        .queueEdited(.delete(start: 0, end: 3)),
        // Consume (row 37) removes played tracks, the stream's too: the live stream must move with them.
        .userConsume(true), .userConsume(false),
        // Rows 38-41: the network under the stream (a clean close, a refused attempt, the mount gone, the answer, the
        // decoder running dry, the rules' timer early and late).
        .liveStreamLost(index: 0, .closedByServer, at: Moment(milliseconds: 0)),
        .liveStreamLost(index: 0, .networkFailed(.connectionRefused), at: Moment(milliseconds: 1_000)),
        .liveStreamLost(index: 0, .mountGone, at: Moment(milliseconds: 3_000)),
        .liveStreamReconnected(index: 0, at: Moment(milliseconds: 2_000)), .liveStreamRanDry(index: 0),
        .liveStreamNotOpen(index: 0),
        // A stream the decoder opened ahead of the listener ends too.
        .liveStreamLost(index: 1, .closedByServer, at: Moment(milliseconds: 0)),
        .liveStreamLost(index: 1, .mountGone, at: Moment(milliseconds: 3_000)),
        .timerFired(at: Moment(milliseconds: 1_500)), .timerFired(at: Moment(milliseconds: 5_000)),
        // Rules 19 and 21 over row 40: what else quiets a player, whose reason the network must not undo.
        .sessionLeft(.sleep), .externalPause(.phoneBridge), .externalPlay(.phoneBridge),
    ]

    /// A reconnection whose waits are short enough for the search to reach every phase: 1 s, then 2 s at most, and
    /// given up 2 s after the loss.
    static let policy: ResumePolicy = {
        var policy = ResumePolicy()
        policy.liveReconnect = LiveReconnectTiming(firstDelayMilliseconds: 1_000, maximumDelayMilliseconds: 2_000,
                                                   giveUpMilliseconds: 2_000)
        return policy
    }()

    static var starts: [PlayerState] {
        let queue = QueueCursor(trackCount: 2, index: 0)
        return [
            PlayerState(policy: policy),
            PlayerState(policy: policy, playback: .stopped, queue: queue),
            PlayerState(policy: policy, playback: .playing, queue: queue,
                        stream: StreamCondition(isOpen: true, isCorked: false)),
        ]
    }

    @Test("Every reachable state keeps the live invariants")
    func everyReachableStateKeepsTheLiveInvariants() {
        let search = BoundedSearch(from: Self.starts, events: Self.events) { state, event in
            var after = state
            let commands = after.apply(event)
            return (after, Self.problems(event, commands, before: state, after: after))
        }
        print("Exhaustive live rules check: \(search.states) states, \(search.transitions) transitions")
        #expect(search.violations.isEmpty, "\(search.report)")
        #expect(search.states > 1_000, "the search should reach a large state space")
    }

    /// The live invariants of one transition.
    static func problems(_ event: Event, _ commands: [Command], before: PlayerState, after: PlayerState) -> [String] {
        var problems: [String] = []
        // (L1) Row 31 and 24: a live stream is never sought in, nor flushed back to the frame heard.
        if before.isOnLiveStream && after.isOnLiveStream
            && commands.contains(where: { if case .seek = $0 { true } else { $0 == .flush } }) {
            problems.append("(L1) a seek or a flush on a live stream")
        }
        // (L2) Rows 32 and 34: a resume after an overflow rejoins live before it uncorks (a stopped stream's play, for
        // its own reason). A player quiet for the network that moves to another track plays that track (row 40).
        if before.isOnLiveStream, after.isOnLiveStream, before.live?.bufferOverflowed == true,
           let uncork = commands.firstIndex(of: .uncork) {
            let rejoin = commands.firstIndex { if case .rejoinLive = $0 { true } else { false } }
            if rejoin == nil || rejoin! > uncork { problems.append("(L2) resumed after an overflow without a rejoin") }
        }
        // (L3) Row 32: an overflow of the stream the listener is on, while not playing, is remembered.
        if case .liveBufferOverflowed(let index) = event, before.isOnLiveStream, before.live?.index == index,
           !before.isPlaying, after.live?.bufferOverflowed != true {
            problems.append("(L3) an overflow while paused was forgotten")
        }
        // (L4) The live events and the jump to live never change the playback or make a sound; the jump either
        // rejoins or is refused.
        switch event {
        case .liveStreamStarted, .liveBufferOverflowed, .userJumpToLive:
            if after.playback != before.playback || commands.contains(.uncork) {
                problems.append("(L4) a live event changed the playback")
            }
            if event == .userJumpToLive,
               commands != (before.isOnLiveStream ? [.rejoinLive(.userAsked)] : [.refuse(.notLive)]) {
                problems.append("(L4) the jump to live did \(commands)")
            }
        default:
            break
        }
        // (L5) Row 30: the live stream is always a track of the queue, and an idle player has none.
        if let live = after.live {
            if after.playback == .idle { problems.append("(L5) an idle player has a live stream") }
            if !(0..<after.queue.trackCount).contains(live.index) { problems.append("(L5) a live stream off the queue") }
        }
        // (L6) A rejoin only ever concerns the live stream the listener is on.
        if commands.contains(where: { if case .rejoinLive = $0 { true } else { false } }), !before.isOnLiveStream {
            problems.append("(L6) a rejoin off a live stream")
        }
        return problems + networkProblems(event, commands, before: before, after: after)
    }

    /// The network's invariants of one transition (rows 38-41).
    static func networkProblems(_ event: Event, _ commands: [Command], before: PlayerState, after: PlayerState)
        -> [String] {
        var problems: [String] = []
        // (L7) Row 40: quiet for the network only on the live stream, its connection down and its decoder dry.
        if after.playback == .paused(.networkLost),
           after.liveReconnection?.ranDry != true || after.liveReconnection?.phase == .ended {
            problems.append("(L7) paused(networkLost) with audio to play or no connection lost")
        }
        // (L8) Row 38: an attempt is made only for the live stream the decoder has open, and is then under way.
        for case .reconnectLiveStream(let index) in commands
        where after.live?.index != index || after.live?.reconnection?.phase != .connecting {
            problems.append("(L8) a reconnection of another stream, or with no attempt under way")
        }
        let fromTheNetwork: Bool
        switch event {
        case .liveStreamLost, .liveStreamReconnected, .liveStreamRanDry, .liveStreamNotOpen, .timerFired:
            fromTheNetwork = true
        default: fromTheNetwork = false
        }
        // (L9) The network's reports sound only a player that was quiet for want of audio.
        if fromTheNetwork, commands.contains(.uncork), before.playback != .paused(.networkLost) {
            problems.append("(L9) the network's report made a sound")
        }
        // (L14) Rules 19 and 21: a session's departure or an outside sender's pause takes over a player quiet for the
        // network, so that the network's report (which uncorks only `paused(networkLost)`, L9) starts nothing.
        switch event {
        case .sessionLeft, .externalPause:
            if before.playback == .paused(.networkLost), after.playback == .paused(.networkLost) {
                problems.append("(L14) \(event) left the network's quiet for the network to undo")
            }
        default:
            break
        }
        // (L10) Row 38: a wait that begins has the rules' timer armed for its end.
        if case .waiting(let until)? = after.live?.reconnection?.phase,
           before.live?.reconnection?.phase != .waiting(until: until),
           !commands.contains(.armTimer(at: until)) {
            problems.append("(L10) a wait for the next attempt with no timer")
        }
        // (L11) Row 41: given up, only a resume the user or a call's end asks for tries again.
        if before.live?.reconnection?.phase == .gaveUp, fromTheNetwork,
           commands.contains(where: { if case .reconnectLiveStream(before.live?.index) = $0 { true } else { false } }) {
            problems.append("(L11) a given-up reconnection tried again by itself")
        }
        // (L12) Row 40: running dry while playing on a lost connection is quiet at once, with its reason.
        if case .liveStreamRanDry(let index) = event, before.isPlaying, before.live?.index == index,
           let lost = before.liveReconnection, lost.phase != .ended, !lost.ranDry,
           commands.filter({ $0 != .releaseSleepDelay }) != [.cork] || after.playback != .paused(.networkLost) {
            problems.append("(L12) ran dry while playing did \(commands) into \(after.playback)")
        }
        // (L13) Row 39: a stream's end is declared only after a clean close whose reconnection found no stream, or
        // was answered and closed cleanly again before it settled.
        let mountGone = if case .liveStreamLost(_, .mountGone, _) = event { true } else { false }
        let closedAgain = if case .liveStreamLost(_, .closedByServer, _) = event { true } else { false }
        let episode = before.live?.reconnection ?? before.live?.settling?.episode
        if commands.contains(where: { if case .endLiveStream = $0 { true } else { false } }),
           !(mountGone || (closedAgain && before.live?.reconnection == nil)) || episode?.cause != .closedCleanly {
            problems.append("(L13) the stream ended without a clean close and its mount gone")
        }
        return problems
    }
}
