// RULES.md row 29: a foreground `earshot play` with no sound server at its first connection gives up; a service
// waits. The front-end is part of the rules' configuration (`ResumePolicy.frontEnd`), so the executor never asks
// itself which one it is.
import EarshotCore
import Testing

@Suite("RULES.md row 29: the first failed connection ends a foreground player, never a service")
struct FrontEndRulesTests {
    static var foreground: PlayerState {
        var state = Given.stopped
        state.policy.frontEnd = .foreground
        state.stream = StreamCondition(isOpen: false, isCorked: true)
        return state
    }

    @Test("Row 29: a foreground player's first connection fails -> it exits without a server; later ones do not")
    func row29ForegroundGivesUp() {
        var store = RuleStore(Self.foreground)
        store.send(.connectionFailed(firstAttempt: true), commands: [.exitWithoutServer])
        // A failure after the server was there once (it went away) is an output loss the player waits out.
        store.send(.connectionFailed(firstAttempt: false), commands: [])
    }

    @Test("Row 29: a service waits for a server, whatever attempt failed, and plays nothing when one comes")
    func row29ServiceWaits() {
        var state = Self.foreground
        state.policy.frontEnd = .service
        var store = RuleStore(state)
        store.send(.connectionFailed(firstAttempt: true), commands: [])
        store.send(.connectionFailed(firstAttempt: false), commands: [])
        store.send(.outputAppeared, commands: [])
    }
}
