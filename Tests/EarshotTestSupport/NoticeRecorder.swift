// What a test records from another thread (libpulse's, the decoder's, a stream's) to wait on and look at afterwards:
// one recorder for every kind of notice, and one way to poll for a condition, for every test target (issue 35 found
// a recorder, a latch and a log written three times over, and `eventually` twice).
import Foundation
import SystemSupport

/// Collects notices from another thread, with the moment each arrived, for tests to wait on.
public final class NoticeRecorder<Notice: Sendable>: Sendable {
    private let entries = LockedValue<[(notice: Notice, at: ContinuousClock.Instant)]>([])

    /// An empty recorder.
    public init() {}

    /// Records one notice; called on the notifying thread (libpulse's, the decoder's), so it only appends.
    public func record(_ notice: Notice) {
        let now = ContinuousClock.now
        entries.withLock { $0.append((notice, now)) }
    }

    /// Every notice so far, in arrival order.
    public var all: [Notice] {
        entries.withLock { $0.map(\.notice) }
    }

    /// Notices with their arrival moments.
    public var timed: [(notice: Notice, at: ContinuousClock.Instant)] {
        entries.withLock { $0 }
    }

    /// How many notices have arrived so far (a starting point for later waits).
    public var count: Int {
        entries.withLock { $0.count }
    }

    /// Whether some notice so far matches `predicate`.
    public func contains(where predicate: (Notice) -> Bool) -> Bool {
        entries.withLock { $0.contains { predicate($0.notice) } }
    }

    /// The first notice at or after position `start` matching `predicate`, with its moment.
    private func first(
        from start: Int, where predicate: (Notice) -> Bool
    ) -> (notice: Notice, at: ContinuousClock.Instant)? {
        entries.withLock { list in list.dropFirst(start).first { predicate($0.notice) } }
    }

    /// Waits until a notice matching `predicate` has arrived (at or after position `from`); returns it and its
    /// moment, or nil after `timeout`.
    public func waitFor(
        _ timeout: Duration = .seconds(5),
        from start: Int = 0,
        where predicate: (Notice) -> Bool
    ) async -> (notice: Notice, at: ContinuousClock.Instant)? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = first(from: start, where: predicate) { return found }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// The same wait for a thread that is not in a task (a phone call's own thread): blocks it, polling every
    /// millisecond.
    public func waitBlocking(
        _ timeout: Duration = .seconds(5),
        from start: Int = 0,
        where predicate: (Notice) -> Bool
    ) -> (notice: Notice, at: ContinuousClock.Instant)? {
        var found: (notice: Notice, at: ContinuousClock.Instant)?
        _ = eventually(timeout: timeout, interval: .milliseconds(1)) {
            found = first(from: start, where: predicate)
            return found != nil
        }
        return found
    }
}

extension NoticeRecorder where Notice: Equatable {
    /// Waits for exactly `notice`.
    public func waitFor(_ notice: Notice, timeout: Duration = .seconds(5), from start: Int = 0) async -> Bool {
        await waitFor(timeout, from: start) { $0 == notice } != nil
    }
}

/// Polls `condition` every `interval` until it holds or `timeout` passes; returns whether it held. For code that is
/// not in a task (a consumer thread draining a ring as it polls); async code has `waitUntil`, which throws.
public func eventually(
    timeout: Duration = .seconds(10), interval: Duration = .milliseconds(10), _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: interval.seconds)
    }
    return try condition()
}
