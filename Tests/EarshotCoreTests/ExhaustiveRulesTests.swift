// A bounded exhaustive check: a breadth-first search over every state reachable from the starting states
// through an alphabet covering every event kind, checking the invariants of shared/RULES.md on every
// transition. The state is extended with "ghost" history (what the user last did, whether the player was
// playing when the current interruption began) so that history-dependent invariants can be checked.
import EarshotCore
import Testing

/// A reducer state plus the history the invariants need.
private struct Node: Hashable {
    var state: PlayerState
    /// The player was silenced by output loss or a user pause and no user play has come since.
    var silencedUntilUserPlays: Bool
    /// The player was playing when the current interruption episode began (and no pause or loss since).
    var playingWhenInterruptionBegan: Bool
    /// The user asked to play during the current interruption episode (and has not paused since).
    var userPlayedDuringInterruption: Bool
    /// Rule 21's history, kept apart (see `OutsideSenders`).
    var outside = OutsideSenders()
    /// What the rules' commands left the stream in: uncorked by the last of `uncork`, `cork`, `fadeOutAndCork`, a
    /// new stream (opened corked) or a closed or lost one. Rule 22's invariant (w) holds it against the playback.
    var uncorked: Bool
}

/// What rule 21's invariants need to know of the outside senders (the session manager, the phone bridges).
private struct OutsideSenders: Hashable {
    /// The senders whose `Pause` has not been answered by their own `Play` or `PlayPause` yet.
    var unansweredPauses: Set<ExternalSender> = []
    /// The sender whose `Pause` stopped the music, while nothing else has changed the playback or come from the
    /// user since.
    var heldBy: ExternalSender?

    /// Whether `event` is a sender's `Play` or `PlayPause` answering its own unanswered `Pause`, and which sender.
    func answering(_ event: Event) -> ExternalSender? {
        switch event {
        case .externalPlay(let sender), .externalPlayPause(let sender):
            return unansweredPauses.contains(sender) ? sender : nil
        default: return nil
        }
    }

    /// The user's request `event` stands for: a sender's `Play` or `PlayPause` with no `Pause` of its own to answer
    /// is the user's, relayed (a phone's media remote).
    func userEvent(for event: Event) -> Event {
        switch event {
        case .externalPlay(let sender) where !unansweredPauses.contains(sender): return .userPlay
        case .externalPlayPause(let sender) where !unansweredPauses.contains(sender): return .userToggle
        default: return event
        }
    }

    /// Checks rule 21 on one transition and returns the history after it.
    func step(_ event: Event, before: PlayerState, after state: PlayerState, userActed: Bool) -> (Self, [String]) {
        var next = self
        var problems: [String] = []
        let startedPlaying = !before.isPlaying && state.isPlaying
        // (e) An outside Pause never touches a player that is not playing: the reason it is quiet, the interruptions
        // and the wish to resume stay.
        if case .externalPause = event, !before.isPlaying,
           state.playback != before.playback || state.resumeIntent != before.resumeIntent
            || state.interruptions != before.interruptions {
            problems.append("(e) an outside Pause changed a player that was not playing")
        }
        // (f) A sender's answer to its own Pause never pauses, and starts only what that Pause paused.
        if let sender = answering(event) {
            if before.isPlaying && !state.isPlaying { problems.append("(f) a sender's answer paused the music") }
            if startedPlaying && heldBy != sender {
                problems.append("(f) a sender's answer started what it had not paused")
            }
        }
        // (g) A player an outside Pause holds starts only for the user, that sender's answer, or the end of a call
        // that took the pause over.
        if let holder = heldBy, startedPlaying, !userActed, answering(event) != holder {
            if case .interruptionEnded = event {} else { problems.append("(g) held by \(holder), started by \(event)") }
        }

        switch event {
        case .externalPause(let sender): next.unansweredPauses.insert(sender)
        case .externalPlay(let sender), .externalPlayPause(let sender): next.unansweredPauses.remove(sender)
        default: break
        }
        if case .externalPause(let sender) = event, before.isPlaying, !state.isPlaying {
            next.heldBy = sender
        } else if state.playback != before.playback || userActed {
            next.heldBy = nil
        }
        return (next, problems)
    }
}

