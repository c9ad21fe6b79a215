// The event log's followers (`earshot events` connections) and the one thread that writes to them.
//
// A note on threading
// -------------------
// - Whoever records a line (the owner above all, but also client threads and the MPRIS bus thread) only appends it
//   to each follower's `FollowerQueue` under `FollowerTable.lock`, then writes a byte to the wake-up pipe
//   (non-blocking: a full pipe already holds a wake-up) if a queue had nothing for the writer, or has just started
//   dropping lines (its stuck deadline is new to the writer). The lock is held for
//   appends and takes only, never across a system call, by anyone.
// - The writer thread ("earshot-events") runs while there are followers, and only then. It polls the wake-up pipe and
//   every follower, takes lines out of a queue under the lock, and sends them with MSG_DONTWAIT outside it: a
//   follower whose socket is full keeps its bytes waiting here until poll says it is writable again. It reads and
//   discards what a follower sends, to see it hang up.
// - A follower whose queue has been full for `EventLog.stuckLimit` with nothing taken out is disconnected. The writer
//   is the only thread that closes a follower's descriptor, after removing it from the table under the lock, so a
//   descriptor in the table is always open and never another connection's.
import Glibc
import SystemSupport

/// The followers' queues, shared by whoever records and the writer thread.
final class FollowerTable: @unchecked Sendable {
    // Unchecked Sendable: `queues` and `writerRunning` are touched only with `lock` held; `wakePipe` never changes.
    /// Guards `queues` and `writerRunning`.
    let lock = Lock()
    /// Each follower's queue, by socket descriptor.
    var queues: [Int32: FollowerQueue] = [:]
    /// Whether the writer thread runs (it ends when the last follower goes).
    var writerRunning = false
    /// The wake-up pipe: [read end, write end], both non-blocking; -1 when it could not be made.
    let wakePipe: [Int32]

    init() {
        wakePipe = BusPoll.makeWakePipe()
    }

    deinit {
        for descriptor in wakePipe where descriptor >= 0 { close(descriptor) }
    }

    /// Wakes the writer thread.
    func wake() {
        BusPoll.wake(writeEnd: wakePipe[1])
    }
}

extension EventLog {
    /// Hands `descriptor`, a connected follower, to the log: it gets `greeting` first, then every line recorded from
    /// now on. The log owns the descriptor from then on and closes it when the follower hangs up or is disconnected.
    /// Returns false, and owns nothing, when `followerLimit` followers are connected already.
    func follow(_ descriptor: Int32, greeting: [UInt8]) -> Bool {
        let table = followers
        guard table.wakePipe[0] >= 0 else { return false }
        let (accepted, startWriter) = table.lock.withLock { () -> (Bool, Bool) in
            guard table.queues.count < Self.followerLimit else { return (false, false) }
            var queue = FollowerQueue(capacity: followerCapacity)
            _ = queue.append(greeting, now: .now)
            table.queues[descriptor] = queue
            let start = !table.writerRunning
            table.writerRunning = true
            return (true, start)
        }
        guard accepted else { return false }
        if startWriter {
            SystemThread.start(named: "earshot-events") { [self] in
                SystemThread.makeBatch()
                writeToFollowers()
            }
        } else {
            table.wake()
        }
        return true
    }

