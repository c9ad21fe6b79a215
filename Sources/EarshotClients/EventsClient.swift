// `earshot events`: the client side of following the event log.
//
// Its own standard output can stop too (a pager left on its first page, a terminal suspended with Ctrl-S). Had it
// blocked there, it would stop reading its socket and leave the service's bounded queue as the only buffer: the
// service would drop lines for it, and after `FollowerQueue.stuckLimit` disconnect it, so a pager left for a minute
// would end the follow for good. So the client keeps reading: a reader thread drains the socket into a bounded queue
// of its own (the same `FollowerQueue`), and the calling thread writes from it at the output's pace; lines that do
// not fit are dropped here, with the same `... N events dropped` marker, and the connection stays. The service's
// queue still covers a follower that stops altogether (Ctrl-Z, SIGSTOP).
import EarshotJSON
import EarshotService
import Glibc
import SystemSupport

extension ControlClient {
    /// Follows the event log at `path`, handing its lines (each with its newline, as many as are waiting at once) to
    /// `write` on the calling thread until the player goes away. `write` may block as long as it likes: the socket is
    /// read meanwhile, and what does not fit in a queue of `capacity` lines is dropped and marked.
    ///
    /// - Throws: when the player cannot be reached or refuses to be followed.
    public static func followEvents(
        path: String, capacity: Int = FollowerQueue.defaultCapacity, write: ([UInt8]) -> Void
    ) throws(ControlSocketError) {
        let descriptor = try connect(path: path)
        guard ControlServer.write(ControlRequest.events.jsonLine + "\n", to: descriptor) else {
            close(descriptor)
            throw ControlSocketError("the player closed the connection")
        }
        var reader = LineReader(descriptor: descriptor, maximumLineBytes: 1 << 20)
        guard case .line(let reply) = reader.nextLine() else {
            close(descriptor)
            throw ControlSocketError("the player closed the connection without replying")
        }
        let parsed = (try? JSONTree.parse(reply)) as? [String: Any]
        guard parsed?["ok"] as? Bool == true else {
            close(descriptor)
            throw ControlSocketError((parsed?["error"] as? String) ?? "the player refused to be followed")
        }
        let lines = FollowedLines(capacity: capacity)
        SystemThread.start(named: "earshot-follow") { [reader] in
            var reader = reader
            while case .line(let bytes) = reader.nextLine() {
                lines.add(bytes + [UInt8(ascii: "\n")])
            }
            close(descriptor)
            lines.end()
        }
        // All that waits in one write: a write per line would make a follower fall behind a burst for nothing.
        while let taken = lines.next() {
            // In `earshot events`' own process, which has no owner: the check keeps the scan's rule without exception.
            WaitGuard.check("a blocking write to the follower's standard output")
            write(Array(taken.joined()))
        }
    }
}

/// The lines between `followEvents`' reader thread and its writer.
private final class FollowedLines: @unchecked Sendable {
    // Unchecked Sendable: `queue` and `ended` are touched only with `condition` locked.
    private let condition = Condition()
    private var queue: FollowerQueue
    private var ended = false

    init(capacity: Int) {
        queue = FollowerQueue(capacity: capacity)
    }

    /// Queues `line`, or drops it when the writer is that far behind; never waits for the writer.
    func add(_ line: [UInt8]) {
        condition.lock()
        _ = queue.append(line, now: .now)
        condition.signal()
        condition.unlock()
    }

    /// The connection ended: the writer stops once it has written what is queued.
    func end() {
        condition.lock()
        ended = true
        condition.signal()
        condition.unlock()
    }

    /// Waits for lines and takes them all (a drop marker among them where lines are missing); nil once the
    /// connection ended and everything was taken.
    func next() -> [[UInt8]]? {
        condition.lock()
        defer { condition.unlock() }
        while !queue.hasWork && !ended { condition.wait() }
        guard queue.hasWork else { return nil }
        return queue.take().lines
    }
}
