// The player's timers, one per purpose. Timers are events: the tick's timer puts `.tick` into the player's inbox
// once, at the moment it was armed for, and the player arms it again only while it has work for it (while playing:
// the heard position, the track boundaries and drains it predicts, the stall watchdog, the save and the progress
// line). The rules' timer puts `.rulesTimerDue` there while something waits out a bound (a call's probe, a
// reconnection's backoff). A paused, stopped or idle player that is connected arms nothing, so it wakes for nothing.
//
// Threading: the deadlines are kept by the owner's thread itself (`OwnerThread` is a `TimerHost`), which sleeps until
// its next job or its earliest deadline: a tick costs that one thread one wake-up, where a timer thread of its own
// cost two more (going off, and being re-armed). Not a Swift task with `Task.sleep` either: on Linux that sleep is a
// dispatch timer on a global queue, and the first use of a global queue starts libdispatch's worker pool and its
// monitor, which wakes the process once a second for good, paused or not.
import Glibc
import SystemSupport

/// Keeps one-shot deadlines and calls each entry's `fire` on its own thread once the deadline has passed.
protocol TimerHost: AnyObject, Sendable {
    /// Calls `fire` once `delay` has passed, unless cancelled first; returns the entry to cancel.
    func schedule(after delay: Duration, fire: @escaping @Sendable () -> Void) -> Int
    /// Withdraws an entry; one that is going off at this moment may still deliver.
    func cancel(_ entry: Int)
}

/// A one-shot timer owned by the player's actor (not `Sendable`): `arm` it for a delay, and it calls `fire` once
/// from the host's thread, with the arming's number, unless it is disarmed or re-armed first. A timer replaced just
/// as it went off may still deliver; `wentOff(arming:)` tells that stale delivery from the current one.
final class TickTimer {
    private let host: any TimerHost
    private let fire: @Sendable (Int) -> Void
    /// The timer thread's entry for the current arming, while it is armed.
    private var entry: Int?
    /// When the current arming goes off, on the host's clock (CLOCK_MONOTONIC, as DispatchTime: SuspendingClock on
    /// Linux; ContinuousClock is CLOCK_BOOTTIME, and after a suspend an old deadline on it would look passed).
    private var due: SuspendingClock.Instant?
    private var arming = 0

    /// A disarmed timer, kept by `host`, that calls `fire` (on the host's thread) with the arming's number when it
    /// goes off.
    init(on host: any TimerHost, fire: @escaping @Sendable (Int) -> Void) {
        self.host = host
        self.fire = fire
    }

    /// Arms the timer to go off after `delay`, unless it is already armed to go off sooner.
    func arm(after delay: Duration) {
        let moment = SuspendingClock.now + delay
        if entry != nil, let due, due <= moment { return }
        if let entry { host.cancel(entry) }
        due = moment
        arming += 1
        let fire = self.fire
        let number = arming
        entry = host.schedule(after: delay) { fire(number) }
    }

    /// Disarms the timer; an armed timer that already went off may still deliver its tick.
    func disarm() {
        if let entry { host.cancel(entry) }
        entry = nil
        due = nil
    }

    /// Notes that arming number `arming` went off. Returns false, changing nothing, for a stale one (disarmed or
    /// replaced since); true when it was the current arming, which is then over.
    func wentOff(arming number: Int) -> Bool {
        guard entry != nil, number == arming else { return false }
        entry = nil
        due = nil
        return true
    }
}
