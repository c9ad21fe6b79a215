// Rule 20's evidence: the streams with a duck role (a screen reader speaking, a notification sound) that play anywhere
// in the session. Kept by the ServerEventTranslator beside its trigger streams, from the same sink-input notices.

import EarshotCore

/// The duck-role streams of the session, and which of them duck Earshot now: those that play (not corked, not muted),
/// on any sink.
public struct DuckStreams: Sendable, Equatable {
    /// Stream roles that duck (default `a11y` and `event`).
    public var roles: Set<String>
    /// The streams that duck Earshot now, by sink-input index.
    public private(set) var active: Set<UInt32> = []

    /// No duck-role stream known yet.
    public init(roles: Set<String> = ["a11y", "event"]) {
        self.roles = roles
    }

    /// A sink-input appeared or changed: it ducks while it has a duck role and plays. Returns the event it causes.
    public mutating func described(_ input: SinkInputSnapshot) -> [Event] {
        let ducks = input.mediaRole.map(roles.contains) == true && !input.corked && !input.muted
        return ducks ? began(input.index) : ended(input.index)
    }

    /// A sink-input went away.
    public mutating func removed(_ index: UInt32) -> [Event] {
        ended(index)
    }

    /// The server is gone: every duck ends with it (a restarted server's streams are described afresh).
    public mutating func forget() -> [Event] {
        let ended = active.sorted().map { Event.duckEnded(stream: $0) }
        active = []
        return ended
    }

    private mutating func began(_ index: UInt32) -> [Event] {
        active.insert(index).inserted ? [.duckBegan(stream: index)] : []
    }

    private mutating func ended(_ index: UInt32) -> [Event] {
        active.remove(index) != nil ? [.duckEnded(stream: index)] : []
    }
}
