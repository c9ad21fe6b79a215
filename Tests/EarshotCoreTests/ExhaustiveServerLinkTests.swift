// The bounded exhaustive check of the sound server's connection (row 42), apart from ExhaustiveRulesTests so that its
// alphabet stays small: every state reachable from the starts through the server's reports, the rules' timer and the
// events that meet them (the user's commands, the stream's outcomes, a call, another output loss) keeps the
// invariants below. The rules' timer is followed as the executor keeps it (the last `armTimer`), so that a wait the
// rules forget to time is found.
import EarshotCore
import Testing

@Suite("Exhaustive check of the sound server's connection")
struct ExhaustiveServerLinkTests {
    static let call = InterruptionSource.triggerStream(index: 1)

    /// The player's start (`playerStarted`) is in the starts rather than here: it comes once, before anything else.
    static let events: [Event] = [
        .serverDisconnected(at: Moment(milliseconds: 1_000)), .serverDisconnected(at: Moment(milliseconds: 3_000)),
        .serverConnected,
        .serverConnectFailed(at: Moment(milliseconds: 1_000)), .serverConnectFailed(at: Moment(milliseconds: 2_000)),
        // The timer early, on time for the first waits, and late.
        .timerFired(at: Moment(milliseconds: 1_100)), .timerFired(at: Moment(milliseconds: 1_200)),
        .timerFired(at: Moment(milliseconds: 2_400)), .timerFired(at: Moment(milliseconds: 9_000)),
        .userPlay, .userPause, .userToggle, .userStop, .userNext,
        .streamOpened, .streamCorked, .streamUncorked, .streamClosed, .outputCommandFailed, .configuredSinkRefused,
        .outputLost(.portUnplugged), .outputAppeared,
        .interruptionBegan(call, at: Moment(milliseconds: 0)),
        .interruptionEnded(call, resumeAllowed: true, at: Moment(milliseconds: 4_000)),
        .queueReplaced(trackCount: 2, startIndex: 0), .queueReplaced(trackCount: 0, startIndex: 0),
        .trackFailed(index: 0, failure: .decodeFailed, failuresInARow: 2), .serviceStopping,
    ]

    /// A state with the executor's timer as the rules last armed it.
    struct Node: Hashable {
        var state: PlayerState
        var timer: Moment?
    }

    /// A service and a foreground player just started (idle, and with a queue restored or given), each connecting
    /// for the first time, and a player playing on a connected server.
    static var starts: [PlayerState] {
        let queue = QueueCursor(trackCount: 2, index: 0)
        let closed = StreamCondition(isOpen: false, isCorked: true)
        var states: [PlayerState] = []
        for frontEnd in [FrontEnd.service, .foreground] {
            var policy = ResumePolicy()
            policy.frontEnd = frontEnd
            for var started in [PlayerState(policy: policy, stream: closed),
                                PlayerState(policy: policy, playback: .stopped, queue: queue, stream: closed)] {
                let commands = started.apply(.playerStarted(at: Moment(milliseconds: 0)))
                #expect(commands == [.connectServer], "the start asks for the first attempt at once")
                states.append(started)
            }
            states.append(PlayerState(policy: policy, playback: .playing, queue: queue,
                                      stream: StreamCondition(isOpen: true, isCorked: false)))
        }
        return states
    }

    @Test("Every reachable state keeps the invariants of the server's connection")
    func everyReachableStateKeepsTheServerInvariants() {
        let starts = Self.starts.map { Node(state: $0, timer: nil) }
        let search = BoundedSearch(from: starts, events: Self.events) { node, event in
            guard node.state.server.isConnected || !Self.fromTheStream(event) else { return nil }
            var after = node
            let commands = after.state.apply(event)
            for case .armTimer(let moment) in commands { after.timer = moment }
            if case .timerFired(let moment) = event, let armed = node.timer, armed <= moment { after.timer = nil }
            return (after, Self.problems(event, commands, before: node, after: after))
        }
        print("Exhaustive server link check: \(search.states) states, \(search.transitions) transitions")
        #expect(search.violations.isEmpty, "\(search.report)")
        #expect(search.states > 1_000, "the search should reach a large state space")
    }

