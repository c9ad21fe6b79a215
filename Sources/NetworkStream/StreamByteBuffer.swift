// The bytes a stream's fetch thread has received and its decoder has not read yet: bounded, counted, in chunks
// allocated as they fill and freed as they are read, so a quiet buffer holds little and a full one holds its capacity.
import SystemSupport

/// A bounded first-in first-out byte buffer between one writer (the fetch thread) and one reader (the decoder's
/// thread). When a write does not fit, the oldest bytes are dropped and counted: for a live stream, falling behind
/// by more than the buffer holds means rejoining live. With a time bound (`maximumAgeNanoseconds`) bytes that arrived
/// longer ago than it are dropped too, as later bytes arrive: a station sends in real time, so the age of the oldest
/// byte held is how far behind live the reader is. The first drop after the buffer was last emptied on purpose
/// (`discardAll`) is reported to `overflowed`, once. A seam (`markSeam`) marks where the bytes of a new connection
/// begin: no read crosses it, and the reader is told when it reaches one. The reader may wait for bytes; the writer
/// never waits.
public final class StreamByteBuffer: @unchecked Sendable {
    /// The size of each chunk of storage.
    public static let chunkBytes = 65_536

    /// What a read found.
    public enum ReadResult: Equatable, Sendable {
        /// This many bytes were copied.
        case bytes(Int)
        /// Nothing yet, and the stream goes on (a read that waits returns this at its deadline).
        case empty
        /// Nothing, and nothing more will come: the stream ended for this reason.
        case ended(StreamEnd)
        /// Nothing: every byte before a seam was read, and the bytes after it are a new connection's, which a decoder
        /// that cannot resync in the middle of a stream (libsndfile) must start reading afresh. Said once per seam.
        case seam
    }

    /// The most bytes the buffer holds.
    public let capacity: Int
    /// The oldest a byte held may be, in nanoseconds of CLOCK_MONOTONIC since it arrived (nil: no time bound).
    public let maximumAgeNanoseconds: UInt64?
    private let overflowed: (@Sendable () -> Void)?
    // Arrival marks, oldest first from `marksStart`: all bytes received up to `end` (a count of `received`) had
    // arrived by `time`. One mark per 50 ms of writes at most, so 30 minutes take 36 000 marks (576 kB) at most.
    private var marks: [(end: UInt64, time: UInt64)] = []
    private var marksStart = 0
    private var overflowReported = false
    // Where the seams not read past yet lie, oldest first, each as a count of `received`. One per reconnection.
    private var seams: [UInt64] = []
    static let markNanoseconds: UInt64 = 50_000_000
    // Everything below is guarded by `condition`'s mutex.
    private let condition = Condition()
    private var chunks: [[UInt8]] = []
    private var readOffset = 0
    private var stored = 0
    private var peak = 0
    private var dropped: UInt64 = 0
    private var received: UInt64 = 0
    private var end: StreamEnd?

    /// An empty buffer holding at most `capacity` bytes (at least one chunk), and none that arrived more than
    /// `maximumAgeNanoseconds` ago; its first drop of unread bytes is reported to `overflowed` (on the writer's thread,
    /// with no lock held; it must not wait).
    public init(capacity: Int, maximumAgeNanoseconds: UInt64? = nil, overflowed: (@Sendable () -> Void)? = nil) {
        self.capacity = max(capacity, Self.chunkBytes)
        self.maximumAgeNanoseconds = maximumAgeNanoseconds
        self.overflowed = overflowed
    }

    /// How long ago the oldest byte held arrived, in nanoseconds (0 when empty): for a live stream, how far behind live
    /// the reader is, less what it has decoded ahead.
    public var oldestAgeNanoseconds: UInt64 {
        condition.withLockHeld {
            guard stored > 0, let oldest = oldestMarkTime() else { return 0 }
            let now = Condition.monotonicNanoseconds()
            return now > oldest ? now - oldest : 0
        }
    }

