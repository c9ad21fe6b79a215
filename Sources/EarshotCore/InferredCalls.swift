// Rule 18 of shared/RULES.md: calls Earshot inferred from a microphone capture (a browser meeting, Discord, Zoom) can
// be overruled by the user, since a capture is not always a call (a dictation tool, a recorder). Announced calls (a
// phone role, a cork request, a Bluetooth profile switch) cannot: a play during them waits (rule 9).

/// How Earshot recognises a call that no stream role announces (configuration `callDetection`; the adapter applies it
/// when it judges capture streams, PulseOutput's CaptureCalls.swift).
public enum CallDetection: String, Sendable, CaseIterable {
    /// Any other application's running capture from a microphone (the default): what browser meetings, Discord,
    /// Zoom, Slack and Teams make, none of which sets `media.role=phone`.
    case microphone
    /// Only captures of applications known to make calls (`CallDetectionSettings.knownCallingApplications`).
    case knownApps
    /// No inferred calls: only trigger roles, cork requests and profile switches interrupt.
    case roles
}

extension PlayerState {
    /// Rule 18: a user play while every active source is an inferred call plays at once, and those sources are kept
    /// as overruled: they no longer interrupt until they end (`apply` ignores their begin and forgets them at their
    /// end), while any other source beginning afterwards pauses as rule 1 says. Returns nil, changing nothing, when
    /// there is no active source or an announced one is among them.
    mutating func overruleInferredCalls() -> [Command]? {
        guard !interruptions.isEmpty, interruptions.allSatisfy(\.isInferred) else { return nil }
        overruledInterruptions.formUnion(interruptions)
        interruptions = []
        // The user's play replaces whatever the interruption remembered.
        resumeIntent = .none
        return startPlaying()
    }
}
