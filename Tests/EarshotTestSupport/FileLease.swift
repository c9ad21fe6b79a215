// A real slow input for tests of what must not wait: a write lease on a file makes every other open(2) of it block in
// the kernel until the lease is released (or /proc/sys/fs/lease-break-time passes, 45 s by default), in this process
// or any other of the same user. The player meets the same on a network share that hangs, or a disk that spins up.
import Foundation

/// A write lease (fcntl F_SETLEASE, F_WRLCK) held on a file while the value lives or until `release()`.
public final class FileLease: @unchecked Sendable {
    // Unchecked Sendable: `descriptor` is guarded by `lock`.
    private let lock = NSLock()
    private var descriptor: Int32

    /// fcntl commands from <fcntl.h> that Glibc shows only with _GNU_SOURCE (Linux values).
    private static let setLease: Int32 = 1024
    private static let setSignal: Int32 = 10

    /// Takes a write lease on `path` (a regular file of this user that nothing else holds open).
    public init(path: String) throws {
        let opened = open(path, O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { throw LeaseError(step: "open", code: errno) }
        // The kernel tells the holder of a lease that someone waits with a signal, SIGIO unless set: SIGURG is ignored
        // by default, so the test process neither dies nor needs a handler, and the opener simply keeps waiting.
        guard fcntl(opened, Self.setSignal, SIGURG) == 0, fcntl(opened, Self.setLease, F_WRLCK) == 0 else {
            let code = errno
            close(opened)
            throw LeaseError(step: "F_SETLEASE", code: code)
        }
        descriptor = opened
    }

    /// Releases the lease: opens waiting for it go on at once. Safe to repeat.
    public func release() {
        lock.lock()
        defer { lock.unlock() }
        guard descriptor >= 0 else { return }
        _ = fcntl(descriptor, Self.setLease, F_UNLCK)
        close(descriptor)
        descriptor = -1
    }

    deinit {
        release()
    }

    /// Why a lease could not be taken.
    public struct LeaseError: Error, CustomStringConvertible {
        /// The step that failed.
        public let step: String
        /// Its errno.
        public let code: Int32

        public var description: String { "file lease: \(step): \(String(cString: strerror(code)))" }
    }
}
