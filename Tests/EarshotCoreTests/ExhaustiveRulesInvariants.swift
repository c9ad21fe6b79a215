// The invariants the bounded exhaustive check (ExhaustiveRulesTests.swift) holds every transition to, one function per
// rule or group of rules, split from the search itself to keep each file short.
import EarshotCore

extension ExhaustiveRulesTests {
    /// Whether the stream is uncorked after `event` and its `commands`, from `before`.
    static func uncorked(_ before: Bool, after event: Event, _ commands: [Command]) -> Bool {
        var uncorked = before
        switch event {
        case .streamClosed, .outputLost(.serverLost), .outputLost(.streamFailed), .serverDisconnected: uncorked = false
        default: break
        }
        for command in commands {
            switch command {
            case .uncork: uncorked = true
            case .cork, .fadeOutAndCork, .closeStream, .switchFormat, .openStream, .openStreamOnDefaultSink:
                uncorked = false
            default: break
            }
        }
        return uncorked
    }

    /// (x) Rules 14 and 22: after a failed track the decoder is told the rules' next track, exactly once, and the
    /// cursor follows it when the failed track was the current one; a queue that failed whole names none.
    static func failureProblems(_ event: Event, _ commands: [Command], before: PlayerState,
                                        after state: PlayerState) -> [String] {
        guard case .trackFailed(let index, _, let inARow) = event, before.playback != .idle,
              (0..<before.queue.trackCount).contains(index) else { return [] }
        let expected = inARow >= before.queue.trackCount ? nil : before.track(after: index, trackEnded: false)
        var problems: [String] = []
        if commands.filter({ if case .skipFailedTrack = $0 { true } else { false } })
            != [.skipFailedTrack(failed: index, next: expected)] {
            problems.append("(x) the decoder was not told the rules' next track \(String(describing: expected))")
        }
        if index == before.queue.index, let expected, state.queue.index != expected {
            problems.append("(x) the cursor is not on the track the decoder was told")
        }
        if index == before.queue.index, expected == nil, state.playback != .stopped {
            problems.append("(x) nothing left to play, but \(state.playback)")
        }
        return problems
    }

    /// (y) The decoder never moves without a command: a replaced queue (and a restored one the player takes) is given
    /// to the decoder by exactly one `playTrack` or `cue`, at the cursor (an empty queue: at 0, nothing to decode).
    static func newQueueProblems(_ event: Event, _ commands: [Command], before: PlayerState,
                                         after state: PlayerState) -> [String] {
        let moves = commands.filter {
            switch $0 {
            case .playTrack, .cue: return true
            default: return false
            }
        }
        switch event {
        case .queueReplaced:
            let index = state.queue.trackCount == 0 ? 0 : state.queue.index
            guard moves.count == 1, moves == [.playTrack(index: index)] || moves == [.cue(index: index, milliseconds: 0)]
            else { return ["(y) a new queue gave the decoder \(moves), not its track \(index)"] }
        case .queueRestored(_, let index, let milliseconds):
            let taken = before.playback == .idle && state.playback == .paused(.restored)
            if moves != (taken ? [.cue(index: index, milliseconds: milliseconds)] : []) {
                return ["(y) a restored queue gave the decoder \(moves)"]
            }
        default:
            break
        }
        return []
    }

    /// Rule 23's invariant (z): the rules hold the idle-suspend inhibitor exactly while playing with
    /// `inhibitIdleSuspend` on, ask for it once on entering playing and give it back once on leaving, and never
    /// otherwise; with the key off, never at all.
    static func idleInhibitorProblems(
        _ commands: [Command], before: PlayerState, after state: PlayerState
    ) -> [String] {
        var problems: [String] = []
        let holds = commands.filter { $0 == .holdIdleInhibitor }.count
        let releases = commands.filter { $0 == .releaseIdleInhibitor }.count
        if state.idleInhibitorHeld != (state.isPlaying && state.policy.inhibitIdleSuspend) {
            problems.append("(z) inhibitor held \(state.idleInhibitorHeld) while \(state.playback)")
        }
        let entered = !before.idleInhibitorHeld && state.idleInhibitorHeld
        let left = before.idleInhibitorHeld && !state.idleInhibitorHeld
        if holds != (entered ? 1 : 0) || releases != (left ? 1 : 0) {
            problems.append(
                "(z) \(holds) holds and \(releases) releases for playing \(before.isPlaying)->\(state.isPlaying)")
        }
        if !state.policy.inhibitIdleSuspend && holds > 0 { problems.append("(z) held with inhibitIdleSuspend off") }
        return problems
    }

