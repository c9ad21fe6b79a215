// The standard streams the service writes for its user, off the owner's thread: on standard error the event log's
// echo and the player's messages; on standard output the foreground player's progress line (`earshot play` on a
// terminal).
//
// Either stream can stall: a pipe nobody reads (a parent that never drains it, a pager left on its first page), a
// terminal stopped with Ctrl-S, a busy journal. A write(2) to it then waits, and while the echo was written by whoever
// recorded the line, that was the owner, ahead of the cork an unplug needs: 64 KiB of unread log (a few hundred lines)
// and the owner stood still; the progress line, written by the owner four times a second, held it the same way on a
// stopped terminal (issue 35). Now a line is only appended to a bounded `FollowerQueue` under a short lock (no system
// call under it), and one thread per stream, "earshot-stderr" or "earshot-stdout", started at the stream's first
// line, writes what is queued and is the only one ever to wait for that stream. Lines that do not fit while it waits
// are dropped; where they are missing, the stream reads `... N lines dropped`. An idle writer thread sleeps on its
// condition: no timer, no wake-up.
//
// Its writes are ordinary blocking ones, not O_NONBLOCK: a standard stream's open file description is shared with
// whoever started the service (a shell's terminal), and making it non-blocking would change it for them as well.
import Glibc
import SystemSupport

/// A standard stream's bounded queue and the thread that writes it.
final class StandardStreamWriter: @unchecked Sendable {
    // Unchecked Sendable: `queue`, `started` and `writing` are touched only with `condition` locked.

    /// How many lines may wait for the stream before lines are dropped: one queue, so more than a follower's,
    /// about 120 KB of log, a burst of several hundred decisions while the journal or the terminal catches up (or
    /// four minutes of progress lines on a stopped terminal).
    static let defaultCapacity = 1024

    private let condition = Condition()
    private var queue: FollowerQueue
    private var started = false
    /// The thread is writing what it took.
    private var writing = false
    /// The writer thread's name.
    private let threadName: String
    /// Writes bytes to the stream, waiting as long as it takes (tests hand in their own).
    private let write: @Sendable ([UInt8]) -> Void

    /// A writer holding at most `capacity` lines for `descriptor`, whose thread is named `threadName`; `write`
    /// writes to the descriptor, waiting as long as it takes.
    init(
        descriptor: Int32, threadName: String, capacity: Int = StandardStreamWriter.defaultCapacity,
        write: (@Sendable ([UInt8]) -> Void)? = nil
    ) {
        queue = FollowerQueue(capacity: capacity, droppedNoun: "lines")
        self.threadName = threadName
        self.write = write ?? { bytes in StandardStream.writeAll(bytes, to: descriptor) }
    }

    /// Standard error's writer (the log's echo and the player's messages); tests hand in their own `write`.
    static func standardError(
        capacity: Int = defaultCapacity, write: (@Sendable ([UInt8]) -> Void)? = nil
    ) -> StandardStreamWriter {
        StandardStreamWriter(descriptor: STDERR_FILENO, threadName: "earshot-stderr", capacity: capacity, write: write)
    }

    /// Standard output's writer (the progress line).
    static func standardOutput(capacity: Int = defaultCapacity) -> StandardStreamWriter {
        StandardStreamWriter(descriptor: STDOUT_FILENO, threadName: "earshot-stdout", capacity: capacity)
    }

    /// Queues `line` (with its newline, or a progress line drawn over the last) for the stream, or drops it when the
    /// queue is full; never waits.
    func append(_ line: [UInt8]) {
        condition.lock()
        _ = queue.append(line, now: .now)
        let start = !started
        started = true
        // Broadcast: `drain` may be waiting on the same condition, and a signal could wake it instead of the writer.
        condition.broadcast()
        condition.unlock()
        if start {
            SystemThread.start(named: threadName) { [self] in
                SystemThread.makeBatch()
                run()
            }
        }
    }

    /// Waits until everything queued so far is written, for at most `timeout`; false when the stream did not take it
    /// in time. For the end of the service, on its main thread: never on the owner.
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
            WaitGuard.check("a blocking write to a standard stream")
            write(Array(taken.lines.joined()))
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }
}
