// What the stream reports of itself (see PlaybackStream.swift): the position the listener has heard, its latency,
// its counters, the sink it plays on and the buffer the server granted. Each read takes the mainloop lock briefly and
// never waits for the server.
//
// The clock between readings is the stream's own. Each timing reading the server sends says how far behind our
// writes the listener was at a moment (its read index less the sink's latency, at the reading's timestamp); from
// there the position runs on at exactly the nominal rate, by CLOCK_MONOTONIC, while the reading says the server was
// playing, up to now or to the cork asked for since, and never past the last frame written (a server that ran out of our data
// stands at its end). libpulse's INTERPOLATE_TIMING is not used: its smoother fits a slope to the last readings
// and needs several of them after each start before it holds, so with readings once a second it ran ahead of what
// was heard (up to 625 ms at a server kill) and behind after a `next` (0.18 s of progress in a second), which forced
// a reading every 200 ms, five wake-ups of the mainloop thread a second, most of its CPU. A sink's clock and ours
// differ by parts per million, so a straight line from one reading is exact to well under a millisecond over
// seconds; what a straight line cannot know (a start, an underflow, a flush, a move, a cork) the server announces,
// and each announcement asks for a fresh reading at once.
//
// Readings are asked for only while the stream plays: a timer starts at each acknowledged uncork, every
// `timingInterval` (5 s) once a reading has said that the server plays and every 200 ms until then, and stops at the
// cork; single requests follow the events that change the server's distance from our writes (ready, flush, started,
// underflow, a move, a suspended sink, new buffer sizes) and the cork itself (`.corked` is delivered with that
// answer). A paused stream causes no traffic at all; libpulse's own automatic updates, which this replaces, also ran
// while corked, every 1.5 s or so.

import CPulse

#if canImport(Glibc)
import Glibc
#endif

extension PlaybackStream {
    // MARK: - State

    /// The last ring frame that has been heard: `ring.totalFramesRead` (frames handed to the server) minus the
    /// frames still queued in the server and the sink (the last timing reading run on to now, see the top), clamped
    /// at 0 and at the last flush point. nil before the server has reported timing. After the connection failed
    /// (the server died), the value read at the moment it failed.
    ///
    /// Silence padded on an underrun is queued like audio but does not come from the ring, so while padded silence
    /// is still queued the value is an underestimate (by at most the buffer length): resuming from it replays a
    /// little, never skips audio. This is the position a pause reports as "the last frame heard".
    public func heardRingFrame() -> Int? {
        connection.withLock { heardLocked() }
    }

    /// The stream's current latency (queued audio, server and sink), in milliseconds; negative after the server ran
    /// past our data. nil before the server has reported timing.
    public var latencyMilliseconds: Double? {
        connection.withLock {
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
                let microseconds = latencyMicrosecondsLocked(stream)
            else { return nil }
            return Double(microseconds) / 1000
        }
    }

    /// How many times the write callback found the ring short while playing and padded with silence.
    public var underrunCount: Int {
        underruns.load(ordering: .relaxed)
    }

    /// How many times the server reported that it ran out of our data (underflow) while the stream was meant to keep
    /// playing: not corked, not draining, not at the end of the data. The server's view of underruns: each one is a
    /// gap the listener heard, whether the ring was short or the write callback came too late.
    public var serverUnderflowCount: Int {
        serverUnderflows.load(ordering: .relaxed)
    }

    /// Whether the server has acknowledged that the stream is corked (the actual state, not the wish).
    public var isCorked: Bool {
        connection.withLock { acknowledgedCorked }
    }

    /// Whether a flush waits for the ring to be refilled before silence is padded again (`flush(refillFirst:)`, until
    /// `refilled()` or `uncork()`).
    public var isAwaitingRefill: Bool {
        awaitingRefill.load(ordering: .acquiring)
    }

    /// The name of the sink the stream plays on, as last reported.
    public var sinkName: String? {
        connection.withLock { currentSinkName }
    }

    /// The index of the sink the stream plays on, as last reported.
    public var sinkIndex: UInt32? {
        connection.withLock { currentSinkIndex }
    }

    /// Our sink input's index on the server, once ready.
    public var sinkInputIndex: UInt32? {
        connection.withLock { currentSinkInputIndex }
    }

    /// The buffer sizes the server granted, once ready.
    public var bufferMetrics: BufferMetrics? {
        connection.withLock {
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
                let attributes = pa_stream_get_buffer_attr(stream)
            else { return nil }
            return BufferMetrics(
                targetLengthBytes: Int(attributes.pointee.tlength),
                prebufferBytes: Int(attributes.pointee.prebuf),
                minimumRequestBytes: Int(attributes.pointee.minreq),
                maximumLengthBytes: Int(attributes.pointee.maxlength)
            )
        }
    }

    // MARK: - Internals (lock held)

    func heardLocked() -> Int? {
        guard let stream else { return nil }
        // Failed with its connection: the timing is gone, and the reading taken as the connection failed is the
        // last word on what was heard.
        guard pa_stream_get_state(stream) == PA_STREAM_READY else { return heardAtConnectionLoss }
        let read = ring.totalFramesRead
        guard let microseconds = latencyMicrosecondsLocked(stream) else {
            // Right after a flush libpulse has no timing yet; nothing read since can have been heard.
            return read == readAtFlush && readAtFlush > 0 ? heardAtFlush : nil
        }
        // Negative: the server played past our data, so everything we handed over has been heard.
        let queued = microseconds <= 0 ? 0 : Int(UInt64(microseconds) * UInt64(sampleRate) / 1_000_000)
        let heard = max(0, read - queued)
        // Right after a flush the server reports a latency of exactly 0 while nothing new has played: up to and
        // including the flush point, the last frame heard is the one from before the flush.
        return heard <= readAtFlush ? heardAtFlush : heard
    }

