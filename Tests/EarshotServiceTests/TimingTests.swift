// The player's timer and the position MPRIS reads: a one-shot that fires once and only while armed, and a position
// carried forward to the moment it is read while playing.
import EarshotTestSupport
import Foundation
import Synchronization
import Testing

@testable import EarshotService

/// Counts how often a timer went off, and the arming it went off for last.
private final class FiredCount: Sendable {
    let value = Atomic<Int>(0)
    let lastArming = Atomic<Int>(0)
}

/// The thread that keeps these tests' timers, as the owner's thread keeps the player's.
let timerHost = OwnerThread(name: "test-timers")

/// Waits until `fired` counts a first firing.
private func waitForFiring(_ fired: FiredCount, of what: String) async throws {
    try await waitUntil("\(what) went off", timeout: .seconds(10)) { fired.value.load(ordering: .relaxed) > 0 }
}

/// Arms a second timer on the same thread for `delay` and waits until it goes off: by then every timer due before it
/// on that thread has had its turn (the thread fires what is due in one pass, earliest first), so a test that a timer
/// did not go off (again) waits for this event, not for a time a loaded machine may overrun.
private func waitForLaterTimer(after delay: Duration) async throws {
    let fired = FiredCount()
    let later = TickTimer(on: timerHost) { _ in fired.value.add(1, ordering: .relaxed) }
    later.arm(after: delay)
    try await waitForFiring(fired, of: "the later timer")
}

struct TimingTests {
    @Test("the timer goes off once, after its delay")
    func firesOnce() async throws {
        let fired = FiredCount()
        let timer = TickTimer(on: timerHost) { arming in
            fired.lastArming.store(arming, ordering: .relaxed)
            fired.value.add(1, ordering: .relaxed)
        }
        timer.arm(after: .milliseconds(20))
        try await waitForFiring(fired, of: "the timer")
        try await waitForLaterTimer(after: .milliseconds(100))
        #expect(fired.value.load(ordering: .relaxed) == 1)
    }

    @Test("arming for later keeps the earlier moment; disarming stops it")
    func earlierWinsAndDisarm() async throws {
        let fired = FiredCount()
        let timer = TickTimer(on: timerHost) { arming in
            fired.lastArming.store(arming, ordering: .relaxed)
            fired.value.add(1, ordering: .relaxed)
        }
        timer.arm(after: .milliseconds(30))
        timer.arm(after: .seconds(30))
        // Within 10 s only if the later arming kept the earlier moment.
        try await waitForFiring(fired, of: "the timer armed for 30 ms, then for 30 s")
        #expect(fired.value.load(ordering: .relaxed) == 1)
        let first = fired.lastArming.load(ordering: .relaxed)
        #expect(timer.wentOff(arming: first))
        #expect(!timer.wentOff(arming: first), "the same arming went off twice")
        timer.arm(after: .milliseconds(50))
        timer.disarm()
        try await waitForLaterTimer(after: .milliseconds(100))
        #expect(fired.value.load(ordering: .relaxed) == 1, "a disarmed timer went off")
        #expect(!timer.wentOff(arming: first + 1), "a disarmed arming counted as current")
    }

    @Test("the position runs on from its anchor while playing, up to the track's length, and stands while paused")
    func positionCarriedForward() async throws {
        let cell = PositionCell()
        cell.store(microseconds: 1_000_000, advancing: false, limit: nil)
        try await Task.sleep(for: .milliseconds(50))
        #expect(cell.load() == 1_000_000)
        let anchored = ContinuousClock.now
        cell.store(microseconds: 1_000_000, advancing: true, limit: nil)
        try await Task.sleep(for: .milliseconds(100))
        let later = cell.load()
        // Bounded by the time that really passed, not by the sleep asked for: a loaded machine (CI's, with helpers
        // building beside it) once slept 2 s here.
        let passed = (ContinuousClock.now - anchored) / .microseconds(1)
        #expect(later >= 1_100_000 && Double(later) <= 1_000_000 + passed, "\(later) after \(passed) µs")
        cell.store(microseconds: 1_000_000, advancing: true, limit: 1_020_000)
        try await Task.sleep(for: .milliseconds(50))
        #expect(cell.load() == 1_020_000)
    }
}
