// Rule 23 of shared/RULES.md: the desktop's idle suspend is held off while the player plays, and only then. A laptop
// on a desk must not fall asleep in the middle of an album because nobody touched the keyboard; a paused, stopped or
// interrupted player must not keep it awake. The rules follow the playback after every event: entering playing holds
// the inhibitor (`holdIdleInhibitor`), leaving it releases it (`releaseIdleInhibitor`), with configuration
// `inhibitIdleSuspend` off never either. Only the suspend for idleness is held: the screen may still blank and lock,
// and a sleep the user asks for (the lid, the menu) still happens, and rule 19 pauses for it.
//
// The adapter (EarshotIdleInhibitor) asks the session bus's desktop portal, GNOME's session manager or the freedesktop
// power management interface, on its own thread; whether it got one is its report, not the rules' state.

extension PlayerState {
    /// Whether the rules want the desktop's idle suspend held off now: playing, with `inhibitIdleSuspend` on.
    public var wantsIdleInhibitor: Bool {
        isPlaying && policy.inhibitIdleSuspend
    }

    /// `holdIdleInhibitor` or `releaseIdleInhibitor` when what the rules want changed with the last event; nil
    /// otherwise.
    mutating func idleInhibitorFollowingPlayback() -> Command? {
        let wanted = wantsIdleInhibitor
        guard wanted != idleInhibitorHeld else { return nil }
        idleInhibitorHeld = wanted
        return wanted ? .holdIdleInhibitor : .releaseIdleInhibitor
    }
}
