// The stream's real-time path and its stall watchdog (see PlaybackStream.swift).
//
// The write callback is the real-time path: it runs whenever the server asks for data and only copies frames from
// the FrameRing into memory libpulse hands out (pa_stream_begin_write), padding with silence when the decoder is
// late. No allocation, no locks beyond the mainloop lock libpulse already holds, no logging, no strings.
// RealtimePathTests proves it on a real server: a `WriteCallbackProbe` lets the test count heap and lock calls on
// libpulse's thread while exactly this callback body runs (the libpulse calls it makes included). The buffering
// choices (tlength, minreq, prebuf) are explained at the top of PlaybackStream.swift.
//
// Stall watchdog: besides copying, the write callback only stores the time of the request and adds the requested
// frames to a counter (one relaxed atomic store, one relaxed atomic add; clock_gettime goes through the vDSO). The
// owner polls `isStalled()` (or `requestSilence()`) from its own tick: a stream that is playing (uncorked, and the
// server acknowledged it) but that the server has not asked for data for several periods is stalled. On PipeWire
// the graph can stop driving a stream with no callback at all (a node left unlinked, a stuck driver); this is how
// the owner learns that nothing is heard any more.

import CPulse

#if canImport(Glibc)
import Glibc
#endif

extension PlaybackStream {
    // MARK: - Stall watchdog

    /// CLOCK_MONOTONIC now, in nanoseconds: the clock of `lastRequestUptimeNanoseconds` (and of the service's
    /// `monotonicMoment()`).
    public static func uptimeNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// CLOCK_MONOTONIC nanoseconds (`PlaybackStream.uptimeNanoseconds()`) of the server's last request for data; 0
    /// before the first. Lock-free: the write callback stores it.
    public var lastRequestUptimeNanoseconds: UInt64 {
        lastRequestNanoseconds.load(ordering: .relaxed)
    }

    /// Frames the server has asked for in all (the sum of every write callback's request). Lock-free. While playing
    /// it grows by about the sample rate every second; a value that stands still means the server stopped asking.
    public var framesRequestedTotal: Int {
        framesRequested.load(ordering: .relaxed)
    }

    /// How often the server asks for data while playing, at the least: the granted minimum request (minreq) as a
    /// duration. PulseAudio asks about once per minreq (12.5 ms for the default 50 ms target); pipewire-pulse asks
    /// once per graph cycle instead (1024 frames, 21.3 ms, on PipeWire 0.3.65's defaults). nil before ready.
    public var requestPeriod: Duration? {
        guard let metrics = bufferMetrics, metrics.minimumRequestBytes > 0, sampleRate > 0 else { return nil }
        let frames = metrics.minimumRequestBytes / Self.bytesPerFrame
        return .nanoseconds(Int64(frames) * 1_000_000_000 / Int64(sampleRate))
    }

    /// How long the server has not asked for data although it should: the time since its last request. nil when no
    /// request is due: not ready, corked or not yet acknowledged as uncorked, not yet asked once since the uncork
    /// (the sink is still starting), draining, or at the end of the data (a stream that has run
    /// out is legitimately asked for nothing more).
    ///
    /// Meant to be polled from the owner's periodic tick (every 50 ms is plenty), never from a notice handler.
    public func requestSilence(atUptimeNanoseconds now: UInt64 = PlaybackStream.uptimeNanoseconds()) -> Duration? {
        connection.withLock { () -> Duration? in
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
                !desiredCorked, !acknowledgedCorked, !draining,
                !endOfData.load(ordering: .acquiring), !awaitingRefill.load(ordering: .acquiring),
                playingSinceNanoseconds > 0
            else { return nil }
            // Until the server has asked once since the uncork, the sink is still starting (a suspended device, an
            // idle null sink, a Bluetooth link waking up can take seconds): that is not a stall.
            let lastRequest = lastRequestNanoseconds.load(ordering: .relaxed)
            guard lastRequest > playingSinceNanoseconds else { return nil }
            return .nanoseconds(Int64(now > lastRequest ? now - lastRequest : 0))
        }
    }