private enum Alphabet {
    static let window = ResumePolicy().resumeWindowMilliseconds
    /// Announced sources of each kind.
    static let announced = [InterruptionSource.serverCorkRequest, .triggerStream(index: 1), .profileSwitch(card: 1)]
    /// For rule 18: an announced source (the reducer treats every announced kind alike) and two inferred calls, one
    /// to overrule and one beginning after it. Five sources at once made a search of 322 176 states (90 s here).
    static let withInferred = [
        InterruptionSource.profileSwitch(card: 1), .microphoneCapture(client: 1), .microphoneCapture(client: 2),
    ]

    static func events(sources: [InterruptionSource], departures: [SessionDeparture], ducks: Bool = false) -> [Event] {
        var events: [Event] = []
        for source in sources {
            events.append(.interruptionBegan(source, at: Moment(milliseconds: 0)))
            events.append(.interruptionEnded(source, resumeAllowed: true, at: Moment(milliseconds: 4_000)))
            events.append(.interruptionEnded(source, resumeAllowed: false, at: Moment(milliseconds: 4_000)))
            // The window is the same for every kind of source: checked with the announced ones, to keep the search
            // small enough to run with the suite.
            if !source.isInferred {
                events.append(.interruptionEnded(source, resumeAllowed: true, at: Moment(milliseconds: window + 1)))
            }
        }
        for reason in [OutputLossReason.deviceRemoved, .portUnplugged, .serverLost, .streamFailed] {
            events.append(.outputLost(reason))
        }
        events += [
            .routeChanged, .outputAppeared,
            .userPlay, .userPause, .userToggle, .userStop, .userNext, .userPrevious,
            .userSeek(milliseconds: 1_000), .userVolume(percent: 50),
            .queueReplaced(trackCount: 2, startIndex: 0), .queueReplaced(trackCount: 0, startIndex: 0),
            .queueRestored(trackCount: 2, index: 1, positionMilliseconds: 0), .queueExtended(trackCount: 3),
            .heardTrack(index: 1), .heardTrack(index: 0), .queuePlayedOut, .formatChangeReached,
            .trackFailed(index: 0, failure: .decodeFailed, failuresInARow: 1),
            .trackFailed(index: 1, failure: .notMPEGAudio, failuresInARow: 1),
            .trackFailed(index: 1, failure: .unreadable, failuresInARow: 3),
            .streamCorked, .streamUncorked, .streamOpened, .streamClosed, .outputCommandFailed,
            .outputSilent(milliseconds: 1_010, requestPeriodMilliseconds: 50, heardSinceStart: true),
            .outputSilent(milliseconds: 990, requestPeriodMilliseconds: 50, heardSinceStart: true),
            .outputSilent(milliseconds: 1_010, requestPeriodMilliseconds: 250, heardSinceStart: true),
            // Past every threshold, from a sink that has not played since the stream started (still waking).
            .outputSilent(milliseconds: 5_000, requestPeriodMilliseconds: 50, heardSinceStart: false),
            .tailHandedOver(.formatChange), .tailHandedOver(.queueEnd),
            .userSeekBy(offsetMilliseconds: 5_000, fromMilliseconds: 1_000, trackLengthMilliseconds: 3_000),
            .configuredSinkRefused, .outputSettingFailed(.unmute), .outputSettingFailed(.volume),
            // Rule 25: the current track deleted (the one at its place plays on) and a chosen track played.
            .queueEdited(.delete(start: 0, end: 1)), .userPlayTrack(index: 1),
        ]
        // Rule 21 with one sender, the phone bridge, which sends all three: the senders are alike to the rules, and a
        // second one would multiply the states by four (ExternalPauseTests checks one sender's answer against
        // another's pause).
        events += [.externalPause(.phoneBridge), .externalPlay(.phoneBridge), .externalPlayPause(.phoneBridge)]
        // Rule 19: each departure and its return, in any order (a wake with no sleep, two sleeps in a row).
        for departure in departures {
            events += [.sessionLeft(departure), .sessionReturned(departure)]
        }
        // Rule 20 with one duck stream: a second one only nests (RulesTests' rule 20 rows check two overlapping). With
        // the announced sources only: the duck doubles the states, which with the inferred ones took minutes.
        if ducks { events += [.duckBegan(stream: 1), .duckEnded(stream: 1)] }
        return events
    }