    /// Hangs up on every follower (the service is stopping); the writer closes them.
    func disconnectFollowers() {
        followers.lock.withLock {
            // Shut down, not closed: the writer may be sending on them right now, and it alone closes them.
            for descriptor in followers.queues.keys { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    /// Appends `line` to every follower's queue, without waiting; wakes the writer when a queue had nothing for it or
    /// has just begun to drop lines.
    func queueForFollowers(_ line: [UInt8]) {
        let table = followers
        let now = ContinuousClock.now
        var caughtUp: [Int] = []
        let wake: Bool = table.lock.withLock {
            guard !table.queues.isEmpty else { return false }
            var wake = false
            // Through the values' indices, in place: iterating the keys would share the table's storage and make
            // every append copy it, queues and all.
            var index = table.queues.values.startIndex
            while index != table.queues.values.endIndex {
                let wasIdle = !table.queues.values[index].hasWork
                let wasOverflowing = table.queues.values[index].stuckDeadline() != nil
                let appended = table.queues.values[index].append(line, now: now)
                if case .queuedAfterDrops(let dropped) = appended { caughtUp.append(dropped) }
                if wasIdle { wake = true }
                // The first drop starts the queue's stuck clock, and the writer must learn its deadline: it may be
                // asleep in poll with none, waiting for a full socket to take bytes. Without this wake-up a follower
                // that read nothing was never disconnected while no other queue went from idle to busy (under load,
                // when the writer's last round began before the first drop: issue 41).
                if case .dropped = appended, !wasOverflowing { wake = true }
                table.queues.values.formIndex(after: &index)
            }
            return wake
        }
        if wake { table.wake() }
        // Said after the lock is released: recording takes it again.
        for dropped in caughtUp { record("follower", ["dropped": "\(dropped)"]) }
    }

    // MARK: The writer thread

    /// The writer thread's loop: until the last follower is gone, waits for a wake-up, a writable or readable
    /// follower, or the next stuck deadline, and serves what is ready.
    private func writeToFollowers() {
        let table = followers
        // Bytes a follower's socket has not accepted yet (taken from its queue, so the queue's bound holds); only
        // this thread touches them.
        var unsent: [Int32: ArraySlice<UInt8>] = [:]
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = ContinuousClock.now
            let round: (descriptors: [pollfd], timeout: Int32)? = table.lock.withLock {
                guard !table.queues.isEmpty else {
                    table.writerRunning = false
                    return nil
                }
                var descriptors = [pollfd(fd: table.wakePipe[0], events: Int16(POLLIN), revents: 0)]
                var deadline: ContinuousClock.Instant?
                for (descriptor, queue) in table.queues {
                    let writing = queue.hasWork || unsent[descriptor] != nil
                    descriptors.append(pollfd(
                        fd: descriptor, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0))
                    if let due = queue.stuckDeadline(limit: stuckLimit) { deadline = min(deadline ?? due, due) }
                }
                return (descriptors, deadline.map { Self.milliseconds(from: now, to: $0) } ?? -1)
            }
            guard var descriptors = round?.descriptors, let timeout = round?.timeout else { return }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 && errno != EINTR { return }
            if descriptors[0].revents != 0 {
                while read(table.wakePipe[0], &scratch, scratch.count) > 0 {}
            }
            var gone: [Int32] = []
            for entry in descriptors.dropFirst() where entry.revents != 0 {
                let descriptor = entry.fd
                if entry.revents & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) != 0
                    && !Self.discardInput(of: descriptor, into: &scratch) {
                    gone.append(descriptor)
                } else if entry.revents & Int16(POLLOUT) != 0 && !send(to: descriptor, unsent: &unsent) {
                    gone.append(descriptor)
                }
            }
            let stuck: [Int32] = table.lock.withLock {
                let stuck = table.queues.filter { $0.value.isStuck(now: .now, limit: stuckLimit) }.map(\.key)
                for descriptor in gone + stuck { table.queues[descriptor] = nil }
                return stuck
            }
            for descriptor in gone + stuck {
                unsent[descriptor] = nil
                close(descriptor)
            }
            for _ in stuck { record("follower", ["disconnected": "stuck"]) }
        }
    }

    /// Sends what `descriptor`'s queue holds until its socket is full; false when the follower is gone.
    private func send(to descriptor: Int32, unsent: inout [Int32: ArraySlice<UInt8>]) -> Bool {
        let table = followers
        while true {
            if unsent[descriptor] == nil {
                // A batch at a time: the lock is held while lines move out of the queue, never while they are sent.
                let taken = table.lock.withLock { table.queues[descriptor]?.take(upTo: 64) }
                guard let taken, !taken.lines.isEmpty else { return true }
                if taken.markedDrops > 0 { record("follower", ["dropped": "\(taken.markedDrops)"]) }
                unsent[descriptor] = ArraySlice(taken.lines.joined())
            }
            guard let bytes = unsent[descriptor] else { return true }
            let sent = bytes.withUnsafeBytes { raw in
                // MSG_NOSIGNAL: a follower that went away must not kill the service with SIGPIPE.
                Glibc.send(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK
            }
            unsent[descriptor] = sent == bytes.count ? nil : bytes.dropFirst(sent)
        }
    }

    /// Reads and drops what a follower sent (it has nothing more to say); false when it hung up.
    private static func discardInput(of descriptor: Int32, into scratch: inout [UInt8]) -> Bool {
        // A few reads a round at most: a follower that keeps talking must not keep the writer from the others.
        for _ in 0..<16 {
            let count = scratch.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 { continue }
            if count < 0 && errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
        return true
    }

    /// Milliseconds from `now` to `deadline`, rounded up (poll's timeout), at least 0.
    private static func milliseconds(from now: ContinuousClock.Instant, to deadline: ContinuousClock.Instant) -> Int32 {
        let left = (deadline - now).components
        guard left.seconds >= 0 else { return 0 }
        let milliseconds = left.seconds * 1000 + (left.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
