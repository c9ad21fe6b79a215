// The logind adapter on its own: its translation of the session's property changes (pure), and the watcher against
// python3-dbusmock's logind on a private bus (`FakeLogind`, no sound server): the events it emits, the delay lock it
// holds, releases only for a sleep in progress, and takes again once after a wake.
@testable import EarshotLogind
import EarshotCore
import EarshotTestSupport
import Foundation
import Glibc
import SystemSupport
import Testing

@Suite("The logind adapter")
struct LogindWatcherTests {
    @Test("Property changes become events; a first reading and a repeated value are none")
    func sessionFollowerTranslatesChanges() {
        var follower = SessionFollower()
        #expect(follower.update(SessionProperties(active: true, locked: false)).isEmpty)
        #expect(follower.update(SessionProperties(active: true, locked: nil)).isEmpty)
        #expect(follower.update(SessionProperties(active: false, locked: nil)) == [.sessionLeft(.inactive)])
        #expect(follower.update(SessionProperties(active: false, locked: true)) == [.sessionLeft(.locked)])
        #expect(follower.update(SessionProperties(active: true, locked: false))
                    == [.sessionReturned(.inactive), .sessionReturned(.locked)])
        #expect(follower.update(SessionProperties()).isEmpty)
    }

    @Test("Against a fake logind: events in order, the lock released only during a sleep, one lock after two wakes")
    func watcherAgainstFakeLogind() async throws {
        let logind = try FakeLogind()
        defer { logind.stop() }
        let events = LockedValue<[Event]>([])
        let reports = LockedValue<[LogindReport]>([])
        let watcher = LogindWatcher(
            busAddress: logind.bus.address, sessionID: nil, userID: getuid(),
            report: { report in reports.withLock { $0.append(report) } },
            emit: { event in events.withLock { $0.append(event) } })
        watcher.start()
        defer { watcher.stop() }
        try await waitUntil("the watcher holds its lock", timeout: .seconds(10)) {
            try logind.inhibitorHolders() == ["Earshot"]
        }
        #expect(reports.withLock { $0 }.first == .connected(session: true))

        // A release with no sleep in progress releases nothing.
        watcher.releaseSleepDelay()
        try logind.prepareForSleep(true)
        try await waitUntil("the sleep's event", timeout: .seconds(10)) {
            events.withLock { $0 } == [.sessionLeft(.sleep)]
        }
        #expect(try logind.inhibitorHolders() == ["Earshot"], "released before the rules asked")
        watcher.releaseSleepDelay()
        try await waitUntil("the lock released", timeout: .seconds(10)) { try logind.inhibitorHolders().isEmpty }
        try logind.prepareForSleep(false)
        try logind.prepareForSleep(false)
        try logind.setActive(false)
        try logind.lock()
        try await waitUntil("every event", timeout: .seconds(10)) { events.withLock { $0 }.count == 6 }
        #expect(events.withLock { $0 } == [
            .sessionLeft(.sleep), .sessionReturned(.sleep), .sessionReturned(.sleep), .sessionLeft(.inactive),
            .sessionLeft(.locked), .sessionLeft(.locked),
        ])
        // A late release after the wake keeps the new lock; two wakes took one.
        watcher.releaseSleepDelay()
        try await Task.sleep(for: .milliseconds(200))
        #expect(try logind.inhibitorHolders() == ["Earshot"])
        #expect(reports.withLock { $0 }.filter { $0 == .sleepDelayTaken }.count == 2)
        #expect(reports.withLock { $0 }.filter { $0 == .sleepDelayReleased }.count == 1)
    }

    @Test("The system bus restarts: the loss and the return said once each, the lock taken again, signals heard again")
    func reconnectsAfterTheBusRestarts() async throws {
        let logind = try FakeLogind()
        defer { logind.stop() }
        let events = LockedValue<[Event]>([])
        let reports = LockedValue<[LogindReport]>([])
        // The address with the daemon's guid, as a session's environment has it: the new daemon has another.
        let watcher = LogindWatcher(
            busAddress: logind.bus.printedAddress, sessionID: nil, userID: getuid(),
            report: { report in reports.withLock { $0.append(report) } },
            emit: { event in events.withLock { $0.append(event) } })
        watcher.start()
        defer { watcher.stop() }
        try await waitUntil("the watcher holds its lock", timeout: .seconds(10)) {
            try logind.inhibitorHolders() == ["Earshot"]
        }
        try logind.restartBus()
        try await waitUntil("the watcher is back and holds its lock again", timeout: .seconds(20)) {
            let back = reports.withLock { $0 }.contains { if case .reconnected = $0 { true } else { false } }
            return try back && logind.inhibitorHolders() == ["Earshot"]
        }
        try logind.prepareForSleep(true)
        try await waitUntil("the sleep's event on the new connection", timeout: .seconds(10)) {
            events.withLock { $0 } == [.sessionLeft(.sleep)]
        }
        watcher.releaseSleepDelay()
        try await waitUntil("the new lock released", timeout: .seconds(10)) { try logind.inhibitorHolders().isEmpty }
        let said = reports.withLock { $0 }
        #expect(said.filter { if case .lost = $0 { true } else { false } }.count == 1, "\(said)")
        #expect(said.filter { if case .reconnected = $0 { true } else { false } }.count == 1, "\(said)")
        #expect(!said.contains { if case .unavailable = $0 { true } else { false } }, "\(said)")
        #expect(said.filter { $0 == .sleepDelayTaken }.count == 2, "\(said)")
    }

    @Test("No bus at the address: unavailable, reported once, and the thread ends")
    func noBus() async throws {
        let reports = LockedValue<[LogindReport]>([])
        let watcher = LogindWatcher(
            busAddress: "unix:path=/nonexistent/earshot-no-bus", sessionID: nil, userID: getuid(),
            report: { report in reports.withLock { $0.append(report) } }, emit: { _ in })
        watcher.start()
        try await waitUntil("the report", timeout: .seconds(10)) { !reports.withLock { $0 }.isEmpty }
        watcher.stop()
        let said = reports.withLock { $0 }
        #expect(said.count == 1, "\(said)")
        if case .unavailable = said.first {} else { Issue.record("not unavailable: \(said)") }
    }
}