    /// Repeat and shuffle: every mode, shuffle on and off, and an order restored from a save (a queue of three, so
    /// that the order has room to differ from the queue's).
    static let playOrder: [Event] = [
        .userRepeat(.off), .userRepeat(.track), .userRepeat(.queue),
        .userShuffle(on: true, seed: 1), .userShuffle(on: false, seed: 0),
        .playModesRestored(
            repeat: .queue, shuffle: ShuffleOrder(order: [2, 0, 1], generator: ShuffleGenerator(seed: 4))),
        .queueReplaced(trackCount: 3, startIndex: 1), .heardTrack(index: 2),
        .trackFailed(index: 2, failure: .unreadable, failuresInARow: 1),
    ]

    /// Single and consume (rules 35-37): single's three modes and consume both ways, with repeat off and queue and
    /// shuffle on and off (repeat track and a restored order are the play order search's: crossed with these, the
    /// states grew six times and the search took minutes).
    static let singleConsume: [Event] = [
        .userSingle(.on), .userSingle(.oneshot), .userSingle(.off), .userConsume(true), .userConsume(false),
        .userRepeat(.off), .userRepeat(.queue), .userShuffle(on: true, seed: 1), .userShuffle(on: false, seed: 0),
        // A third track heard (the base alphabet's `queueExtended` makes three).
        .heardTrack(index: 2),
    ]

    static var starts: [PlayerState] {
        let queue = QueueCursor(trackCount: 2, index: 0)
        var states: [PlayerState] = []
        // `pauseOnLock` and `inhibitIdleSuspend` both ways, paired with the resume setting rather than crossed with it:
        // they are consulted by different rules, and crossing them would double the search.
        for resume in [true, false] {
            let policy = ResumePolicy(resumeAfterInterruption: resume, pauseOnLock: !resume, inhibitIdleSuspend: resume)
            states.append(PlayerState(policy: policy))
            states.append(PlayerState(policy: policy, playback: .stopped, queue: queue))
            states.append(PlayerState(policy: policy, playback: .paused(.user), queue: queue))
            var playing = PlayerState(policy: policy, playback: .playing, queue: queue,
                                      stream: StreamCondition(isOpen: true, isCorked: false))
            playing.idleInhibitorHeld = policy.inhibitIdleSuspend
            states.append(playing)
        }
        return states
    }
}

@Suite("Exhaustive check of the rules")
struct ExhaustiveRulesTests {
    @Test("Every reachable state keeps the invariants of RULES.md")
    func everyReachableStateKeepsTheInvariants() {
        search(events: Alphabet.events(sources: Alphabet.announced, departures: SessionDeparture.allCases, ducks: true),
               minimumStates: 1_000)
    }

    @Test("Rule 18: with inferred calls among the sources, every reachable state keeps the invariants too")
    func inferredCallsKeepTheInvariants() {
        // Without rule 19's events, which the first search covers: they add 40 % to this search, the larger one (its
        // interplay with an overruled capture is SessionLeftRulesTests' `rule19DuringAnOverruledCapture`).
        search(events: Alphabet.events(sources: Alphabet.withInferred, departures: []), minimumStates: 10_000)
    }

    @Test("Repeat and shuffle: with the play order's commands in the alphabet, every reachable state keeps them too")
    func playOrderKeepsTheInvariants() {
        // Without interruption sources and outside senders: the order touches neither, and with one source the search
        // took 150 s, with the senders 45 s.
        let events = Alphabet.events(sources: [], departures: []).filter {
            switch $0 {
            case .externalPause, .externalPlay, .externalPlayPause: return false
            default: return true
            }
        }
        // With no source to end, whether the player resumes after one makes no difference: half the starts do.
        search(events: events + Alphabet.playOrder, minimumStates: 2_000,
               starts: Alphabet.starts.filter(\.policy.resumeAfterInterruption))
    }

