// The link's reconnection mechanics without a server: one attempt at a time, waits that double up to a cap, the
// timer armed only while an attempt is due, and generations that tell a stale attempt's outcome apart.
import Testing

@testable import EarshotService

struct OutputLinkTests {
    /// A link whose timer is never let go off by itself here: each test takes the delivery with `wentOff`.
    private static func makeLink() -> OutputLink {
        OutputLink(reconnectTimer: TickTimer(on: timerHost) { _ in })
    }

    @Test("reconnecting makes one attempt at a time, and the timer is armed only while one is due")
    func oneAttemptAtATime() {
        var link = Self.makeLink()
        let withoutReconnection = link.beginAttempt()
        #expect(withoutReconnection == nil, "no reconnection, no attempt")
        link.startReconnecting()
        #expect(link.reconnection?.delay == Reconnection.firstDelay)
        link.startReconnecting()
        #expect(link.reconnection?.attempts == 0, "a second start does not restart the reconnection")
        #expect(link.reconnectTimer.wentOff(arming: 1), "the first attempt's timer is armed")
        let first = link.beginAttempt()
        #expect(first == link.connectionGeneration)
        let second = link.beginAttempt()
        #expect(second == nil, "an attempt is under way")
        #expect(link.reconnection?.attempts == 1)
        #expect(!link.reconnectTimer.wentOff(arming: 2), "no timer while the attempt is under way")
        link.attemptFailed()
        #expect(link.reconnectTimer.wentOff(arming: 2), "a failed attempt arms the timer for the next one")
        let next = link.beginAttempt()
        #expect(next != nil)
        #expect(link.reconnection?.attempts == 2)
    }

    @Test("each failed attempt doubles the wait, up to the longest delay")
    func waitsDoubleUpToTheCap() {
        var link = Self.makeLink()
        link.startReconnecting()
        var waits: [Duration] = []
        for arming in 1...5 {
            #expect(link.reconnectTimer.wentOff(arming: arming))
            _ = link.beginAttempt()
            link.attemptFailed()
            waits.append(link.reconnection?.delay ?? .zero)
        }
        #expect(waits == [.milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1), .seconds(1)])
        link.attemptFailed()
        #expect(link.reconnection?.delay == .seconds(1) && link.reconnection?.isUnderWay == false,
                "a failure with no attempt under way changes nothing")
    }

    @Test("losing the server moves the generation on, so an attempt begun before is stale")
    func lossMakesEarlierAttemptsStale() {
        var link = Self.makeLink()
        link.startReconnecting()
        let before = link.beginAttempt()
        link.lost()
        #expect(before != nil && before != link.connectionGeneration)
        #expect(!link.isCurrent(connectionGeneration: link.connectionGeneration), "no connection is current")
    }

    @Test("an attempt can begin before its timer is due, which is then disarmed; one at a time still")
    func attemptBeforeTheTimer() {
        var link = Self.makeLink()
        link.startReconnecting(afterLoss: false)
        #expect(link.reconnection?.afterLoss == false)
        let now = link.beginAttempt()
        #expect(now == link.connectionGeneration)
        #expect(!link.reconnectTimer.wentOff(arming: 1), "the timer of the first attempt was disarmed")
        let second = link.beginAttempt()
        #expect(second == nil, "an attempt is under way")
        link.attemptFailed()
        #expect(link.reconnection?.attempts == 1 && link.reconnection?.isUnderWay == false)
        #expect(link.reconnectTimer.wentOff(arming: 2), "the next attempt waits for the timer")
    }

    @Test("a stream asked for without a connection waits for one attempt's outcome, once")
    func streamAwaitsConnection() {
        var link = Self.makeLink()
        let before = link.takeStreamAwaitingConnection()
        #expect(!before)
        link.awaitConnectionForStream()
        link.awaitConnectionForStream()
        #expect(link.streamAwaitsConnection)
        let taken = link.takeStreamAwaitingConnection()
        let again = link.takeStreamAwaitingConnection()
        #expect(taken && !again, "taken once")
    }

    @Test("without a stream, no stream generation is current, and each new one differs")
    func streamGenerations() {
        var link = Self.makeLink()
        let first = link.newStreamGeneration()
        #expect(!link.isCurrent(streamGeneration: first), "a generation without its stream is not current")
        let closed = link.closeStream()
        #expect(!closed, "nothing to close")
        link.openFailed()
        let later = link.newStreamGeneration()
        #expect(later > first)
        #expect(link.underruns == 0 && link.serverUnderflows == 0)
    }
}