    /// Microseconds of audio between the last frame written and the listener now, negative when the server has run
    /// past our data; nil without a valid reading (none yet, or a flush since). The reading's own latency
    /// (`pa_stream_get_latency` without interpolation: the write index, which libpulse keeps current as we write,
    /// less where the reading put the listener), less the time since the reading while it says the server plays.
    /// Once a cork is asked for, the time counts only up to that request: the server played on until then, and the
    /// reading the cork asks for says the rest (before, the clock stopped at the last reading, up to
    /// `timingInterval` earlier, which is what a server dying before that reading left as the heard position). Lock
    /// held.
    func latencyMicrosecondsLocked(_ stream: OpaquePointer) -> Int64? {
        var microseconds: pa_usec_t = 0
        var negative: Int32 = 0
        guard pa_stream_get_latency(stream, &microseconds, &negative) == 0 else { return nil }
        let atReading = negative != 0 ? -Int64(clamping: microseconds) : Int64(clamping: microseconds)
        guard timingReadNanoseconds > 0, let info = pa_stream_get_timing_info(stream), info.pointee.playing != 0
        else { return atReading }
        let end = desiredCorked ? corkRequestedNanoseconds : PlaybackStream.uptimeNanoseconds()
        let elapsed = end > timingReadNanoseconds ? Int64((end - timingReadNanoseconds) / 1000) : 0
        return atReading - elapsed
    }

    /// A timing reading arrived: records, on CLOCK_MONOTONIC, the moment it describes. libpulse stamps it with the
    /// wall clock (the server's time of the reading, plus the request's transport time, which libpulse's own
    /// position adds too); its age now on the wall clock is taken off the monotonic now, so that a later change of
    /// the wall clock cannot move the position. Lock held (the latency-update callback).
    func timingArrived(_ stream: OpaquePointer) {
        let now = PlaybackStream.uptimeNanoseconds()
        guard let info = pa_stream_get_timing_info(stream) else { return }
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let wallMicroseconds = Int64(wall.tv_sec) * 1_000_000 + Int64(wall.tv_nsec) / 1000
        let stamp = info.pointee.timestamp
        let readingMicroseconds = Int64(stamp.tv_sec) * 1_000_000 + Int64(stamp.tv_usec)
            + Int64(clamping: info.pointee.transport_usec)
        // A reading is well under a millisecond old when it is read here (more when this thread was kept waiting);
        // a wall clock stepped since it was taken could make its age anything, so it is bounded.
        let age = UInt64(min(max(wallMicroseconds - readingMicroseconds, 0), 500_000)) * 1000
        timingReadNanoseconds = now > age ? now - age : 1
        if info.pointee.playing == 0 { hastenTimingLocked() }
    }

    // MARK: - Timing requests (lock held)

    /// How often a playing stream asks for timing, in microseconds, once the server has said that it plays: a check
    /// on the straight line's drift (a sink's clock against ours, parts per million), since every event that bends
    /// the line asks for a reading of its own.
    static let timingInterval: pa_usec_t = 5_000_000
    /// How often it asks while the last reading said that the server does not play yet (an uncork the sink has not
    /// acted on, a sink waking up), so that the clock starts running within that much of the sound.
    static let startingTimingInterval: pa_usec_t = 200_000

    /// Asks the server for its timing once; `timingArrived` notes the answer. Lock held.
    func requestTimingLocked() {
        guard let stream, isReadyLocked else { return }
        track(pa_stream_update_timing_info(stream, nil, nil))
    }

    /// Asks for timing now and then on the timer, while playing. Lock held.
    func startTimingUpdatesLocked() {
        guard let context = connection.context, isReadyLocked else { return }
        requestTimingLocked()
        timingTimerArmed = true
        let due = pa_rtclock_now() + Self.timingInterval
        if let timingTimer {
            pa_context_rttime_restart(context, timingTimer, due)
            return
        }
        timingTimer = pa_context_rttime_new(context, due, { _, _, _, userdata in
            PlaybackStream.owner(userdata)?.timingTimerFired()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Disables the timer (kept for the next uncork). Lock held.
    func stopTimingUpdatesLocked() {
        timingTimerArmed = false
        guard let timingTimer, let context = connection.context else { return }
        // An invalid time (PA_USEC_INVALID, all ones) disables a libpulse timer.
        pa_context_rttime_restart(context, timingTimer, pa_usec_t.max)
    }

    /// Frees the timer; at close, so its callback never runs for a stream that is gone. Lock held.
    func freeTimingTimerLocked() {
        timingTimerArmed = false
        guard let timingTimer else { return }
        self.timingTimer = nil
        pa_threaded_mainloop_get_api(connection.mainloop)?.pointee.time_free(timingTimer)
    }

    /// A reading that says the server does not play a stream we play: the next one is due soon. Lock held.
    func hastenTimingLocked() {
        guard timingTimerArmed, !desiredCorked, let timingTimer, let context = connection.context else { return }
        pa_context_rttime_restart(context, timingTimer, pa_rtclock_now() + Self.startingTimingInterval)
    }

    private func timingTimerFired() {
        guard let timingTimer, let context = connection.context, isReadyLocked, !acknowledgedCorked else { return }
        requestTimingLocked()
        pa_context_rttime_restart(context, timingTimer, pa_rtclock_now() + Self.timingInterval)
    }
}
