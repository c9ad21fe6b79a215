// The fallback order of RealtimePriority (the real calls are proven end to end in RealtimeSchedulingTests).
@testable import RealtimeScheduling
import Testing

@Suite("Real-time priority: fallback order and limits")
struct RealtimePriorityTests {
    @Test("SCHED_FIFO set directly wins, and rtkit is then not asked")
    func directWins() {
        var asked = false
        let outcome = RealtimePriority.decide(direct: .granted(priority: 10)) {
            asked = true
            return .granted(priority: 10)
        }
        #expect(outcome == .schedFIFO(priority: 10))
        #expect(outcome.description == "SCHED_FIFO 10")
        #expect(!asked)
    }

    @Test("Refused directly: rtkit's grant is used")
    func rtkitSecond() {
        let outcome = RealtimePriority.decide(direct: .failed(reason: "SCHED_FIFO: Operation not permitted")) {
            .granted(priority: 5)
        }
        #expect(outcome == .rtkit(priority: 5))
        #expect(outcome.description == "rtkit SCHED_RR 5")
    }

    @Test("Refused by both: none, with both reasons in order")
    func noneWithBothReasons() {
        let outcome = RealtimePriority.decide(direct: .failed(reason: "SCHED_FIFO: Operation not permitted")) {
            .failed(reason: "rtkit: no system bus")
        }
        #expect(outcome == .none(reason: "SCHED_FIFO: Operation not permitted; rtkit: no system bus"))
        #expect(outcome.description == "none (SCHED_FIFO: Operation not permitted; rtkit: no system bus)")
    }

    @Test("rtkit is asked for our priority, capped at its maximum; none when it allows none")
    func rtkitPriorityCap() {
        #expect(RealtimePriority.rtkitPriority(maximum: 20) == 10)
        #expect(RealtimePriority.rtkitPriority(maximum: 10) == 10)
        #expect(RealtimePriority.rtkitPriority(maximum: 3) == 3)
        #expect(RealtimePriority.rtkitPriority(maximum: 0) == nil)
        #expect(RealtimePriority.rtkitPriority(maximum: -1) == nil)
    }
}
