import CPulse
import SystemSupport

// How a public method waits for the server (see "A note on threading" in PulseConnection.swift): it holds the
// mainloop lock, starts an operation whose callback fills a `Reply` and signals, and sleeps in
// `pa_threaded_mainloop_wait`, which releases the lock while asleep. Three things wake it: the reply's callback,
// the operation's state callback (libpulse cancels operations when the context or stream dies, and then never
// calls the reply callback), and a one-shot `Alarm` on the mainloop that bounds the wait. After waking, a
// still-running operation is cancelled with the lock held, so its callback can never run later against a `Reply`
// that is gone.

/// The outcome of one request a caller waits for. Guarded by the mainloop lock: the callback that fills it runs on
/// the mainloop thread with the lock held, and the waiter reads it with the lock held.
final class Reply<Value>: @unchecked Sendable {
    /// The mainloop to signal when the reply is complete.
    let mainloop: OpaquePointer
    /// The value collected so far (a list grows one callback at a time).
    var value: Value
    /// Whether the final callback has arrived.
    private(set) var isFinished = false
    /// Whether the server reported success.
    private(set) var succeeded = false

    /// A reply not yet finished, starting from `value`.
    init(mainloop: OpaquePointer, value: Value) {
        self.mainloop = mainloop
        self.value = value
    }

    /// Records the outcome and wakes the waiter. Called from a callback, with the lock held.
    func finish(succeeded: Bool) {
        isFinished = true
        self.succeeded = succeeded
        pa_threaded_mainloop_signal(mainloop, 0)
    }

    /// The opaque pointer handed to libpulse as callback userdata; valid while the waiter holds `self`.
    var userdata: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    /// Recovers the reply from callback userdata without retaining it.
    static func from(_ userdata: UnsafeMutableRawPointer?) -> Reply<Value>? {
        guard let userdata else { return nil }
        return Unmanaged<Reply<Value>>.fromOpaque(userdata).takeUnretainedValue()
    }
}

/// A one-shot timer on the mainloop that wakes waiters, so that no wait outlives its timeout. Guarded by the
/// mainloop lock.
final class Alarm: @unchecked Sendable {
    /// The mainloop to signal when the alarm goes off.
    let mainloop: OpaquePointer
    /// Whether the timeout has passed.
    var hasFired = false

    /// An alarm that has not gone off.
    init(mainloop: OpaquePointer) {
        self.mainloop = mainloop
    }
}

extension PulseConnection {
    /// Runs `body` with the mainloop lock held, for a method that will wait for the server. Refuses to run on the
    /// mainloop thread (from inside a notice handler), where waiting for the loop would wait forever.
    func lockedForWaiting<T>(_ step: String, _ body: () throws(PulseError) -> T) throws(PulseError) -> T {
        guard pa_threaded_mainloop_in_thread(mainloop) == 0 else {
            throw PulseError(code: .badState, step: "\(step) (called on the libpulse thread)")
        }
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    /// Runs `body` with the mainloop lock held, for a short non-waiting access (a read, or a command that is sent
    /// and not waited for). On the mainloop thread the lock is already held, so it is not taken again.
    func withLock<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        if pa_threaded_mainloop_in_thread(mainloop) != 0 {
            return try body()
        }
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    /// Sleeps (lock held, released while asleep) until `isDone` holds or `timeout` passes; returns `isDone()`.
    /// Every callback that can change what `isDone` reads must signal the mainloop.
    func waitLocked(timeout: Duration, until isDone: () -> Bool) -> Bool {
        if isDone() { return true }
        let alarm = Alarm(mainloop: mainloop)
        let deadline = pa_rtclock_now() + microseconds(timeout)
        let event = context.flatMap { context in
            pa_context_rttime_new(context, deadline, { _, _, _, userdata in
                guard let userdata else { return }
                let alarm = Unmanaged<Alarm>.fromOpaque(userdata).takeUnretainedValue()
                alarm.hasFired = true
                pa_threaded_mainloop_signal(alarm.mainloop, 0)
            }, Unmanaged.passUnretained(alarm).toOpaque())
        }
        WaitGuard.check("pa_threaded_mainloop_wait")
        while !isDone() && !alarm.hasFired {
            pa_threaded_mainloop_wait(mainloop)
        }
        if let event, let api = pa_threaded_mainloop_get_api(mainloop) {
            // Freed with the lock held, so the alarm callback cannot run after `alarm` is released.
            api.pointee.time_free(event)
        }
        return withExtendedLifetime(alarm) { isDone() }
    }

    /// Starts an operation (lock held) and waits for its reply; the operation is cancelled if it does not finish.
    ///
    /// `start` receives the reply's userdata and returns the operation (nil when libpulse refused to start it).
    /// The reply's callback must call `finish(succeeded:)`.
    @discardableResult
    func performLocked<Value>(
        _ step: String,
        initial: Value,
        timeout: Duration? = nil,
        start: (Reply<Value>) throws(PulseError) -> OpaquePointer?
    ) throws(PulseError) -> Value {
        guard let context, pa_context_get_state(context) == PA_CONTEXT_READY else {
            throw PulseError(code: .badState, step: step)
        }
        let reply = Reply(mainloop: mainloop, value: initial)
        guard let operation = try start(reply) else {
            throw PulseError.lastError(of: context, step: step)
        }
        pa_operation_set_state_callback(operation, { _, userdata in
            guard let userdata else { return }
            pa_threaded_mainloop_signal(OpaquePointer(userdata), 0)
        }, UnsafeMutableRawPointer(mainloop))
        _ = waitLocked(timeout: timeout ?? operationTimeout) {
            reply.isFinished || pa_operation_get_state(operation) != PA_OPERATION_RUNNING
        }
        let timedOut = pa_operation_get_state(operation) == PA_OPERATION_RUNNING
        if timedOut {
            pa_operation_cancel(operation)
        }
        pa_operation_set_state_callback(operation, nil, nil)
        pa_operation_unref(operation)
        return try withExtendedLifetime(reply) { () throws(PulseError) -> Value in
            if reply.isFinished && reply.succeeded {
                return reply.value
            }
            if !reply.isFinished && timedOut {
                throw PulseError(code: .timeout, step: step)
            }
            throw PulseError.lastError(of: self.context, step: step)
        }
    }

    /// `performLocked` with the lock taken for the duration.
    @discardableResult
    func perform<Value>(
        _ step: String,
        initial: Value,
        timeout: Duration? = nil,
        start: (Reply<Value>) throws(PulseError) -> OpaquePointer?
    ) throws(PulseError) -> Value {
        try lockedForWaiting(step) { () throws(PulseError) -> Value in
            try performLocked(step, initial: initial, timeout: timeout, start: start)
        }
    }
}

/// Drops our reference to an operation we do not wait for; libpulse keeps it alive until it completes.
func release(_ operation: OpaquePointer?) {
    if let operation {
        pa_operation_unref(operation)
    }
}

/// A duration in microseconds (libpulse's pa_usec_t), never negative.
func microseconds(_ duration: Duration) -> UInt64 {
    let (seconds, attoseconds) = duration.components
    let total = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    return total < 0 ? 0 : UInt64(total)
}
