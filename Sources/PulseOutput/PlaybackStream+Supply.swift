// The stream's real-time path and its stall watchdog (see PlaybackStream.swift).
//
// The write callback is the real-time path: it runs whenever the server asks for data and only copies frames from
// the FrameRing into memory libpulse hands out (pa_stream_begin_write), padding with silence when the decoder is
// late. No allocation, no locks beyond the mainloop lock libpulse already holds, no logging, no strings.
// RealtimePathTests proves it on a real server: a `WriteCallbackProbe` lets the test count heap and lock calls on
// libpulse's thread while exactly this callback body runs (the libpulse calls it makes included). The buffering
// choices (tlength, minreq, prebuf) are explained at the top of PlaybackStream.swift.
//
// Stall watchdog: besides copying, the write callback only stores the time of the request, adds the requested
// frames to a counter (one relaxed atomic store, one relaxed atomic add; clock_gettime goes through the vDSO) and
// moves the silence alarm's timer on (`noteRequest`). That alarm, a timer on libpulse's thread that the owner sets
// while it plays, delivers `.requestsStopped` when a stream that should be playing (uncorked, and the server
// acknowledged it) has not been asked for data for the alarm's length; the owner then measures `requestSilence()`,
// and its rules judge whether that is a stall. When the timer runs out with no request due (corked, starting,
// draining), it is set again for later. On PipeWire the graph can stop driving a stream with no callback at all (a
// node left unlinked, a stuck driver); this is how the owner learns that nothing is heard any more.

import CPulse
import EarshotCore

#if canImport(Glibc)
import Glibc
#endif

extension PlaybackStream {
    // MARK: - Stall watchdog