    @Test("Rules 35-37: with single and consume in the alphabet, every reachable state keeps the invariants too")
    func singleAndConsumeKeepTheInvariants() {
        // As the play order search, from the playing start only: the others are reached from it (a pause, a stop, a
        // queue cleared), and starting from each multiplied the time.
        let events = Alphabet.events(sources: [], departures: []).filter {
            switch $0 {
            case .externalPause, .externalPlay, .externalPlayPause: return false
            default: return true
            }
        }
        search(events: events + Alphabet.singleConsume, minimumStates: 2_000,
               starts: Alphabet.starts.filter { $0.policy.resumeAfterInterruption && $0.isPlaying })
    }

    /// Searches every state reachable from the starts through `events`, checking each transition.
    private func search(events: [Event], minimumStates: Int, starts: [PlayerState] = Alphabet.starts) {
        var seen = Set<Node>()
        var frontier: [Node] = starts.map {
            Node(state: $0, silencedUntilUserPlays: false,
                 playingWhenInterruptionBegan: false, userPlayedDuringInterruption: false,
                 uncorked: $0.stream.isOpen && !$0.stream.isCorked)
        }
        seen.formUnion(frontier)
        var transitions = 0
        var depth = 0
        var violations: [String] = []

        while !frontier.isEmpty && violations.count < 5 {
            var next: [Node] = []
            for node in frontier {
                for event in events {
                    transitions += 1
                    let (successor, problems) = step(node, event)
                    violations += problems.map { "\($0) after \(event) from \(node.state)" }
                    // The shuffle generator's state only chooses among orders the search meets anyway; kept, it would
                    // make every reshuffle a new state and the search endless.
                    var canonical = successor
                    canonical.state.shuffle?.generator = ShuffleGenerator(seed: 0)
                    if seen.insert(canonical).inserted { next.append(canonical) }
                }
            }
            frontier = next
            depth += 1
        }
        print("Exhaustive rules check: \(seen.count) states, \(transitions) transitions, \(events.count) event kinds, "
            + "depth \(depth), every sequence of any length over the alphabet covered")
        #expect(violations.isEmpty, "\(violations.prefix(5).joined(separator: "\n"))")
        #expect(seen.count > minimumStates, "the search should reach a large state space")
    }

