// The stall watchdog's measure around a flushed stream's refill, against the real server (as PulseIntegrationTests).
// After `flush(refillFirst: true)` the stream writes only what the ring holds: the server's first request finds
// nothing and it asks for nothing more until the owner tops it up (`refilled()`), which for a station whose prebuffer
// arrives at the stream's own pace is seconds later. That silence was ours, not the server's; counted from the request
// left unanswered, it had the rules take a station started over a playing file for a stalled output
// (IcecastTests.liveEdgeStation).
import EarshotTestSupport
import PulseOutput
import Testing

@Suite("The stall watchdog around a refill", .serialized)
struct RefillWatchdogTests {
    @Test("a stream held back for its refill, or run out at the end of its data, counts silence from when it is fed")
    func silenceCountsFromTheRefill() async throws {
        let connection = try connectToTestServer()
        let playing = try await PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        // Nothing more is decoded: after the flush the ring stays empty, as while a station's prebuffer comes in.
        playing.feeder.stop()
        let flushedAt = PlaybackStream.uptimeNanoseconds()
        try await playing.acknowledged(.flushed) { $0.flush(refillFirst: true) }
        #expect(stream.requestSilence() == nil, "held back for the refill: no request is due")
        // The server asks after the flush and gets nothing (the request the old count started from).
        try await waitUntil("the server asks after the flush", timeout: .seconds(10), interval: .milliseconds(5)) {
            stream.lastRequestUptimeNanoseconds > flushedAt
        }
        let refilledAt = PlaybackStream.uptimeNanoseconds()
        stream.refilled()
        // At the refill no silence has been counted: none from before it (nil until the server next asks, or zero).
        let atRefill = stream.requestSilence(atUptimeNanoseconds: refilledAt)
        #expect(atRefill == nil || atRefill == .zero, "silence counted at the refill: \(String(describing: atRefill))")
        // And the watchdog is armed again: the server asks after the top-up, and a silence is due from there.
        try await waitUntil("a request is due again after the refill", timeout: .seconds(10),
                            interval: .milliseconds(5)) {
            stream.requestSilence() != nil
        }

        // The same for a stream that ran out at the end of its data and is given more (a track added at the queue's
        // end): the server asked for nothing more, rightly, and its silence until then was ours.
        stream.setEndOfData(true)
        let endedAt = PlaybackStream.uptimeNanoseconds()
        try await waitUntil("the server asks at the end of the data", timeout: .seconds(10),
                            interval: .milliseconds(5)) {
            stream.lastRequestUptimeNanoseconds > endedAt
        }
        let resumedAt = PlaybackStream.uptimeNanoseconds()
        stream.setEndOfData(false)
        let atResume = stream.requestSilence(atUptimeNanoseconds: resumedAt)
        #expect(atResume == nil || atResume == .zero, "silence counted at the resume: \(String(describing: atResume))")
    }
}
