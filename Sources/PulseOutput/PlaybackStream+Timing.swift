// What the stream reports of itself (see PlaybackStream.swift): the position the listener has heard, its latency,
// its counters, the sink it plays on and the buffer the server granted. Each read takes the mainloop lock briefly and
// never waits for the server: libpulse interpolates the timing between the updates the stream asks for (below).
//
// Timing is asked for only while the stream plays: a timer starts at each acknowledged uncork, every 200 ms, and
// stops at the cork; single requests follow the events that change the server's distance from our writes (ready,
// flush, started, underflow, a move) and the cork itself (`.corked` is delivered with that answer). A paused stream
// causes no traffic at all. The cadence was measured: at once a second libpulse's interpolated position fell behind
// what was heard (playerctl saw 0.04 s of progress in a second), at 200 ms and below it kept up; libpulse's own
// automatic updates, which this replaces, also ran while corked, every 1.5 s or so.

import CPulse

extension PlaybackStream {
    // MARK: - State

    /// The last ring frame that has been heard: `ring.totalFramesRead` (frames handed to the server) minus the
    /// frames still queued in the server and the sink (`pa_stream_get_latency`, interpolated), clamped at 0 and at
    /// the last flush point. nil before the server has reported timing. After the connection failed (the server
    /// died), the value read at the moment it failed.
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
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return nil }
            var microseconds: pa_usec_t = 0
            var negative: Int32 = 0
            guard pa_stream_get_latency(stream, &microseconds, &negative) == 0 else { return nil }
            let value = Double(microseconds) / 1000
            return negative != 0 ? -value : value
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
        var microseconds: pa_usec_t = 0
        var negative: Int32 = 0
        guard pa_stream_get_latency(stream, &microseconds, &negative) == 0 else {
            // Right after a flush libpulse has no timing yet; nothing read since can have been heard.
            return read == readAtFlush && readAtFlush > 0 ? heardAtFlush : nil
        }
        // Negative: the server played past our data, so everything we handed over has been heard.
        let queued = negative != 0 ? 0 : Int(microseconds * UInt64(sampleRate) / 1_000_000)
        let heard = max(0, read - queued)
        // Right after a flush the server reports a latency of exactly 0 while nothing new has played: up to and
        // including the flush point, the last frame heard is the one from before the flush.
        return heard <= readAtFlush ? heardAtFlush : heard
    }

    // MARK: - Timing requests (lock held)

    /// How often a playing stream asks for timing, in microseconds.
    static let timingInterval: pa_usec_t = 200_000

    /// Asks the server for its timing once; libpulse records the answer and interpolates from it. Lock held.
    func requestTimingLocked() {
        guard let stream, isReadyLocked else { return }
        track(pa_stream_update_timing_info(stream, nil, nil))
    }

    /// Asks for timing now and then on the timer, while playing. Lock held.
    func startTimingUpdatesLocked() {
        guard let context = connection.context, isReadyLocked else { return }
        requestTimingLocked()
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
        guard let timingTimer, let context = connection.context else { return }
        // An invalid time (PA_USEC_INVALID, all ones) disables a libpulse timer.
        pa_context_rttime_restart(context, timingTimer, pa_usec_t.max)
    }

    /// Frees the timer; at close, so its callback never runs for a stream that is gone. Lock held.
    func freeTimingTimerLocked() {
        guard let timingTimer else { return }
        self.timingTimer = nil
        pa_threaded_mainloop_get_api(connection.mainloop)?.pointee.time_free(timingTimer)
    }

    private func timingTimerFired() {
        guard let timingTimer, let context = connection.context, isReadyLocked, !acknowledgedCorked else { return }
        requestTimingLocked()
        pa_context_rttime_restart(context, timingTimer, pa_rtclock_now() + Self.timingInterval)
    }
}