    /// Applies one event and checks invariants (a)-(d), rule 21's (e)-(g) in `OutsideSenders`, rule 18's (h)-(i) and
    /// the state's own consistency.
    private func step(_ node: Node, _ event: Event) -> (Node, [String]) {
        var after = node
        let before = node.state
        let allCommands = after.state.apply(event)
        let state = after.state
        var problems = Self.idleInhibitorProblems(allCommands, before: before, after: state)
        // The other invariants speak of the output and the sleep: rule 23's commands, checked above, are left out.
        let commands = allCommands.filter { $0 != .holdIdleInhibitor && $0 != .releaseIdleInhibitor }

        // A sender's Play or PlayPause with no Pause of its own to answer is the user's, relayed (rule 21).
        var userEvent = node.outside.userEvent(for: event)
        // Choosing a track of the queue to play (rule 25) is the user's play, of that track; one past the queue, or
        // with no queue, is nothing (rule 15).
        if case .userPlayTrack(let index) = event, before.playback != .idle,
           (0..<before.queue.trackCount).contains(index) {
            userEvent = .userPlay
        }
        let userPlayed = userEvent == .userPlay
            || (userEvent == .userToggle && !before.isPlaying && !before.waitingForInterruptionEnd)
        let userPaused = userEvent == .userPause || userEvent == .userStop
            || (userEvent == .userToggle && (before.isPlaying || before.waitingForInterruptionEnd))
        let lostOutput: Bool
        switch event {
        case .outputLost, .outputCommandFailed: lostOutput = true
        // A stall is only heard while playing, from a sink that had played since the stream started; reported
        // afterwards it is stale and changes nothing.
        case .outputSilent(let milliseconds, let period, let heard):
            lostOutput = before.isPlaying && heard
                && milliseconds > StallRule.thresholdMilliseconds(requestPeriodMilliseconds: period)
        default: lostOutput = false
        }
        let startedPlaying = !before.isPlaying && state.isPlaying
        let stoppedPlaying = before.isPlaying && !state.isPlaying
        // Rule 19: a departure the rules act on (a lock only with pauseOnLock).
        let leftSession: Bool
        if case .sessionLeft(let departure) = event {
            leftSession = departure != .locked || before.policy.pauseOnLock
        } else {
            leftSession = false
        }

        // (a) After output loss or a user pause, nothing but a user play makes the player play.
        if startedPlaying && node.silencedUntilUserPlays && !userPlayed {
            problems.append("(a) played without a user play after a pause or output loss")
        }
        // (b) An interruption ending never starts a player that was not playing when it began (or held by an
        // outside Pause for it, rule 21), unless the user pressed play during it.
        if case .interruptionEnded = event, startedPlaying,
           !(node.playingWhenInterruptionBegan || node.userPlayedDuringInterruption) {
            problems.append("(b) an interruption's end started a player that was not playing")
        }
        // (c) Cork exactly when going from playing to not playing (rule 22: a queue that ran out too, whatever the
        // stream still holds); uncork exactly the reverse.
        let corks = commands.contains(where: \.corks)
        // A source that must quiet at once cuts a call's fade-out short (EarshotCore/Edges.swift).
        var cutsFadeShort = false
        if case .interruptionBegan(let source, _) = event, !before.interruptions.contains(source),
           !before.overruledInterruptions.contains(source) {
            cutsFadeShort = before.isFadingOutForInterruption && !PlayerState.pauseFades(for: source)
        }
        if corks != (stoppedPlaying || cutsFadeShort) {
            problems.append("(c) cork \(corks) but playing \(before.isPlaying)->\(state.isPlaying)")
        }
        // (j) Only a user's pause or a call's pause fades out: an output loss and a profile switch cork at once.
        if commands.contains(.fadeOutAndCork) {
            switch event {
            case .userPause, .userToggle, .userStop, .externalPause(.phoneBridge), .externalPlayPause(.phoneBridge):
                break
            case .interruptionBegan(let source, _) where PlayerState.pauseFades(for: source) && stoppedPlaying:
                break
            default:
                problems.append("(j) \(event) faded out")
            }
        }
        // (k) Rule 20: ducking never changes the playback, and the volume is lowered exactly when the first duck stream
        // begins and restored exactly when the last one ends.
        switch event {
        case .duckBegan, .duckEnded:
            if state.playback != before.playback || commands.contains(where: { $0 != .duck && $0 != .unduck }) {
                problems.append("(k) a duck changed the playback")
            }
        default:
            if state.duckingStreams != before.duckingStreams { problems.append("(k) ducks changed by \(event)") }
        }
        if commands.contains(.duck) != (!before.isDucked && state.isDucked)
            || commands.contains(.unduck) != (before.isDucked && !state.isDucked) {
            problems.append("(k) duck commands \(commands) for ducked \(before.isDucked)->\(state.isDucked)")
        }
        // A player that starts without a stream opens one and uncorks when it is open.
        let uncorkDue = (startedPlaying && before.stream.isOpen) || (event == .streamOpened && state.isPlaying)
        if commands.contains(.uncork) != uncorkDue {
            problems.append("(c) uncork \(commands.contains(.uncork)) but playing \(before.isPlaying)->\(state.isPlaying)")
        }
        if startedPlaying && !before.stream.isOpen && !commands.contains(.openStream) {
            problems.append("(c) started playing without a stream and opened none")
        }
        // (d) While any interruption source is active the player is not playing.
        if !state.interruptions.isEmpty && state.isPlaying {
            problems.append("(d) playing during an interruption")
        }
        // (h) Rule 18: a capture the user overruled never pauses (nor resumes) the player, and a source is never both
        // active and overruled.
        switch event {
        case .interruptionBegan(let source, _), .interruptionEnded(let source, _, _):
            if before.overruledInterruptions.contains(source)
                && (!commands.isEmpty || state.playback != before.playback) {
                problems.append("(h) an overruled capture changed the playback")
            }
        default: break
        }
        if !state.interruptions.isDisjoint(with: state.overruledInterruptions) {
            problems.append("(h) a source both active and overruled")
        }
        if state.overruledInterruptions.contains(where: { !$0.isInferred }) {
            problems.append("(h) an announced source was overruled")
        }
        // (i) Rule 18 only while every active source is inferred; rule 9 stays for announced ones.
        if userPlayed, before.interruptions.contains(where: { !$0.isInferred }), state.isPlaying {
            problems.append("(i) a user play overruled an announced call")
        }
        problems += sessionProblems(event, before: before, after: state, commands: commands, leftSession: leftSession)
        // The state's own consistency: a wish to resume only exists during an interruption, and output
        // loss leaves commands that keep what was heard.
        if state.resumeIntent != .none && state.interruptions.isEmpty {
            problems.append("a resume intent outlived its interruption")
        }
        let reportsLoss: Bool
        switch event {
        case .outputLost: reportsLoss = true
        case .outputSilent: reportsLoss = lostOutput
        default: reportsLoss = false
        }
        // (The sleep's release may follow them: a stream gone is quiet, rule 19.)
        if reportsLoss, before.isPlaying, commands.filter({ $0 != .releaseSleepDelay }) != [.cork, .flush] {
            problems.append("output loss while playing must cork then flush")
        }
        if state.playback == .idle && state.queue != .empty {
            problems.append("idle with a queue")
        }
        // (m) Repeat and shuffle: a choice of order never changes what the player does now, a shuffled order holds each
        // track of the queue once, and the cursor stays in the queue.
        switch event {
        case .userRepeat, .userShuffle, .userSingle, .userConsume, .playModesRestored:
            if !commands.isEmpty || state.playback != before.playback || state.queue.index != before.queue.index {
                problems.append("(m) a choice of order changed the playback or the track")
            }
        default: break
        }
        if let shuffle = state.shuffle, !shuffle.isPermutation(ofTrackCount: state.queue.trackCount) {
            problems.append("(m) a shuffled order that is not the queue's tracks once each")
        }
        if state.playback != .idle && !(0..<state.queue.trackCount).contains(state.queue.index) {
            problems.append("(m) the cursor left the queue")
        }
        problems += Self.outcomeProblems(event, commands, before: before, after: state)
        after.uncorked = Self.uncorked(node.uncorked, after: event, commands)
        // (w) Rule 22: no state but playing keeps a stream the rules uncorked (a fade the rules asked for ends corked).
        if after.uncorked && !state.isPlaying { problems.append("(w) \(state.playback) with an uncorked stream") }
        problems += Self.failureProblems(event, commands, before: before, after: state)
        problems += Self.newQueueProblems(event, commands, before: before, after: state)

        let (outside, outsideProblems) = node.outside.step(
            event, before: before, after: state, userActed: userPlayed || userPaused)
        problems += outsideProblems
        after.outside = outside

        // Update the ghost history.
        if userPlayed { after.silencedUntilUserPlays = false }
        if (userPaused || lostOutput || leftSession) && !state.isPlaying { after.silencedUntilUserPlays = true }
        // A restored queue is like a replug: it waits for the user.
        if case .queueRestored = event, state.playback == .paused(.restored) { after.silencedUntilUserPlays = true }
        if case .interruptionBegan = event, before.interruptions.isEmpty, !state.interruptions.isEmpty {
            after.playingWhenInterruptionBegan = before.isPlaying || node.outside.heldBy != nil
            after.userPlayedDuringInterruption = false
        }
        if !state.interruptions.isEmpty {
            if userPlayed { after.userPlayedDuringInterruption = true }
            if userPaused || lostOutput || leftSession {
                after.userPlayedDuringInterruption = false
                after.playingWhenInterruptionBegan = false
            }
            if case .queueReplaced(0, _) = event {
                after.userPlayedDuringInterruption = false
                after.playingWhenInterruptionBegan = false
            }
        } else {
            after.playingWhenInterruptionBegan = false
            after.userPlayedDuringInterruption = false
        }
        return (after, problems)
    }
}
