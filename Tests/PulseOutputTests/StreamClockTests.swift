// The stream's own clock (PlaybackStream+Timing.swift) on the private server: between the server's timing readings,
// which come every 5 s once it plays, the heard position runs on at the nominal rate from the last reading. Sampled
// for 6 s of steady playing (across at least one reading), every sample must sit on the wall clock's line through
// the first one, within a few milliseconds, plus one graph period on PipeWire (which reports its read index as of
// its last cycle, so a reading can place the listener up to a period early). About 8 s of audio. And a cork on its
// way when the server dies: the position kept is where the clock stood at the cork, not the last reading's.
import AudioPipeline
import EarshotTestSupport
import Foundation
import PulseOutput
import Testing

@Suite("The stream's clock between timing readings", .serialized)
struct StreamClockTests {
    @Test("the heard position runs at the wall clock's rate between and across the sparse timing readings")
    func heardPositionKeepsTheWallClock() async throws {
        let connection = try connectToTestServer()
        let playing = try await PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        // Past the start: the sink has begun, and a reading has said so.
        try await Task.sleep(for: .seconds(1))
        let start = ContinuousClock.now
        let first = try #require(stream.heardRingFrame())
        let tolerance = 0.008 + (try TestEnvironment.serverPeriodSeconds())
        var worst = 0.0
        while ContinuousClock.now - start < .seconds(6) {
            try await Task.sleep(for: .milliseconds(100))
            // The clock is read after the position: the gap between the two readings only ever makes the position
            // look early, by the time it takes to read it.
            let heard = try #require(stream.heardRingFrame())
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            let off = Double(heard - first) / Double(testRate) - elapsed
            if abs(off) > abs(worst) { worst = off }
        }
        let milliseconds = (worst * 10_000).rounded() / 10
        print("[measure] stream clock: worst distance from the wall clock's line over 6 s: \(milliseconds) ms")
        #expect(abs(worst) <= tolerance, "the heard position left the wall clock's line by \(worst * 1000) ms")
        #expect(stream.underrunCount == 0 && stream.serverUnderflowCount == 0)
    }

    @Test("a server that dies with our cork on its way leaves the position where the clock stood at the cork")
    func corkOnItsWayWhenTheServerDies() async throws {
        let notices = NoticeRecorder<ConnectionNotice>()
        let connection = try connectToTestServer("EarshotCorkDeathTest", notices: notices)
        let playing = try await PlayingStream(connection: connection, sinkName: "headphones")
        defer { playing.close() }
        let stream = playing.stream
        try await playing.startPlaying()
        // Three seconds in: the last reading (the first ones, at the start; the next is due 5 s after) is long past.
        try await Task.sleep(for: .seconds(3))
        // Whatever happens below, the next tests need the server back.
        defer { #expect(throws: Never.self) { try SoundServerControl.run("start") } }
        // Frozen, PulseAudio never answers the cork; killed, it never will. (PipeWire's pipewire-pulse still
        // answers, with a reading as of the freeze.)
        try SoundServerControl.run("freeze")
        let beforeCork = try #require(stream.heardRingFrame())
        try stream.cork()
        try SoundServerControl.run("kill")
        let failed = await notices.waitFor(.seconds(5)) {
            if case .failed = $0 { return true }
            return false
        }
        #expect(failed != nil, "the connection did not fail: \(notices.all)")
        let kept = try #require(stream.heardRingFrame(), "no heard position after the server died")
        let distance = Double(kept - beforeCork) / Double(testRate)
        print("[measure] cork on its way at a server death: kept minus heard before the cork \(distance * 1000) ms")
        let tolerance = 0.02 + (try TestEnvironment.serverPeriodSeconds())
        #expect(abs(distance) <= tolerance, "kept \(distance * 1000) ms from the position heard before the cork")
    }
}
