// The player's timers, one per purpose. Timers are events: the tick's timer puts `.tick` into the player's inbox
// once, at the moment it was armed for, and the player arms it again only while it has work for it (while playing:
// the heard position, the track boundaries and drains it predicts, the stall watchdog, the save and the progress
// line). The reconnection's timer puts `.reconnectDue` there while the server is away, once per connection attempt.
// A paused, stopped or idle player that is connected arms nothing, so it wakes for nothing.
import Glibc

/// A one-shot timer owned by the player's actor (not `Sendable`): `arm` it for a delay, and it calls `fire` once
/// from a task of its own, with the arming's number, unless it is disarmed or re-armed first. A timer replaced just
/// as it went off may still deliver; `wentOff(arming:)` tells that stale delivery from the current one.
final class TickTimer {
    private let fire: @Sendable (Int) -> Void
    private var task: Task<Void, Never>?
    private var due: ContinuousClock.Instant?
    private var arming = 0

    /// A disarmed timer that calls `fire` (from any thread) with the arming's number when it goes off.
    init(fire: @escaping @Sendable (Int) -> Void) {
        self.fire = fire
    }

    /// Arms the timer to go off after `delay`, unless it is already armed to go off sooner.
    func arm(after delay: Duration) {
        let moment = ContinuousClock.now + delay
        if task != nil, let due, due <= moment { return }
        task?.cancel()
        due = moment
        arming += 1
        let fire = self.fire
        let number = arming
        task = Task.detached {
            try? await Task.sleep(until: moment, clock: .continuous)
            if !Task.isCancelled { fire(number) }
        }
    }

    /// Disarms the timer; an armed timer that already went off may still deliver its tick.
    func disarm() {
        task?.cancel()
        task = nil
        due = nil
    }

    /// Notes that arming number `arming` went off. Returns false, changing nothing, for a stale one (disarmed or
    /// replaced since); true when it was the current arming, which is then over.
    func wentOff(arming number: Int) -> Bool {
        guard task != nil, number == arming else { return false }
        task = nil
        due = nil
        return true
    }
}
