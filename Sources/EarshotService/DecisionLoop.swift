// The executor's core: every event goes through the rulebook, and the commands of each decision are performed in
// order. Outcomes that performing a command reports (a cork acknowledged, a stream that could not be opened) are
// events like any other, and wait their turn: a decision's commands all belong to the state that decision made, so
// an outcome that changes the state is decided only after them. Deciding it at once, in the middle, would go on to
// perform the rest of an earlier decision (an uncork) against a state that no longer wants it (paused, output lost).
import EarshotCore

/// Runs events through `PlayerState.apply` one decision at a time and hands each command to `perform`.
///
/// Owned by the player's actor and used only there (not `Sendable`).
final class DecisionLoop {
    /// The rulebook's state after the decisions made so far.
    private(set) var rules: PlayerState
    /// Carries out one command. May report what happened by calling `dispatch`.
    var perform: (Command) -> Void = { _ in }
    /// Told of each decision (a call's signal can make several: what it amounted to), with the event as reported,
    /// right after the rules made it.
    var decided: (Decision, Event) -> Void = { _, _ in }
    /// Events reported while commands were being performed, oldest first.
    private var reported: [Event] = []
    private var isPerforming = false

    /// A loop starting from `rules`.
    init(rules: PlayerState) {
        self.rules = rules
    }

    /// Applies `event` and performs the commands it produces. Called while commands are being performed (an
    /// outcome), it only queues the event: the loop decides it once the current decision's commands are done, and
    /// returns when every queued event is decided and performed.
    func dispatch(_ event: Event) {
        reported.append(event)
        guard !isPerforming else { return }
        isPerforming = true
        defer { isPerforming = false }
        var next = 0
        while next < reported.count {
            let event = reported[next]
            next += 1
            let decisions = rules.applyJudged(event)
            for decision in decisions { decided(decision, event) }
            for decision in decisions { for command in decision.commands { perform(command) } }
        }
        reported.removeAll(keepingCapacity: true)
    }
}
