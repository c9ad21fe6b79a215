// The player's timer and the position MPRIS reads: a one-shot that fires once and only while armed, and a position
// carried forward to the moment it is read while playing.
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

struct TimingTests {
    @Test("the timer goes off once, after its delay")
    func firesOnce() async throws {
        let fired = FiredCount()
        let timer = TickTimer(on: timerHost) { arming in
            fired.lastArming.store(arming, ordering: .relaxed)
            fired.value.add(1, ordering: .relaxed)
        }
        timer.arm(after: .milliseconds(20))
        try await Task.sleep(for: .milliseconds(300))
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
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.value.load(ordering: .relaxed) == 1, "the later arming replaced the earlier moment")
        let first = fired.lastArming.load(ordering: .relaxed)
        #expect(timer.wentOff(arming: first))
        #expect(!timer.wentOff(arming: first), "the same arming went off twice")
        timer.arm(after: .milliseconds(50))
        timer.disarm()
        try await Task.sleep(for: .milliseconds(300))
        #expect(fired.value.load(ordering: .relaxed) == 1, "a disarmed timer went off")
        #expect(!timer.wentOff(arming: first + 1), "a disarmed arming counted as current")
    }

    @Test("the position runs on from its anchor while playing, up to the track's length, and stands while paused")
    func positionCarriedForward() async throws {
        let cell = PositionCell()
        cell.store(microseconds: 1_000_000, advancing: false, limit: nil)
        try await Task.sleep(for: .milliseconds(50))
        #expect(cell.load() == 1_000_000)
        cell.store(microseconds: 1_000_000, advancing: true, limit: nil)
        try await Task.sleep(for: .milliseconds(100))
        let later = cell.load()
        #expect(later >= 1_100_000 && later < 1_000_000 + 2_000_000, "\(later)")
        cell.store(microseconds: 1_000_000, advancing: true, limit: 1_020_000)
        try await Task.sleep(for: .milliseconds(50))
        #expect(cell.load() == 1_020_000)
    }
}