    /// A stream's report, which comes only from a connection's stream: away from the server there is none (the
    /// executor closed it with the connection, and drops a dead stream's notices by their generation).
    static func fromTheStream(_ event: Event) -> Bool {
        switch event {
        case .streamOpened, .streamCorked, .streamUncorked, .streamClosed: return true
        default: return false
        }
    }

    /// The invariants of one transition.
    static func problems(_ event: Event, _ commands: [Command], before node: Node, after next: Node) -> [String] {
        var problems: [String] = []
        let before = node.state, after = next.state
        let timing = after.policy.serverReconnect
        // (S1) One attempt at a time: an attempt is asked for only when none is under way, and is then under way.
        let attempts = commands.filter { $0 == .connectServer }.count
        let underWay = (before: before.server.phase == .connecting, after: after.server.phase == .connecting)
        if attempts > 1 || (attempts == 1 && (underWay.before || !underWay.after)) {
            problems.append("(S1) \(attempts) attempts from \(before.server.phase) to \(after.server.phase)")
        }
        // (S2) No stream is asked for while the server is away: it waits for the connection instead.
        let opens = commands.contains { $0 == .openStream || $0 == .openStreamOnDefaultSink }
        if opens, !after.server.isConnected {
            problems.append("(S2) a stream asked for with no server")
        }
        // (S3) A wait for the next attempt always has the executor's timer armed for its end: the link is never left
        // away with nothing to bring it back.
        if case .waiting(let until) = after.server.phase, next.timer != until {
            problems.append("(S3) waiting until \(until) with the timer at \(String(describing: next.timer))")
        }
        // (S4) Rules 10 and 12: the server's reports and the timer never make a sound nor start the player.
        let fromTheServer: Bool
        switch event {
        case .playerStarted, .serverDisconnected, .serverConnected, .serverConnectFailed, .timerFired:
            fromTheServer = true
        default: fromTheServer = false
        }
        if fromTheServer, commands.contains(.uncork) || (!before.isPlaying && after.isPlaying) {
            problems.append("(S4) the server's report started the player")
        }
        // (S5) Away from the server, a playing player has a stream, or one waits for the connection: it never says
        // playing with nothing to play on and nothing coming.
        if after.isPlaying, !after.server.isConnected, !after.stream.isOpen, after.server.awaitedStream == nil {
            problems.append("(S5) playing, away from the server, with no stream awaited")
        }
        // (S6) The backoff: each wait is at least the first delay and at most the longest after the moment it began.
        if case .waiting(let until) = after.server.phase, after.server.phase != before.server.phase {
            let moment: Moment? = switch event {
            case .serverDisconnected(let at), .serverConnectFailed(let at): at
            default: nil
            }
            if let moment, !(timing.firstDelayMilliseconds...timing.maximumDelayMilliseconds)
                .contains(until.milliseconds(since: moment)) {
                problems.append("(S6) a wait of \(until.milliseconds(since: moment)) ms")
            } else if moment == nil {
                problems.append("(S6) a wait begun by \(event)")
            }
        }
        // (S7) Row 29: a foreground player gives up only when its very first attempt fails, a service never.
        if commands.contains(.exitForeground(.noServer)) {
            let firstFailed = if case .serverConnectFailed = event { true } else { false }
            if !firstFailed || before.server.afterLoss || before.server.attemptFailed
                || before.policy.frontEnd != .foreground {
                problems.append("(S7) gave up for no server after \(event)")
            }
        }
        // (S8) Connected, nothing of an absence is kept; away, when it began is known.
        if after.server.isConnected, after.server != ServerLink() {
            problems.append("(S8) connected with \(after.server)")
        }
        if !after.server.isConnected, after.server.awaySince == nil {
            problems.append("(S8) away since no moment")
        }
        // (S9) Rule 10: the server lost while playing corks at once and keeps the position (flush).
        if case .serverDisconnected = event, before.isPlaying,
           commands.filter({ if case .armTimer = $0 { false } else { true } }) != [.cork, .flush] {
            problems.append("(S9) the server lost while playing did \(commands)")
        }
        return problems
    }
}