    /// The stall watchdog: true when the stream should be playing (see `requestSilence()`) but the server has asked
    /// for no data for more than `periods` request periods, and for at least `minimum`.
    ///
    /// Intended use: the owner's tick (every 50 ms) turns a true into "output lost" (cork, flush, keep the heard
    /// position), as for an unplug. The defaults (4 periods, at least 200 ms) stay far above the largest gap between
    /// requests in normal playback (14 ms on PulseAudio 16.1, 21.5 ms on PipeWire 0.3.65); a frozen server is
    /// reported 180-200 ms after its last request. When requests come back the server first reports `.underflow`,
    /// then `.started`.
    public func isStalled(periods: Int = 4, minimum: Duration = .milliseconds(200)) -> Bool {
        guard let silence = requestSilence() else { return false }
        let period = requestPeriod ?? .milliseconds(max(targetLatencyMilliseconds, 1))
        return silence > max(period * periods, minimum)
    }


    // MARK: - The write callback (mainloop thread, lock held)

    /// The watchdog's part of the write callback: one relaxed atomic store and one relaxed atomic add, nothing else.
    func noteRequest(bytes: Int) {
        lastRequestNanoseconds.store(PlaybackStream.uptimeNanoseconds(), ordering: .relaxed)
        framesRequested.add(bytes / Self.bytesPerFrame, ordering: .relaxed)
    }

    /// The write callback's work. Real-time path: copies only; no allocation, no locks, no logging, no strings.
    func supply(_ stream: OpaquePointer, requestedBytes: Int) {
        let frameBytes = Self.bytesPerFrame
        // Silence keeps a playing stream going while the decoder is late. Not while corked (the owner will top up
        // at uncork), not at the end of the data (the tail must be allowed to run out and drain), not right after a
        // flush until the ring is refilled (the owner tops up then).
        let padsWithSilence = !desiredCorked && !draining && !endOfData.load(ordering: .acquiring)
            && !awaitingRefill.load(ordering: .acquiring)
        var remainingFrames = requestedBytes / frameBytes
        var paddedSilence = false
        while remainingFrames > 0 {
            var memory: UnsafeMutableRawPointer?
            var size = remainingFrames * frameBytes
            guard pa_stream_begin_write(stream, &memory, &size) == 0, let memory, size >= frameBytes else {
                return
            }
            let frames = min(remainingFrames, size / frameBytes)
            // Nothing while a reposition waits for the decoder's answer, and never a frame from before the new
            // position's start (FrameRing's generations): a few more atomic loads, at most one store and one
            // sem_post, as for any read.
            let copied = ring.copyOut(to: memory, maxFrames: frames)
            var written = copied
            if copied < frames && padsWithSilence {
                (memory + copied * frameBytes).initializeMemory(
                    as: UInt8.self, repeating: 0, count: (frames - copied) * frameBytes)
                written = frames
                paddedSilence = true
            }
            guard written > 0 else {
                pa_stream_cancel_write(stream)
                break
            }
            pa_stream_write(stream, memory, written * frameBytes, nil, 0, PA_SEEK_RELATIVE)
            remainingFrames -= written
            if written < frames { break }
        }
        if paddedSilence {
            underruns.add(1, ordering: .relaxed)
        }
    }

    /// The server's underflow event: counted unless the stream was meant to run out (corked, draining, at the end of
    /// the data), then delivered.
    func serverRanDry() {
        if !desiredCorked && !draining && !endOfData.load(ordering: .acquiring)
            && !awaitingRefill.load(ordering: .acquiring) {
            serverUnderflows.add(1, ordering: .relaxed)
        }
        deliver(.underflow)
    }

    /// Fills the server's buffer as far as it asks, so that an uncork starts at once.
    func topUpLocked() {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        let writable = pa_stream_writable_size(stream)
        // (size_t) -1 means error.
        if writable > 0 && writable != Int.max && writable != -1 {
            supply(stream, requestedBytes: writable)
        }
    }
}
