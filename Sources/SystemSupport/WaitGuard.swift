// The owner never waits (issue 21), checked where it would: the owner's thread marks itself, and every place in the
// product that sleeps until another thread, the disk or the sound server acts asks `WaitGuard.check` first: a
// condition's wait (`Condition`), libpulse's `pa_threaded_mainloop_wait` and the mainloop's stop, an fsync, a reply
// waited for, a blocking write to a client, to a standard stream or to the disk, a call over sd-bus (rtkit, logind), a
// semaphore's wait, a thread joined. The marked thread reaching one is a bug: a debug build stops there, naming the
// wait (every end-to-end test runs the debug service, so the whole suite is the check), and any build counts it
// (`WaitGuard.violations`). WaitGuardTests scan Sources for every such call.
//
// The owner's own sleep between inputs (its semaphore, in OwnerThread) is not a wait for anyone: it is what the owner
// does when it has nothing to do, and it does not ask; nor does a byte written to a non-blocking wake-up pipe
// (`BusPoll.wake`). Each says so where it is ("Never waits:"), the scan's allow-list. Short mutexes (the mainloop
// lock while libpulse dispatches, the owner's queues) are not checked either: they are held for microseconds, never
// across a wait for the server.
import Glibc
import Synchronization

/// The thread that must never wait, and the check the waiting places make.
public enum WaitGuard {
    /// The marked thread (`pthread_t`), 0 when none.
    private static let marked = Atomic<UInt>(0)
    /// How many times the marked thread reached a wait.
    private static let count = Atomic<Int>(0)

    /// Marks the calling thread as one that must never wait (the owner, from its start).
    public static func forbidWaitingOnThisThread() {
        marked.store(UInt(pthread_self()), ordering: .releasing)
    }

    /// Lifts the mark: the owner's shutdown, once the stream is corked, stops the threads it started and waits for
    /// them (the decoder's join, MPRIS's bus thread, libpulse's thread).
    public static func allowWaiting() {
        marked.store(0, ordering: .releasing)
    }

    /// Called by each waiting place before it waits: on the marked thread, counts the violation and, in a debug
    /// build, stops the process with `what`.
    public static func check(_ what: StaticString) {
        let thread = marked.load(ordering: .acquiring)
        guard thread != 0, thread == UInt(pthread_self()) else { return }
        count.add(1, ordering: .relaxed)
        assertionFailure("the owner's thread would wait: \(what)")
    }

    /// Whether the calling thread is the marked one.
    public static var isForbiddenHere: Bool {
        let thread = marked.load(ordering: .acquiring)
        return thread != 0 && thread == UInt(pthread_self())
    }

    /// How many times the marked thread reached a wait since the process started.
    public static var violations: Int {
        count.load(ordering: .relaxed)
    }
}
