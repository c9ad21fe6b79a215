// The thread the player's actor runs on.
//
// The owner decides everything, including the cork that keeps an unplugged stream off the speakers: between the
// server's SINK REMOVE and our cork, every millisecond of the owner's reaction plays there. The libpulse thread that
// delivers the notice runs at real-time priority; Swift's shared cooperative threads run at normal priority, and on a
// loaded machine (the test machine has two cores and often a load above 4) the scheduler can keep a woken
// normal-priority thread waiting for milliseconds. So the actor gets a thread of its own, woken directly by whoever
// enqueues a job for it (a notice yielded into the inbox resumes the actor's loop here), and raised to a high nice
// value: ahead of normal work, but not real-time, since the owner also does ordinary work (queues of thousands of
// paths, JSON, files) that must never run into RLIMIT_RTTIME or starve the desktop.
import Dispatch
import Glibc
import SystemSupport

/// A serial executor running its jobs, in order, on one dedicated thread at nice `OwnerThread.niceValue`.
///
/// It is the player task's task executor as well (`Task(executorPreference:)`): the nonisolated async code that task
/// awaits, above all the inbox's `AsyncStream` iterator that a yield resumes, then runs here too instead of on Swift's
/// shared cooperative threads. Without that, every notice went from its producer to a cooperative thread and only then
/// to this one: two wake-ups, the first at normal priority, which on the loaded test machine took up to 3 ms each
/// (measured on the way to the first sound: a decoder's "track started" reached the owner 2.5 ms after it was sent).
///
/// It keeps the player's timers too (`TimerHost`): it sleeps until its next job or its earliest deadline, and an entry
/// that is due goes off on this thread between jobs (it only puts an input into the inbox, whose job then runs here
/// without another wake-up).
final class OwnerThread: SerialExecutor, TaskExecutor, TimerHost, @unchecked Sendable {
    // Unchecked Sendable: `queue` and `timers` are locked, `wake` a semaphore, `niceOutcome` is written once by the
    // thread before it runs any job and read only from jobs (on the same thread).

    /// The nice value asked for: well ahead of normal tasks (0), short of real-time scheduling.
    static let niceValue: Int32 = -15

    /// The scheduler slice asked for, in microseconds (Linux 6.12's EEVDF takes 100 to 100 000; its default is 0.7 ms
    /// times 1 + log2 of the CPUs, 1.4 ms on two). A thread that wakes with a shorter slice than the one running may
    /// take the CPU at once; with the default, the owner woke behind a running decoder or state writer of the same
    /// process (nice 0) and waited up to a tick, 4 ms, for its turn (`perf sched` under the handling stress).
    static let sliceMicroseconds: UInt64 = 100

    // LockedValue, not Synchronization's Mutex: ThreadSanitizer sees NSLock's hand-offs (see LockedValue).
    private let queue = LockedValue<[UnownedJob]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let timers = LockedValue(Deadlines())
    /// What setting the nice value did, for the log: "-15", or why not.
    private(set) var niceOutcome = "unset"
    /// What asking for the short slice did, for the log.
    private(set) var sliceOutcome = "unset"

    /// Starts the thread; it lives as long as the process (the player is made once).
    init(name: String) {
        SystemThread.start(named: name) { [self] in run() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.append(job) }
        wake.signal()
    }

    private func run() {
        // On Linux the nice value belongs to the thread: `who` 0 is the calling thread only.
        errno = 0
        niceOutcome = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.niceValue) == 0
            ? "\(Self.niceValue)" : "refused (errno \(errno))"
        sliceOutcome = SystemThread.requestShortSlice(microseconds: Self.sliceMicroseconds)
        // From here on, every place in the product that waits for another thread, the disk or the server stops a
        // debug build if this thread reaches it (WaitGuard); only the shutdown, once corked, lifts the mark.
        WaitGuard.forbidWaitingOnThisThread()
        let executor = asUnownedSerialExecutor()
        let taskExecutor = asUnownedTaskExecutor()
        while true {
            // Never waits: this is the owner's own sleep between inputs, not a wait for anyone (see WaitGuard); an
            // input or the next timer ends it.
            if let earliest = timers.withLock({ $0.earliest }) {
                _ = wake.wait(timeout: earliest)
            } else {
                wake.wait()
            }
            let due = timers.withLock { $0.takeDue(at: .now()) }
            for fire in due { fire() }
            let jobs = queue.withLock { queued in
                defer { queued.removeAll(keepingCapacity: true) }
                return queued
            }
            // Every job runs isolated to this serial executor and on it as the task executor: both are this one
            // thread, so jobs never overlap, whichever of the two roles enqueued them.
            for job in jobs { job.runSynchronously(isolatedTo: executor, taskExecutor: taskExecutor) }
        }
    }

    func schedule(after delay: Duration, fire: @escaping @Sendable () -> Void) -> Int {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        let entry = timers.withLock { $0.add(DispatchTime.now() + .nanoseconds(Int(nanoseconds)), fire) }
        // The thread recomputes its sleep: at once when it is running (the semaphore's count makes its next wait
        // return without sleeping), or it is woken to.
        wake.signal()
        return entry
    }

    func cancel(_ entry: Int) {
        // Not signalled: the thread wakes at most once more, at the withdrawn deadline, and finds nothing due.
        timers.withLock { $0.remove(entry) }
    }
}

/// The owner thread's timer entries: deadlines on DispatchTime's clock (CLOCK_MONOTONIC), with what each fires.
private struct Deadlines {
    private var entries: [Int: (deadline: DispatchTime, fire: @Sendable () -> Void)] = [:]
    private var lastEntry = 0

    /// The earliest deadline, if any.
    var earliest: DispatchTime? { entries.values.map(\.deadline).min() }

    mutating func add(_ deadline: DispatchTime, _ fire: @escaping @Sendable () -> Void) -> Int {
        lastEntry += 1
        entries[lastEntry] = (deadline, fire)
        return lastEntry
    }

    mutating func remove(_ entry: Int) {
        entries[entry] = nil
    }

    /// Removes and returns what is due at `now`, earliest first.
    mutating func takeDue(at now: DispatchTime) -> [@Sendable () -> Void] {
        let due = entries.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
        for (entry, _) in due { entries[entry] = nil }
        return due.map(\.value.fire)
    }
}