    /// Rule 19's invariants (j)-(l) on one transition.
    func sessionProblems(
        _ event: Event, before: PlayerState, after state: PlayerState, commands: [Command], leftSession: Bool
    ) -> [String] {
        var problems: [String] = []
        // (j) A departure the rules act on leaves the player quiet-bound (not playing) with no wish to resume; a lock
        // without pauseOnLock changes nothing.
        if leftSession && (state.isPlaying || state.resumeIntent != .none) {
            problems.append("(j) still playing or resuming after the session was left")
        }
        if case .sessionLeft(.locked) = event, !before.policy.pauseOnLock, state != before || !commands.isEmpty {
            problems.append("(j) a lock without pauseOnLock changed the player")
        }
        // (k) A return never starts anything and commands nothing.
        if case .sessionReturned = event, state.playback != before.playback || !commands.isEmpty {
            problems.append("(k) the session's return changed the playback or commanded \(commands)")
        }
        // (l) The sleep's delay is released only when quiet, only for an announced sleep, and never kept once quiet.
        if commands.contains(.releaseSleepDelay) {
            let announced = before.sleepAwaitsQuiet || event == .sessionLeft(.sleep)
            if !state.isQuiet || !announced { problems.append("(l) released the sleep's delay while not quiet") }
            if commands.last != .releaseSleepDelay { problems.append("(l) commands after the release") }
        }
        if state.sleepAwaitsQuiet && state.isQuiet { problems.append("(l) a quiet player kept the sleep waiting") }
        return problems
    }

    /// The executor's outcomes (OutputOutcomes.swift): (p) a stream is opened only when the rules know of none, and
    /// only while one is wanted (playing, or a play waiting for a call to end); (q) a refused setting changes nothing;
    /// (r) the stream is closed exactly when a command failed, and counts as closed after; (s) a lost server takes its
    /// cork request with it; (t) drains and (u) stalls as `tailHandedOver` and `StallRule` say, and never a stall
    /// before the sink has played since the stream started; (v) a stream that dies under a paused player is flushed,
    /// so its resume skips nothing.
    static func outcomeProblems(_ event: Event, _ commands: [Command], before: PlayerState,
                                        after state: PlayerState) -> [String] {
        var problems: [String] = []
        let opens = commands.contains(.openStream) || commands.contains(.openStreamOnDefaultSink)
        if opens && before.stream.isOpen { problems.append("(p) a stream opened while one is open") }
        if opens && !(state.isPlaying || state.waitingForInterruptionEnd) {
            problems.append("(p) a stream opened that no play wants")
        }
        if case .outputSettingFailed = event, !commands.isEmpty || state != before {
            problems.append("(q) a refused setting changed the player")
        }
        if commands.contains(.closeStream) != (event == .outputCommandFailed) {
            problems.append("(r) closeStream \(commands.contains(.closeStream)) after \(event)")
        }
        if commands.contains(.closeStream) && state.stream.isOpen { problems.append("(r) closed, but counted open") }
        if event == .outputLost(.serverLost) && state.interruptions.contains(.serverCorkRequest) {
            problems.append("(s) a lost server's cork request outlived it")
        }
        // (t) The tail is played out only while playing, and only when the executor says it was handed over.
        let drains = commands.contains { if case .drain = $0 { return true } else { return false } }
        if drains != (state.isPlaying && { if case .tailHandedOver = event { return true } else { return false } }()) {
            problems.append("(t) drain \(drains) after \(event)")
        }
        // (v) A stream that dies under a paused player is flushed, so a resume skips nothing it held (the executor may
        // have reported it closed first); a stopped or idle player has nothing to resume.
        if case .outputLost(let reason) = event, reason == .serverLost || reason == .streamFailed {
            let flushes = commands.filter { $0 != .releaseSleepDelay } == [.flush]
            if case .paused = before.playback, !flushes {
                problems.append("(v) a stream lost under a paused player was not flushed: \(commands)")
            }
            if before.playback == .idle || before.playback == .stopped, commands.contains(.flush) {
                problems.append("(v) a stream lost under a \(before.playback) player was flushed")
            }
        }
        // (u) Silence shorter than the stall threshold, or before the sink has played since the stream started (a
        // sink still waking), changes nothing: never a stall verdict then.
        if case .outputSilent(let milliseconds, let period, let heard) = event,
           milliseconds <= StallRule.thresholdMilliseconds(requestPeriodMilliseconds: period) || !heard,
           state != before || !commands.isEmpty {
            problems.append("(u) a silence under the threshold or before the sink played changed the player")
        }
        return problems
    }
}
