// The reply slot a client's thread waits on while the player answers: the first of the answer and the timeout
// wins, and a late answer never touches what the waiter already returned.
import Foundation
import Synchronization
import Testing

@testable import EarshotClients
import EarshotService

struct ReplySlotTests {
    @Test("an answer that arrives in time is the reply")
    func answerInTime() {
        let slot = ReplySlot(timeoutReply: "timed out")
        Thread.detachNewThread { slot.fulfil("answer") }
        #expect(slot.wait(timeout: .seconds(10)) == "answer")
    }

    @Test("no answer in time: the timeout reply")
    func noAnswer() {
        let slot = ReplySlot(timeoutReply: "timed out")
        #expect(slot.wait(timeout: .milliseconds(1)) == "timed out")
    }

    /// Answers that arrive at about the moment the waiter gives up: each reply is one of the two, whole, and a
    /// late answer is told it was too late. Run under ThreadSanitizer (scripts/ci-checks tsan) this also proves that
    /// the waiter never reads the reply while a late answer writes it.
    @Test("an answer racing the timeout: the first of the two wins")
    func answerRacingTimeout() {
        let rounds = 400
        var answered = 0
        for round in 0..<rounds {
            let slot = ReplySlot(timeoutReply: [-1])
            let value = Array(repeating: round, count: 16)
            let taken = AnswerOutcome()
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                usleep(UInt32(round % 3) * 500)
                taken.value.store(slot.fulfil(value) ? 1 : 0, ordering: .releasing)
                done.signal()
            }
            let reply = slot.wait(timeout: .microseconds(700))
            done.wait()
            #expect(reply == [-1] || reply == value, "round \(round): a torn reply \(reply)")
            #expect((reply == value) == (taken.value.load(ordering: .acquiring) == 1),
                    "round \(round): the reply and the answer's outcome disagree")
            if reply == value { answered += 1 }
        }
        // Both outcomes happened, or the race was not exercised.
        #expect(answered > 0 && answered < rounds, "\(answered) of \(rounds) answered in time")
    }
}

/// Whether the racing answer was taken: -1 not yet known, 1 taken, 0 too late.
private final class AnswerOutcome: Sendable {
    let value = Atomic<Int>(-1)
}
