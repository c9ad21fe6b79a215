// The reports a running MusicLibraryService makes, kept for the tests that wait on them: for a report itself (`wait`)
// or for what the reports announce (`waitUntil`, which looks again after each one), with one generous timeout.
import EarshotTestSupport
import Foundation
import SystemSupport
@testable import MusicLibrary

/// The reports a service made, and ways to wait for them.
final class LibraryReports: @unchecked Sendable {
    // Unchecked Sendable: `all` is read and written under `condition`'s mutex.
    private let condition = Condition()
    private var all: [MusicLibraryService.Report] = []

    func append(_ report: MusicLibraryService.Report) {
        condition.lock()
        all.append(report)
        condition.broadcast()
        condition.unlock()
    }

    var list: [MusicLibraryService.Report] {
        condition.lock()
        defer { condition.unlock() }
        return all
    }

    /// Waits until `holds` is true, looking again after each report; throws after `timeout` seconds.
    /// The scan runs under SCHED_IDLE: on a loaded machine it waits its turn, hence the generous default.
    func waitUntil(_ what: String, timeout: Double = 120, _ holds: () throws -> Bool) throws -> Double {
        let started = Condition.monotonicNanoseconds()
        let deadline = started + UInt64(timeout * 1e9)
        while true {
            // The count is taken before looking, so that a report arriving between the look and the wait is not
            // missed (the wait would then be for a report that may never come).
            condition.lock()
            let seen = all.count
            condition.unlock()
            if try holds() { return Double(Condition.monotonicNanoseconds() - started) / 1e9 }
            condition.lock()
            while all.count == seen && Condition.monotonicNanoseconds() < deadline {
                condition.wait(untilMonotonicNanoseconds: deadline)
            }
            condition.unlock()
            guard Condition.monotonicNanoseconds() < deadline else {
                throw ToolkitError("timed out waiting until \(what); reports: \(list)")
            }
        }
    }

    /// Waits (up to 120 s: the library runs under SCHED_IDLE) until a report satisfies `holds`.
    func wait(_ what: String, _ holds: (MusicLibraryService.Report) -> Bool) throws {
        let deadline = Condition.monotonicNanoseconds() + 120_000_000_000
        condition.lock()
        defer { condition.unlock() }
        while !all.contains(where: holds) {
            guard Condition.monotonicNanoseconds() < deadline else {
                throw ToolkitError("timed out waiting for \(what); reports: \(all)")
            }
            condition.wait(untilMonotonicNanoseconds: deadline)
        }
    }

    /// Forgets the reports so far.
    func clear() {
        condition.lock()
        all.removeAll()
        condition.unlock()
    }
}
