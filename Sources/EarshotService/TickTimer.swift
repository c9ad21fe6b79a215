// The player's timers, one per purpose. Timers are events: the tick's timer puts `.tick` into the player's inbox
// once, at the moment it was armed for, and the player arms it again only while it has work for it (while playing:
// the heard position, the track boundaries and drains it predicts, the stall watchdog, the save and the progress
// line). The reconnection's timer puts `.reconnectDue` there while the server is away, once per connection attempt.
// A paused, stopped or idle player that is connected arms nothing, so it wakes for nothing.
//
// Threading: every timer of the process is kept by one thread of its own (`TimerThread`, "earshot-timer"), which
// sleeps on a condition variable until the earliest deadline, or without a deadline while nothing is armed. Not a
// Swift task with `Task.sleep`: on Linux that sleep is a dispatch timer on a global queue, and the first use of a global
// queue starts libdispatch's worker pool and its monitor, which wakes the process once a second for good, paused or
// not. Arming and disarming take the thread's mutex for a few instructions; nothing waits on the thread.
import Glibc
import SystemSupport

/// A one-shot timer owned by the player's actor (not `Sendable`): `arm` it for a delay, and it calls `fire` once
/// from the timer thread, with the arming's number, unless it is disarmed or re-armed first. A timer replaced just
/// as it went off may still deliver; `wentOff(arming:)` tells that stale delivery from the current one.
final class TickTimer {
    private let fire: @Sendable (Int) -> Void
    /// The timer thread's entry for the current arming, while it is armed.
    private var entry: Int?
    private var due: ContinuousClock.Instant?
    private var arming = 0

    /// A disarmed timer that calls `fire` (from the timer thread) with the arming's number when it goes off.
    init(fire: @escaping @Sendable (Int) -> Void) {
        self.fire = fire
    }

    /// Arms the timer to go off after `delay`, unless it is already armed to go off sooner.
    func arm(after delay: Duration) {
        let moment = ContinuousClock.now + delay
        if entry != nil, let due, due <= moment { return }
        if let entry { TimerThread.shared.cancel(entry) }
        due = moment
        arming += 1
        let fire = self.fire
        let number = arming
        entry = TimerThread.shared.schedule(after: delay) { fire(number) }
    }

    /// Disarms the timer; an armed timer that already went off may still deliver its tick.
    func disarm() {
        if let entry { TimerThread.shared.cancel(entry) }
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

/// The one thread that keeps every `TickTimer`'s deadline (see the file's notes). Started at the first arming.
final class TimerThread: @unchecked Sendable {
    // Unchecked Sendable: `pending`, `nextEntry` and `started` are read and written only with `condition`'s mutex held.
    /// The process's timer thread.
    static let shared = TimerThread()

    private struct Pending {
        /// CLOCK_MONOTONIC nanoseconds at which it goes off.
        var deadline: UInt64
        var fire: @Sendable () -> Void
    }

    private let condition = Condition()
    private var pending: [Int: Pending] = [:]
    private var nextEntry = 0
    private var started = false

    /// Calls `fire` on the timer thread once `delay` has passed, unless cancelled first; returns the entry to cancel.
    func schedule(after delay: Duration, fire: @escaping @Sendable () -> Void) -> Int {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        let deadline = Condition.monotonicNanoseconds() + UInt64(nanoseconds)
        condition.lock()
        defer { condition.unlock() }
        nextEntry += 1
        pending[nextEntry] = Pending(deadline: deadline, fire: fire)
        if !started {
            started = true
            SystemThread.start(named: "earshot-timer") { [self] in run() }
        }
        condition.signal()
        return nextEntry
    }

    /// Withdraws an entry; one that is firing at this moment may still deliver.
    func cancel(_ entry: Int) {
        condition.lock()
        pending[entry] = nil
        condition.unlock()
        // Not signalled: the thread wakes at most once more, at the withdrawn deadline, and finds nothing due.
    }

    private func run() {
        condition.lock()
        while true {
            guard let (entry, earliest) = pending.min(by: { $0.value.deadline < $1.value.deadline }) else {
                condition.wait()
                continue
            }
            if Condition.monotonicNanoseconds() < earliest.deadline {
                condition.wait(untilMonotonicNanoseconds: earliest.deadline)
                continue
            }
            pending[entry] = nil
            // Fired without the mutex: `fire` only puts an input into the player's inbox, and may arm again.
            condition.unlock()
            earliest.fire()
            condition.lock()
        }
    }
}
