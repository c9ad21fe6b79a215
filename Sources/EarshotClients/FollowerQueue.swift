// One event-log follower's lines on their way out: a bounded queue that whoever records a line fills without ever
// waiting, and that the follower's writer empties at the follower's own pace. A follower that falls behind loses the
// newest lines, not the owner's time; when it catches up it reads `... N events dropped` where the lines are missing.
//
// Used three times: by the service for each `earshot events` connection (EventLog) and for its own standard error and
// standard output (StandardStreamWriter, whose marker reads `... N lines dropped`), and by `earshot events` itself
// between its socket and its standard output (a pager that stops reading).

/// A bounded first-in first-out queue of log lines that drops what does not fit and says how much it dropped.
///
/// A value type with no lock: its owner guards it (EventLog keeps every follower's under one mutex).
public struct FollowerQueue: Sendable {
    /// How many lines a follower may be behind before lines are dropped.
    ///
    /// 256 lines are about 30 KB (lines are 80 to 150 bytes): far more than any burst of decisions one input makes
    /// (an unplug makes about ten lines, a queue replaced a few), so a follower that reads at all loses nothing,
    /// and 128 stopped followers hold at most about 4 MB between them. The follower's socket buffer holds a few
    /// hundred lines more on top.
    public static let defaultCapacity = 256
    /// How long a follower may leave a full queue untouched before it is disconnected (see `isStuck`).
    public static let stuckLimit = Duration.seconds(30)

    /// The most lines (a drop marker included) the queue holds.
    public let capacity: Int
    /// What a drop marker calls the lines it stands for: "events" for a follower, "lines" for standard error.
    public let droppedNoun: String
    // A ring: `lines[(head + i) % capacity]` is the i-th oldest line, for i < count. Allocated once.
    private var lines: [[UInt8]]
    private var head = 0
    /// How many lines the queue holds, drop markers included.
    public private(set) var count = 0
    /// Lines dropped since the last marker was queued or handed out.
    public private(set) var pendingDrops = 0
    /// When the queue last dropped a line with nothing taken from it since; nil while it keeps up.
    private var overflowingSince: ContinuousClock.Instant?

    /// An empty queue holding at most `capacity` lines (at least 2: a marker and the line after it), whose markers
    /// call what they stand for `droppedNoun`.
    public init(capacity: Int = FollowerQueue.defaultCapacity, droppedNoun: String = "events") {
        self.capacity = max(capacity, 2)
        self.droppedNoun = droppedNoun
        lines = Array(repeating: [], count: self.capacity)
    }

    /// The line a follower reads where `count` lines are missing.
    public static func marker(dropped count: Int, noun: String = "events") -> [UInt8] {
        Array("... \(count) \(noun) dropped\n".utf8)
    }

    /// What became of a line handed to `append`.
    public enum Appended: Equatable, Sendable {
        /// Queued.
        case queued
        /// Queued after a marker for `dropped` earlier lines that did not fit: the follower caught up.
        case queuedAfterDrops(dropped: Int)
        /// Dropped: the queue is full.
        case dropped
    }

    /// Queues `line`, or drops it when the queue is full; never waits. `now` starts the stuck clock at the first drop.
    public mutating func append(_ line: [UInt8], now: ContinuousClock.Instant) -> Appended {
        // After drops a line needs room for itself and the marker before it, so the gap is shown where it is.
        guard count + (pendingDrops > 0 ? 2 : 1) <= capacity else {
            pendingDrops += 1
            if overflowingSince == nil { overflowingSince = now }
            return .dropped
        }
        var outcome = Appended.queued
        if pendingDrops > 0 {
            push(Self.marker(dropped: pendingDrops, noun: droppedNoun))
            outcome = .queuedAfterDrops(dropped: pendingDrops)
            pendingDrops = 0
        }
        push(line)
        return outcome
    }

    /// What `take` handed out.
    public struct Taken: Equatable, Sendable {
        /// The lines, oldest first, a drop marker among them where lines are missing.
        public var lines: [[UInt8]]
        /// The number of dropped lines a marker handed out now (not queued earlier) stands for; 0 for none.
        public var markedDrops: Int
    }

    /// Takes up to `limit` lines, oldest first. An empty queue with drops pending hands out their marker: the
    /// follower caught up with everything that fitted.
    public mutating func take(upTo limit: Int = Int.max) -> Taken {
        var taken: [[UInt8]] = []
        while count > 0 && taken.count < limit {
            taken.append(lines[head])
            lines[head] = []
            head = (head + 1) % capacity
            count -= 1
        }
        var markedDrops = 0
        if count == 0 && pendingDrops > 0 && taken.count < limit {
            taken.append(Self.marker(dropped: pendingDrops, noun: droppedNoun))
            markedDrops = pendingDrops
            pendingDrops = 0
        }
        if !taken.isEmpty { overflowingSince = nil }
        return Taken(lines: taken, markedDrops: markedDrops)
    }

    /// Whether there is anything to hand out (lines, or a marker for drops).
    public var hasWork: Bool { count > 0 || pendingDrops > 0 }

    /// Whether the queue has been dropping lines for `limit` with nothing taken from it: its follower reads nothing.
    public func isStuck(now: ContinuousClock.Instant, limit: Duration = FollowerQueue.stuckLimit) -> Bool {
        guard let overflowingSince else { return false }
        return now - overflowingSince >= limit
    }

    /// When the queue would count as stuck, if it is overflowing.
    public func stuckDeadline(limit: Duration = FollowerQueue.stuckLimit) -> ContinuousClock.Instant? {
        overflowingSince.map { $0 + limit }
    }

    private mutating func push(_ line: [UInt8]) {
        lines[(head + count) % capacity] = line
        count += 1
    }
}
