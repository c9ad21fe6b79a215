// A value shared between threads behind a pthread mutex (SystemSupport's Lock), with the shape of Synchronization's
// `Mutex`.
// Why not `Mutex`: on Linux it hands off through futexes that ThreadSanitizer does not see, so TSan reports races that
// are not there (scripts/ci-checks tsan-e2e found one on the control socket's client set), and the service must stay
// TSan-clean for real reports to stand out. DecodeWorker and the MPRIS server use Lock for the same reason, and the
// tests' own recorders use this.

/// A value that threads read and change only inside `withLock`, one at a time.
public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // Unchecked Sendable: `value` is touched only inside `withLock`, under `lock`.
    private let lock = Lock()
    private var value: Value

    /// Guards `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` on the value with the lock held, and returns what it returns.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
