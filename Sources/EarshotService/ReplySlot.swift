// Small hand-overs between the player's actor and the threads that talk to clients (control socket, D-Bus).
import Foundation
import Synchronization

/// A one-shot reply box a client's thread (control socket or D-Bus) waits on while the player answers.
///
/// The first of the answer and the timeout wins: a late `fulfil` is told it came too late and leaves the slot alone,
/// so the waiter never reads the reply while it is being written.
final class ReplySlot<Reply: Sendable>: @unchecked Sendable {
    // Unchecked Sendable: `answer` is written only by the `fulfil` that moved `state` from open to writing, and read
    // only after an acquiring load saw `answered`, which that `fulfil` stores releasing once the write is done.

    private static var open: Int { 0 }
    private static var writing: Int { 1 }
    private static var answered: Int { 2 }
    private static var timedOut: Int { 3 }

    private let state = Atomic<Int>(0)
    private var answer: Reply?
    private let timeoutReply: Reply
    private let ready = DispatchSemaphore(value: 0)

    /// A slot that answers `timeoutReply` when nobody fulfils it in time.
    init(timeoutReply: Reply) {
        self.timeoutReply = timeoutReply
    }

    /// Hands `value` to the waiter. Returns false, and drops `value`, when the waiter already gave up.
    @discardableResult
    func fulfil(_ value: Reply) -> Bool {
        guard state.compareExchange(expected: Self.open, desired: Self.writing, ordering: .acquiring).exchanged
        else { return false }
        answer = value
        state.store(Self.answered, ordering: .releasing)
        ready.signal()
        return true
    }

    /// Waits up to `timeout` for `fulfil`; returns its value, or the timeout reply if the timeout came first.
    func wait(timeout: Duration) -> Reply {
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        if ready.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut {
            // Give up, unless an answer is already being written: then it is only moments away.
            if state.compareExchange(expected: Self.open, desired: Self.timedOut, ordering: .relaxed).exchanged {
                return timeoutReply
            }
            ready.wait()
        }
        // The semaphore alone does not order the write before this read for every tool (ThreadSanitizer does not
        // see libdispatch's fast path); the acquiring load does.
        guard state.load(ordering: .acquiring) == Self.answered, let answer else { return timeoutReply }
        return answer
    }
}

/// The position in microseconds, written by the player's tick and read by the D-Bus thread without hopping
/// to the actor.
final class PositionCell: Sendable {
    private let microseconds = Atomic<Int64>(0)

    func store(_ value: Int64) {
        microseconds.store(value, ordering: .relaxed)
    }

    func load() -> Int64 {
        microseconds.load(ordering: .relaxed)
    }
}

