// The real-time path, measured: the real write callback of a real stream on the private server, with CRealtimeAudit
// counting heap and lock calls on libpulse's thread while, and only while, our callback body runs (the stream's
// WriteCallbackProbe arms and disarms it). libpulse's own work around the callback (timing updates, socket I/O,
// dispatching replies) runs unarmed and is not counted; the libpulse calls our callback makes (pa_stream_begin_write,
// pa_stream_write, and the silence alarm's timer restart, with the alarm set as the player sets it while playing)
// are inside the armed section, so they are counted too.
import AudioPipeline
import CRealtimeAudit
import Foundation
import PulseOutput
import Testing

/// Allocation and lock counts around the write callback during steady playback.
@Suite("The write callback allocates nothing and takes no locks", .serialized)
struct RealtimePathTests {
    @Test("Steady playback and silence padding: no allocation, no free, no lock call inside the write callback")
    func writeCallbackIsAllocationAndLockFree() async throws {
        try #require(realtime_audit_is_effective() == 1,
                     "allocation counting is not in effect (a sanitizer build brings its own allocator)")
        let connection = try connectToTestServer()
        let probe = WriteCallbackProbe(entered: realtime_audit_arm, left: realtime_audit_disarm)
        let playing = try await PlayingStream(connection: connection, sinkName: "headphones", writeProbe: probe)
        defer { playing.close() }
        // As the player sets it while playing: every request then moves the alarm's timer on.
        playing.stream.setSilenceAlarm(after: .seconds(1))
        try await playing.startPlaying()
        // Warm-up: libpulse fills its free lists and memory pool slots on the first requests.
        try await Task.sleep(for: .seconds(1))

        // Steady playback: the ring always holds audio, every callback copies.
        realtime_audit_reset()
        try await Task.sleep(for: .seconds(3))
        let playingCounts = realtime_audit_read()
        let period = try #require(playing.stream.requestPeriod)
        print("[realtime] steady playback, 3 s: \(playingCounts.sections) callbacks (request period \(period)), "
            + "\(playingCounts.allocations) allocations, \(playingCounts.frees) frees, "
            + "\(playingCounts.lockCalls) lock calls")
        // About one request per period; a generous floor, so the test proves it measured real callbacks.
        #expect(playingCounts.sections >= 40, "only \(playingCounts.sections) write callbacks in 3 s")
        #expect(playingCounts.allocations == 0,
                "\(playingCounts.allocations) allocations (largest \(playingCounts.largestAllocation) bytes)")
        #expect(playingCounts.frees == 0, "\(playingCounts.frees) frees")
        #expect(playingCounts.lockCalls == 0, "\(playingCounts.lockCalls) lock calls")

        // The decoder falls behind: with the producer gone the ring runs dry and every callback pads with silence.
        playing.feeder.stop()
        let underrunsBefore = playing.stream.underrunCount
        try await Task.sleep(for: .milliseconds(500))
        realtime_audit_reset()
        try await Task.sleep(for: .seconds(1))
        let paddingCounts = realtime_audit_read()
        let padded = playing.stream.underrunCount - underrunsBefore
        print("[realtime] silence padding, 1 s: \(paddingCounts.sections) callbacks, \(padded) padded, "
            + "\(paddingCounts.allocations) allocations, \(paddingCounts.frees) frees, "
            + "\(paddingCounts.lockCalls) lock calls")
        #expect(padded >= 10, "only \(padded) callbacks padded with silence")
        #expect(paddingCounts.sections >= 10, "only \(paddingCounts.sections) write callbacks in 1 s")
        #expect(paddingCounts.allocations == 0,
                "\(paddingCounts.allocations) allocations (largest \(paddingCounts.largestAllocation) bytes)")
        #expect(paddingCounts.frees == 0, "\(paddingCounts.frees) frees")
        #expect(paddingCounts.lockCalls == 0, "\(paddingCounts.lockCalls) lock calls")
    }
}
