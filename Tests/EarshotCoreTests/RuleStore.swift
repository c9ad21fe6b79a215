// An exhaustive "send an event, state the whole expected result" helper, in the spirit of TCA's TestStore:
// every test states the exact commands and every field of the state that changes; any field it does not
// mention must stay as it was, or the test fails.
import EarshotCore
import Testing

/// Holds a state and checks each event's whole effect on it.
struct RuleStore {
    /// The state after the events sent so far.
    private(set) var state: PlayerState

    /// A store starting from `state`.
    init(_ state: PlayerState) {
        self.state = state
    }

    /// Sends `event`, expects exactly `commands`, and expects the state to equal the old state changed by
    /// `change` (and by nothing else).
    mutating func send(
        _ event: Event,
        commands: [Command],
        sourceLocation: SourceLocation = #_sourceLocation,
        _ change: (inout PlayerState) -> Void = { _ in }
    ) {
        var expected = state
        change(&expected)
        let produced = state.apply(event)
        #expect(produced == commands, "commands after \(event)", sourceLocation: sourceLocation)
        #expect(state == expected, "state after \(event)", sourceLocation: sourceLocation)
    }
}

/// Shared starting points.
enum Given {
    static let queueOfThree = QueueCursor(trackCount: 3, index: 0)

    /// A player playing the first of three tracks on an uncorked stream.
    static var playing: PlayerState {
        PlayerState(playback: .playing, queue: queueOfThree, stream: StreamCondition(isOpen: true, isCorked: false))
    }

    /// A player paused by the user on the first of three tracks.
    static var pausedByUser: PlayerState {
        PlayerState(playback: .paused(.user), queue: queueOfThree, stream: .openCorked)
    }

    /// A stopped player with three tracks queued.
    static var stopped: PlayerState {
        PlayerState(playback: .stopped, queue: queueOfThree, stream: .openCorked)
    }

    /// An idle player: nothing queued.
    static var idle: PlayerState { PlayerState() }

    static let call = InterruptionSource.triggerStream(index: 7)
    static let secondCall = InterruptionSource.triggerStream(index: 9)
    static let corkRequest = InterruptionSource.serverCorkRequest

    static func at(_ milliseconds: Int64) -> Moment { Moment(milliseconds: milliseconds) }
    static let thirtyMinutes: Int64 = 30 * 60 * 1000
}
