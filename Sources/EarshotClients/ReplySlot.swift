// The reply box a client's thread (control socket or D-Bus) waits on while the owner answers: the owner only fills it
// (`ReplyReceiver`, which it defines), the client's thread waits.
import Dispatch
import EarshotService
import SystemSupport
import Synchronization

/// A one-shot reply box a client's thread (control socket or D-Bus) waits on while the player answers.
///
/// The first of the answer and the timeout wins: a late `fulfil` is told it came too late and leaves the slot alone,
/// so the waiter never reads the reply while it is being written.
public final class ReplySlot<Reply: Sendable>: ReplyReceiver, @unchecked Sendable {
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
    public init(timeoutReply: Reply) {
        self.timeoutReply = timeoutReply
    }

    /// Hands `value` to the waiter. Returns false, and drops `value`, when the waiter already gave up.
    @discardableResult
    public func fulfil(_ value: Reply) -> Bool {
        guard state.compareExchange(expected: Self.open, desired: Self.writing, ordering: .acquiring).exchanged
        else { return false }
        answer = value
        state.store(Self.answered, ordering: .releasing)
        ready.signal()
        return true
    }

    /// Waits up to `timeout` for `fulfil`; returns its value, or the timeout reply if the timeout came first.
    public func wait(timeout: Duration) -> Reply {
        WaitGuard.check("ReplySlot.wait")
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        if ready.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut {
            // Give up, unless an answer is already being written: then it is only moments away.
            if state.compareExchange(expected: Self.open, desired: Self.timedOut, ordering: .relaxed).exchanged {
                return timeoutReply
            }
            WaitGuard.check("ReplySlot.wait")
            ready.wait()
        }
        // The semaphore alone does not order the write before this read for every tool (ThreadSanitizer does not
        // see libdispatch's fast path); the acquiring load does.
        guard state.load(ordering: .acquiring) == Self.answered, let answer else { return timeoutReply }
        return answer
    }
}