    /// CLOCK_MONOTONIC now, in nanoseconds: the clock of `lastRequestUptimeNanoseconds`.
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
        connection.withLock { requestSilenceLocked(atUptimeNanoseconds: now).map { .nanoseconds(Int64($0)) } }
    }

    /// `requestSilence()` in nanoseconds. Lock held.
    func requestSilenceLocked(atUptimeNanoseconds now: UInt64) -> UInt64? {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
            !desiredCorked, !acknowledgedCorked, !draining,
            !endOfData.load(ordering: .acquiring), !awaitingRefill.load(ordering: .acquiring),
            playingSinceNanoseconds > 0
        else { return nil }
        // Until the server has asked once since the uncork, the sink is still starting (a suspended device, an
        // idle null sink, a Bluetooth link waking up can take seconds): that is not a stall.
        let lastRequest = lastRequestNanoseconds.load(ordering: .relaxed)
        guard lastRequest > playingSinceNanoseconds else { return nil }
        return now > lastRequest ? now - lastRequest : 0
    }

    // MARK: - The silence alarm

    /// Asks for `.requestsStopped` once the server has asked for nothing for `after` while a request is due (see
    /// `requestSilence()`), and again every `after` while that lasts; nil stops asking (the owner sets it while
    /// playing, for the rules' stall threshold). The alarm is a timer on libpulse's thread, which wakes anyway for
    /// the server's requests, so the owner no longer wakes about once a second only to find that they still come
    /// (those ticks, and the lock they took, were a quarter of the process's CPU while playing).
    public func setSilenceAlarm(after: Duration?) {
        connection.withLock {
            silenceAlarmNanoseconds = after.map { UInt64(max(Self.nanoseconds(of: $0), 1)) }
            armSilenceAlarmLocked(now: Self.uptimeNanoseconds())
        }
    }

    /// `duration` in whole nanoseconds.
    static func nanoseconds(of duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
    }

    /// Sets the alarm's timer for the moment the silence would reach the alarm, or disables it. Lock held.
    func armSilenceAlarmLocked(now: UInt64) {
        guard let context = connection.context else { return }
        guard let alarm = silenceAlarmNanoseconds else {
            // An invalid time (PA_USEC_INVALID, all ones) disables a libpulse timer.
            if let silenceTimer { pa_context_rttime_restart(context, silenceTimer, pa_usec_t.max) }
            return
        }
        // While a request is due, at the last request plus the alarm; otherwise (corked, starting, draining) look
        // again an alarm's length from now. pa_rtclock is CLOCK_MONOTONIC, the clock of our nanoseconds.
        var due = now + alarm
        if let silence = requestSilenceLocked(atUptimeNanoseconds: now), silence < alarm { due = now - silence + alarm }
        let dueMicroseconds = pa_usec_t(due / 1000) + 1
        if let silenceTimer {
            pa_context_rttime_restart(context, silenceTimer, dueMicroseconds)
            return
        }
        silenceTimerContext = context
        silenceTimer = pa_context_rttime_new(context, dueMicroseconds, { _, _, _, userdata in
            PlaybackStream.owner(userdata)?.silenceAlarmFired()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Frees the alarm's timer; at close, so its callback never runs for a stream that is gone. Lock held.
    func freeSilenceTimerLocked() {
        silenceAlarmNanoseconds = nil
        guard let silenceTimer else { return }
        self.silenceTimer = nil
        silenceTimerContext = nil
        pa_threaded_mainloop_get_api(connection.mainloop)?.pointee.time_free(silenceTimer)
    }

    /// The alarm's timer ran out (libpulse's thread, lock held): a silence as long as the alarm is reported, and the
    /// timer set again either way. Whether the silence is a stall is not the stream's to say.
    private func silenceAlarmFired() {
        guard let alarm = silenceAlarmNanoseconds else { return }
        let now = Self.uptimeNanoseconds()
        if let silence = requestSilenceLocked(atUptimeNanoseconds: now), silence >= alarm {
            deliver(.requestsStopped)
            if let context = connection.context, let silenceTimer {
                pa_context_rttime_restart(context, silenceTimer, pa_usec_t((now + alarm) / 1000) + 1)
            }
            return
        }
        armSilenceAlarmLocked(now: now)
    }

    /// The stall watchdog's measure, asked at once: true when the stream should be playing (see `requestSilence()`)
    /// but the server has asked for no data for more than `periods` request periods, and for at least `minimum`.
    ///
    /// The service does not ask it: the silence alarm delivers `.requestsStopped`, the owner measures
    /// `requestSilence()`, and the rules judge the silence by `StallRule` (3 periods, at least a second, since a
    /// loaded machine's server was seen to pause for over half a second and carry on). The integration tests ask it
    /// while they freeze the server: the shorter default minimum (200 ms) stays far above the largest gap between
    /// requests in normal playback (14 ms on PulseAudio 16.1, 21.5 ms on PipeWire 0.3.65), so a frozen server is
    /// reported about 200 ms after its last request.
    public func isStalled(periods: Int = StallRule.periods, minimum: Duration = .milliseconds(200)) -> Bool {
        guard let silence = requestSilence() else { return false }
        let period = requestPeriod ?? .milliseconds(max(targetLatencyMilliseconds, 1))
        return silence > max(period * periods, minimum)
    }


    // MARK: - The write callback (mainloop thread, lock held)

    /// The watchdog's part of the write callback: one relaxed atomic store, one relaxed atomic add, and the silence
    /// alarm moved to an alarm's length after this request (libpulse's timer restart: a few stores and one byte
    /// written to the mainloop's own wake-up pipe, no allocation, no lock, no wait). Moved here, the alarm never runs
    /// out while the server keeps asking; left to run out and set again, it woke libpulse's thread once more a second
    /// (about 10 ms of CPU a minute).
    func noteRequest(bytes: Int) {
        let now = PlaybackStream.uptimeNanoseconds()
        lastRequestNanoseconds.store(now, ordering: .relaxed)
        framesRequested.add(bytes / Self.bytesPerFrame, ordering: .relaxed)
        if let silenceTimer, let silenceTimerContext, let alarm = silenceAlarmNanoseconds {
            pa_context_rttime_restart(silenceTimerContext, silenceTimer, pa_usec_t((now + alarm) / 1000) + 1)
        }
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
