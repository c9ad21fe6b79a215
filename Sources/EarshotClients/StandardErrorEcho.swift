// The event log's echo on standard error, and the messages the player has for its user there, off the owner's thread.
//
// Standard error can stall: a pipe nobody reads (a parent that never drains it, a pager left on its first page), a
// terminal stopped with Ctrl-S, a busy journal. A write(2) to it then waits, and while the echo was written by whoever
// recorded the line, that was the owner, ahead of the cork an unplug needs: 64 KiB of unread log (a few hundred lines)
// and the owner stood still. Now a line is only appended to a bounded `FollowerQueue` under a short lock (no system
// call under it), and one thread, "earshot-stderr", started at the first line, writes what is queued and is the only
// one ever to wait for standard error. Lines that do not fit while it waits are dropped; where they are missing,
// standard error reads `... N lines dropped`. An idle echo thread sleeps on its condition: no timer, no wake-up.
//
// Its writes are ordinary blocking ones, not O_NONBLOCK: standard error's open file description is shared with
// whoever started the service (a shell's terminal), and making it non-blocking would change it for them as well.
import SystemSupport

/// Standard error's bounded queue and the thread that writes it.
final class StandardErrorEcho: @unchecked Sendable {
    // Unchecked Sendable: `queue`, `started` and `writing` are touched only with `condition` locked.

    /// How many lines may wait for standard error before lines are dropped: one queue, so more than a follower's,
    /// about 120 KB, a burst of several hundred decisions while the journal or the terminal catches up.
    static let defaultCapacity = 1024

    private let condition = Condition()
    private var queue: FollowerQueue
    private var started = false
    /// The thread is writing what it took.
    private var writing = false
    /// Writes bytes to standard error, waiting as long as it takes (tests hand in their own).
    private let write: @Sendable ([UInt8]) -> Void

    /// An echo holding at most `capacity` lines; `write` writes to standard error.
    init(
        capacity: Int = StandardErrorEcho.defaultCapacity,
        write: @escaping @Sendable ([UInt8]) -> Void = { bytes in
            StandardStream.writeError(String(decoding: bytes, as: UTF8.self))
        }
    ) {
        queue = FollowerQueue(capacity: capacity, droppedNoun: "lines")
        self.write = write
    }

    /// Queues `line` (with its newline) for standard error, or drops it when the queue is full; never waits.
    func append(_ line: [UInt8]) {
        condition.lock()
        _ = queue.append(line, now: .now)
        let start = !started
        started = true
        // Broadcast: `drain` may be waiting on the same condition, and a signal could wake it instead of the writer.
        condition.broadcast()
        condition.unlock()
        if start {
            SystemThread.start(named: "earshot-stderr") { [self] in
                SystemThread.makeBatch()
                run()
            }
        }
    }

    /// Waits until everything queued so far is written, for at most `timeout`; false when standard error did not
    /// take it in time. For the end of the service, on its main thread: never on the owner.
    @discardableResult
    func drain(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Condition.monotonicNanoseconds()
            + UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
        condition.lock()
        defer { condition.unlock() }
        while queue.hasWork || writing {
            guard Condition.monotonicNanoseconds() < deadline else { return false }
            condition.wait(untilMonotonicNanoseconds: deadline)
        }
        return true
    }

    /// The thread's loop: takes everything queued (a drop marker among it where lines are missing) and writes it.
    private func run() {
        while true {
            condition.lock()
            while !queue.hasWork { condition.wait() }
            let taken = queue.take()
            writing = true
            condition.unlock()
            // All that waits in one write: a burst costs one system call, not one a line.
            WaitGuard.check("a blocking write to standard error")
            write(Array(taken.lines.joined()))
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }
}
