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
final class OwnerThread: SerialExecutor, TaskExecutor, @unchecked Sendable {
    // Unchecked Sendable: `queue` is locked, `wake` a semaphore, `niceOutcome` is written once by the thread before
    // it runs any job and read only from jobs (on the same thread).

    /// The nice value asked for: well ahead of normal tasks (0), short of real-time scheduling.
    static let niceValue: Int32 = -15

    // LockedValue, not Synchronization's Mutex: ThreadSanitizer sees NSLock's hand-offs (see LockedValue).
    private let queue = LockedValue<[UnownedJob]>([])
    private let wake = DispatchSemaphore(value: 0)
    /// What setting the nice value did, for the log: "-15", or why not.
    private(set) var niceOutcome = "unset"

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
        let executor = asUnownedSerialExecutor()
        let taskExecutor = asUnownedTaskExecutor()
        while true {
            wake.wait()
            let jobs = queue.withLock { queued in
                defer { queued.removeAll(keepingCapacity: true) }
                return queued
            }
            // Every job runs isolated to this serial executor and on it as the task executor: both are this one
            // thread, so jobs never overlap, whichever of the two roles enqueued them.
            for job in jobs { job.runSynchronously(isolatedTo: executor, taskExecutor: taskExecutor) }
        }
    }
}
