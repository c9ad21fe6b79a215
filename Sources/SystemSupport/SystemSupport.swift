// The few things full Foundation gave the product that FoundationEssentials does not: a lock, a condition, named
// threads, unbuffered writes to the standard streams, printf formatting and path splitting. Each is a thin layer over
// Glibc, so the product links neither Foundation nor ICU (whose data alone is most of a static binary's size and
// much of the service's memory).
import CThreadShim
import Glibc

/// A pthread mutex (what NSLock was). Not Synchronization's Mutex: ThreadSanitizer on Linux sees pthread mutexes
/// and reports races through Mutex that are not there.
public final class Lock: @unchecked Sendable {
    // Allocated once and never moved: a pthread mutex must stay at one address while it is in use. `Condition` waits
    // on it too.
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// An unlocked mutex.
    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Takes the mutex, waiting for it.
    public func lock() {
        pthread_mutex_lock(mutex)
    }

    /// Releases the mutex.
    public func unlock() {
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` holding the mutex.
    public func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A pthread mutex with its condition variable (what NSCondition was): `wait` releases the mutex while it sleeps.
public final class Condition: @unchecked Sendable {
    // The mutex is a `Lock`'s; the condition is allocated once and never moved, as pthreads requires while in use.
    private let mutex = Lock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    /// An unlocked mutex and its condition. Timed waits measure CLOCK_MONOTONIC (never stepped by the wall clock).
    public init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Takes the mutex, waiting for it.
    public func lock() {
        mutex.lock()
    }

    /// Releases the mutex.
    public func unlock() {
        mutex.unlock()
    }

    /// Sleeps until signalled (or woken spuriously: callers loop on their predicate). Mutex held.
    public func wait() {
        WaitGuard.check("Condition.wait")
        pthread_cond_wait(condition, mutex.mutex)
    }

    /// Sleeps until signalled, woken spuriously, or CLOCK_MONOTONIC reaches `deadline` (nanoseconds); callers loop on
    /// their predicate and look at the clock. Mutex held.
    public func wait(untilMonotonicNanoseconds deadline: UInt64) {
        WaitGuard.check("Condition.wait(until:)")
        var moment = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex.mutex, &moment)
    }

    /// CLOCK_MONOTONIC now, in nanoseconds: the clock `wait(untilMonotonicNanoseconds:)` measures.
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Wakes one waiter.
    public func signal() {
        pthread_cond_signal(condition)
    }

    /// Wakes every waiter.
    public func broadcast() {
        pthread_cond_broadcast(condition)
    }
}

/// The process's allocator.
public enum SystemMemory {
    /// Limits glibc's malloc to `count` arenas; call it before any thread starts. Each allocating thread otherwise
    /// gets an arena of its own, whose freed pages stay resident.
    public static func limitMallocArenas(to count: Int32) {
        _ = earshot_limit_malloc_arenas(count)
    }
}

/// Threads of the product (what Foundation's Thread was): detached pthreads with a name `top` and `gdb` show.
public enum SystemThread {
    // What the new thread runs, handed over through pthread_create's one pointer.
    private final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts `body` on a new detached thread named `name` (at most 15 bytes, the kernel's limit) and returns the
    /// thread's id. The thread holds `body` only until it returns.
    @discardableResult
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let created = pthread_create(&thread, &attributes, runStart, start)
        pthread_attr_destroy(&attributes)
        precondition(created == 0, "cannot start a thread: \(String(cString: strerror(created)))")
        return thread
    }

    private static let runStart: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        guard let argument else { return nil }
        let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
        nameCurrent(start.name)
        start.body()
        return nil
    }

    /// Names the calling thread (at most 15 bytes are kept).
    public static func nameCurrent(_ name: String) {
        _ = earshot_name_current_thread(name)
    }

    /// Asks for a short scheduler slice for the calling thread, whose nice value stays (see
    /// `earshot_request_fair_slice`): "in effect", "kept by the kernel" (one older than 6.12 has no such request) or
    /// why it failed.
    public static func requestShortSlice(microseconds: UInt64) -> String {
        errno = 0
        switch earshot_request_fair_slice(microseconds * 1000) {
        case 0: return "\(microseconds) us"
        case 1: return "kept by the kernel"
        default: return "refused (errno \(errno))"
        }
    }

    /// Puts the calling thread, a normal one, under SCHED_BATCH, its nice value kept: it gets its share of the CPU as
    /// before, but its waking never preempts the thread that runs. For the threads that work for the owner from
    /// behind a buffer (the decoder's ring, the store's, a writer's queue): without it, the decoder waking to refill
    /// took the CPU from the owner in the middle of an input, and the owner waited up to a tick (4 ms) for it back
    /// (`perf sched` under the handling stress). Returns whether the policy is in effect.
    @discardableResult
    public static func makeBatch() -> Bool {
        var parameters = sched_param()
        // Linux: pid 0 is the calling thread only.
        return sched_setscheduler(0, earshot_sched_batch, &parameters) == 0
    }

    /// Puts the calling thread under SCHED_IDLE: it runs only when no ordinary thread wants the CPU, and block-layer
    /// schedulers that use I/O classes give it their idle class too. Nice 19 when that is refused (a sandbox may
    /// forbid policy changes); failing both, it runs as it is.
    public static func makeIdle() {
        var parameters = sched_param()
        if sched_setscheduler(0, earshot_sched_idle, &parameters) == 0 { return }
        // `who` 0: the calling thread only.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
    }

    /// Whether the calling thread is `thread`.
    public static func isCurrent(_ thread: pthread_t) -> Bool {
        pthread_equal(pthread_self(), thread) != 0
    }
}

/// The standard streams, written at once with no buffer (what FileHandle.standardError.write was). Each write waits
/// for as long as the stream does (a stopped terminal, a pipe nobody reads): never on the owner, whose lines for the
/// user go through EarshotClients' `StandardStreamWriter`.
public enum StandardStream {
    /// Writes `text` to standard error.
    public static func writeError(_ text: String) {
        writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard output, bypassing `print`'s buffer.
    public static func writeOutput(_ text: String) {
        writeAll(Array(text.utf8), to: STDOUT_FILENO)
    }

    /// Writes all of `bytes` to `descriptor` (a standard stream), waiting as long as it takes; stops at an error.
    public static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            WaitGuard.check("a blocking write to a standard stream")
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}

/// Splits a slash-separated path (what NSString's path methods were), byte for byte and without touching the disk.
public enum PathText {
    /// Everything before the last `/` (`"/"` for a file in the root, `"."` for a bare name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Everything after the last `/`.
    public static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// Text from a C printf format (what Foundation's String(format:) was), for numbers in fixed notation.
public func formatted(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { list in
        // Sized by a first pass that writes nothing, so no number is cut short.
        var copy = [CChar](repeating: 0, count: 1)
        let needed = withVaList(arguments) { vsnprintf(&copy, 1, format, $0) }
        guard needed > 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(needed) + 1)
        _ = vsnprintf(&buffer, buffer.count, format, list)
        return String(decoding: buffer.prefix(Int(needed)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