    /// The bytes held now, the most ever held, the bytes dropped because the buffer was full, and all received.
    public var counts: (stored: Int, peak: Int, dropped: UInt64, received: UInt64) {
        condition.withLockHeld { (stored, peak, dropped, received) }
    }

    /// The bytes of storage allocated now (whole chunks): what the buffer costs in memory.
    public var allocatedBytes: Int {
        condition.withLockHeld { chunks.reduce(0) { $0 + $1.capacity } }
    }

    /// The chunks allocated now: at most one more than the capacity's worth (the one being read and the one being
    /// written may be the same or two).
    public var allocatedChunks: Int {
        condition.withLockHeld { chunks.count }
    }

    /// Appends `bytes` (the writer's call; never waits for the reader). Oldest bytes are dropped to make room.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        let report = condition.withLockHeld { () -> Bool in
            guard end == nil else { return false }
            let droppedBefore = dropped
            append(bytes)
            if let maximumAgeNanoseconds { dropOlder(than: maximumAgeNanoseconds) }
            guard dropped != droppedBefore, !overflowReported else { return false }
            overflowReported = true
            return true
        }
        if report { overflowed?() }
    }

    // Mutex held: stores `bytes`, dropping the oldest to make room, and marks their arrival.
    private func append(_ bytes: UnsafeRawBufferPointer) {
        // The marks of bytes already read or dropped go first, with or without a time bound to ask for them.
        _ = oldestMarkTime()
        received += UInt64(bytes.count)
        let now = Condition.monotonicNanoseconds()
        if marks.count > marksStart, now - marks[marks.count - 1].time < Self.markNanoseconds {
            marks[marks.count - 1].end = received
        } else {
            marks.append((end: received, time: now))
        }
        var input = bytes[...]
        // Bytes beyond the capacity in a single write: only the newest capacity's worth can stay.
        if input.count > capacity {
            dropped += UInt64(input.count - capacity)
            input = input.suffix(capacity)
        }
        let overflow = stored + input.count - capacity
        if overflow > 0 { discard(overflow) }
        while !input.isEmpty {
            if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkBytes {
                var chunk: [UInt8] = []
                chunk.reserveCapacity(Self.chunkBytes)
                chunks.append(chunk)
            }
            let room = Self.chunkBytes - chunks[chunks.count - 1].count
            let part = input.prefix(room)
            chunks[chunks.count - 1].append(contentsOf: part)
            input = input.dropFirst(part.count)
            stored += part.count
        }
        peak = max(peak, stored)
        condition.signal()
    }

    // Mutex held: the arrival time of the oldest byte held, forgetting the marks of bytes gone.
    private func oldestMarkTime() -> UInt64? {
        let gone = received - UInt64(stored)
        while marksStart < marks.count, marks[marksStart].end <= gone { marksStart += 1 }
        // Compacted now and then, so the array does not grow with every mark ever made.
        if marksStart > 1024, marksStart * 2 > marks.count {
            marks.removeFirst(marksStart)
            marksStart = 0
        }
        return marksStart < marks.count ? marks[marksStart].time : nil
    }

    // Mutex held: drops the bytes that arrived more than `age` nanoseconds ago.
    private func dropOlder(than age: UInt64) {
        let now = Condition.monotonicNanoseconds()
        while stored > 0, let oldest = oldestMarkTime(), now > oldest, now - oldest > age {
            let gone = received - UInt64(stored)
            discard(Int(marks[marksStart].end - gone))
        }
    }

    /// Marks the end of the stream (the writer's last call): a reader gets what is held, then `.ended(reason)`.
    public func finish(_ reason: StreamEnd) {
        condition.withLockHeld {
            if end == nil { end = reason }
            condition.broadcast()
        }
    }

    /// Marks the bytes written from now on as a new connection's (the writer's call, before its first write of that
    /// connection): the reader gets every byte before it, then `.seam`, then the new bytes.
    public func markSeam() {
        condition.withLockHeld {
            guard end == nil, seams.last != received else { return }
            seams.append(received)
            condition.signal()
        }
    }

    /// Drops everything held but the newest `keepingNewest` bytes (a jump to live), uncounted as drops: the next
    /// read gets those, then bytes written after this. A drop after this is reported again.
    public func discardAll(keepingNewest kept: Int = 0) {
        condition.withLockHeld {
            let droppedBefore = dropped
            discard(stored - min(max(kept, 0), stored))
            dropped = droppedBefore
            overflowReported = false
        }
    }

    /// Copies up to `destination.count` bytes out, waiting until CLOCK_MONOTONIC reaches `deadline` (nanoseconds)
    /// for the first byte; a deadline of 0 does not wait.
    public func read(into destination: UnsafeMutableRawBufferPointer, waitingUntil deadline: UInt64 = 0) -> ReadResult {
        guard destination.count > 0 else { return .bytes(0) }
        return condition.withLockHeld {
            while true {
                if reachedSeam() { return .seam }
                if stored > 0 { break }
                if let end { return .ended(end) }
                if deadline == 0 || Condition.monotonicNanoseconds() >= deadline { return .empty }
                condition.wait(untilMonotonicNanoseconds: deadline)
            }
            // No read crosses a seam: it stops at the next one.
            let wanted = seams.first.map { min(destination.count, Int($0 - (received - UInt64(stored)))) }
                ?? destination.count
            var copied = 0
            while copied < wanted, stored > 0 {
                let chunk = chunks[0]
                let count = min(chunk.count - readOffset, wanted - copied)
                chunk.withUnsafeBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: destination[copied..<copied + count])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[readOffset..<readOffset + count]))
                }
                copied += count
                consume(count)
            }
            return .bytes(copied)
        }
    }

    // Mutex held: whether the reader is at a seam (or past seams whose bytes before them were dropped, said as one),
    // forgetting it.
    private func reachedSeam() -> Bool {
        let gone = received - UInt64(stored)
        guard let first = seams.first, first <= gone else { return false }
        seams.removeAll { $0 <= gone }
        return true
    }

    /// Waits until at least `count` bytes (at most the capacity) are held or the stream ended (true), or until
    /// CLOCK_MONOTONIC reaches `deadline` (false).
    public func waitForStored(atLeast count: Int, until deadline: UInt64) -> Bool {
        condition.withLockHeld {
            while stored < min(count, capacity) && end == nil {
                if Condition.monotonicNanoseconds() >= deadline { return false }
                condition.wait(untilMonotonicNanoseconds: deadline)
            }
            return true
        }
    }

    /// Waits until bytes are held, the stream ended, or CLOCK_MONOTONIC reaches `deadline`, taking nothing:
    /// `.bytes(0)` when bytes are there, `.empty` at the deadline, `.ended` once nothing more will come.
    public func waitForBytes(until deadline: UInt64) -> ReadResult {
        condition.withLockHeld {
            while stored == 0 {
                if let end { return .ended(end) }
                if Condition.monotonicNanoseconds() >= deadline { return .empty }
                condition.wait(untilMonotonicNanoseconds: deadline)
            }
            return .bytes(0)
        }
    }

    // Mutex held: forgets the oldest `count` bytes, counting them as dropped.
    private func discard(_ count: Int) {
        var left = min(count, stored)
        dropped += UInt64(left)
        while left > 0 {
            let part = min(chunks[0].count - readOffset, left)
            consume(part)
            left -= part
        }
    }

    // Mutex held: advances the read position by `count` bytes of the first chunk, freeing it when it is read.
    private func consume(_ count: Int) {
        readOffset += count
        stored -= count
        if readOffset == chunks[0].count {
            chunks.removeFirst()
            readOffset = 0
        }
    }
}

extension Condition {
    /// Runs `body` holding the condition's mutex.
    func withLockHeld<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
