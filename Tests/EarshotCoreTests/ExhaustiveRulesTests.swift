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

    static func events(sources: [InterruptionSource]) -> [Event] {
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
            .userSeek(milliseconds: 1_000), .userVolume(percent: 50), .externalPause,
            .queueReplaced(trackCount: 2, startIndex: 0), .queueReplaced(trackCount: 0, startIndex: 0),
            .queueRestored(trackCount: 2, index: 1), .queueExtended(trackCount: 3),
            .heardTrack(index: 1), .heardTrack(index: 0), .queuePlayedOut, .formatChangeReached,
            .trackFailed(index: 0, failure: .decodeFailed, next: 1),
            .trackFailed(index: 1, failure: .notMPEGAudio, next: nil),
            .streamCorked, .streamUncorked, .streamOpened, .streamClosed, .outputCommandFailed, .outputStalled,
        ]
        return events
    }

    static var starts: [PlayerState] {
        let queue = QueueCursor(trackCount: 2, index: 0)
        var states: [PlayerState] = []
        for resume in [true, false] {
            let policy = ResumePolicy(resumeAfterInterruption: resume)
            states.append(PlayerState(policy: policy))
            states.append(PlayerState(policy: policy, playback: .stopped, queue: queue))
            states.append(PlayerState(policy: policy, playback: .paused(.user), queue: queue))
            states.append(PlayerState(policy: policy, playback: .playing, queue: queue,
                                      stream: StreamCondition(isOpen: true, isCorked: false)))
        }
        return states
    }
}

@Suite("Exhaustive check of the rules")
struct ExhaustiveRulesTests {
    @Test("Every reachable state keeps the invariants of RULES.md")
    func everyReachableStateKeepsTheInvariants() {
        search(events: Alphabet.events(sources: Alphabet.announced), minimumStates: 1_000)
    }

    @Test("Rule 18: with inferred calls among the sources, every reachable state keeps the invariants too")
    func inferredCallsKeepTheInvariants() {
        search(events: Alphabet.events(sources: Alphabet.withInferred), minimumStates: 10_000)
    }

    /// Searches every state reachable from the starts through `events`, checking each transition.
    private func search(events: [Event], minimumStates: Int) {
        var seen = Set<Node>()
        var frontier: [Node] = Alphabet.starts.map {
            Node(state: $0, silencedUntilUserPlays: false,
                 playingWhenInterruptionBegan: false, userPlayedDuringInterruption: false)
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
                    if seen.insert(successor).inserted { next.append(successor) }
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

    /// Applies one event and checks invariants (a)-(f) and the state's own consistency.
    private func step(_ node: Node, _ event: Event) -> (Node, [String]) {
        var after = node
        let before = node.state
        let commands = after.state.apply(event)
        let state = after.state
        var problems: [String] = []

        let userPlayed = event == .userPlay || (event == .userToggle && !before.isPlaying && !before.waitingForInterruptionEnd)
        let userPaused = event == .userPause || event == .externalPause || event == .userStop
            || (event == .userToggle && (before.isPlaying || before.waitingForInterruptionEnd))
        let lostOutput: Bool
        switch event {
        case .outputLost, .outputCommandFailed: lostOutput = true
        // A stall is only heard while playing; reported afterwards it is stale and changes nothing.
        case .outputStalled: lostOutput = before.isPlaying
        default: lostOutput = false
        }
        let startedPlaying = !before.isPlaying && state.isPlaying
        let stoppedPlaying = before.isPlaying && !state.isPlaying

        // (a) After output loss or a user pause, nothing but a user play makes the player play.
        if startedPlaying && node.silencedUntilUserPlays && !userPlayed {
            problems.append("(a) played without a user play after a pause or output loss")
        }
        // (b) An interruption ending never starts a player that was not playing when it began, unless the
        // user pressed play during it.
        if case .interruptionEnded = event, startedPlaying,
           !(node.playingWhenInterruptionBegan || node.userPlayedDuringInterruption) {
            problems.append("(b) an interruption's end started a player that was not playing")
        }
        // (c) Cork exactly when going from playing to not playing (except when the queue ran out and the
        // stream has already played everything); uncork exactly the reverse.
        let queueRanOut: Bool
        switch event {
        case .heardTrack, .queuePlayedOut, .trackFailed: queueRanOut = state.playback == .stopped
        default: queueRanOut = false
        }
        if commands.contains(.cork) != (stoppedPlaying && !queueRanOut) {
            problems.append("(c) cork \(commands.contains(.cork)) but playing \(before.isPlaying)->\(state.isPlaying)")
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
        // (e) Rule 18: a capture the user overruled never pauses (nor resumes) the player, and a source is never both
        // active and overruled.
        switch event {
        case .interruptionBegan(let source, _), .interruptionEnded(let source, _, _):
            if before.overruledInterruptions.contains(source)
                && (!commands.isEmpty || state.playback != before.playback) {
                problems.append("(e) an overruled capture changed the playback")
            }
        default: break
        }
        if !state.interruptions.isDisjoint(with: state.overruledInterruptions) {
            problems.append("(e) a source both active and overruled")
        }
        if state.overruledInterruptions.contains(where: { !$0.isInferred }) {
            problems.append("(e) an announced source was overruled")
        }
        // (f) Rule 18 only while every active source is inferred; rule 9 stays for announced ones.
        if userPlayed, before.interruptions.contains(where: { !$0.isInferred }), state.isPlaying {
            problems.append("(f) a user play overruled an announced call")
        }
        // The state's own consistency: a wish to resume only exists during an interruption, and output
        // loss leaves commands that keep what was heard.
        if state.resumeIntent != .none && state.interruptions.isEmpty {
            problems.append("a resume intent outlived its interruption")
        }
        let reportsLoss: Bool
        switch event {
        case .outputLost, .outputStalled: reportsLoss = true
        default: reportsLoss = false
        }
        if reportsLoss, before.isPlaying, commands != [.cork, .flush] {
            problems.append("output loss while playing must cork then flush")
        }
        if state.playback == .idle && state.queue != .empty {
            problems.append("idle with a queue")
        }

        // Update the ghost history.
        if userPlayed { after.silencedUntilUserPlays = false }
        if (userPaused || lostOutput) && !state.isPlaying { after.silencedUntilUserPlays = true }
        // A restored queue is like a replug: it waits for the user.
        if case .queueRestored = event, state.playback == .paused(.restored) { after.silencedUntilUserPlays = true }
        if case .interruptionBegan = event, before.interruptions.isEmpty, !state.interruptions.isEmpty {
            after.playingWhenInterruptionBegan = before.isPlaying
            after.userPlayedDuringInterruption = false
        }
        if !state.interruptions.isEmpty {
            if userPlayed { after.userPlayedDuringInterruption = true }
            if userPaused || lostOutput {
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
