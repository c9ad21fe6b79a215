// The stream's commands (see PlaybackStream.swift). None of them waits: each takes the mainloop lock, does its local
// bookkeeping, sends its request and returns. The server's answer comes to the operation's callback on the libpulse
// thread, which delivers it as a notice (`.corked`, `.uncorked`, `.flushed`, `.applied`, `.commandFailed`), so it
// reaches the owner through its inbox like anything else the server says. A command throws only when it cannot be
// sent at all (the stream is not ready, libpulse refused it); then nothing was sent and no notice follows.
//
// Each operation's userdata is the stream, unretained: the operations are kept in `pendingOperations` and cancelled
// in `closeLocked()`, and libpulse cancels a stream's own operations when it fails, so no callback runs after the
// stream is gone.

import CPulse

extension PlaybackStream {
    /// Asks the server to pause playback (queued audio is kept) and returns; `.corked` follows, or
    /// `.commandFailed(.cork)`. Safe to repeat. `.corked` comes once the server has also sent its timing as of the
    /// cork, so `heardRingFrame()` read on `.corked` is what the server played, not a clock run on from an earlier
    /// reading (while the server may already have stopped playing the stream, e.g. its sink removed).
    public func cork() throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            // The wish first: the write callback stops padding silence even before the server confirms.
            if !desiredCorked { corkRequestedNanoseconds = PlaybackStream.uptimeNanoseconds() }
            desiredCorked = true
            try sendCork(true)
        }
    }

    /// Asks the server to resume playback and returns; `.uncorked` follows, or `.commandFailed(.uncork)`. Safe to
    /// repeat. Tops the server's buffer up first, so that playback starts at once.
    public func uncork() throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            guard isReadyLocked else { throw PulseError(code: .badState, step: "uncork") }
            desiredCorked = false
            // The owner uncorks once the ring holds audio: a refill a flush waited for is over, and a running stream
            // starts again from here (`refilled()`).
            if awaitingRefill.exchange(false, ordering: .acquiringAndReleasing) { restartSilenceCountLocked() }
            topUpLocked()
            try sendCork(false)
        }
    }

    /// Drops everything queued: the frames still in the ring and the audio in the server's buffer (not yet played).
    /// The local part happens here, under the mainloop lock, before it returns: the ring is emptied (the stream is
    /// its consumer: do not call `ring.discardReadable()` yourself while the stream exists) and the heard position
    /// is kept at the flush point until new audio is heard. The server's part is sent and `.flushed` (or
    /// `.commandFailed(.flush)`) follows. On a stream that is not ready, nothing of ours is queued on the server:
    /// only the local part is done, and no notice follows.
    ///
    /// With `refillFirst`, a running stream pads no silence afterwards until `refilled()` (or `uncork()`): the server
    /// asks for a whole buffer at once after a flush, and padding the ring's shortfall then, right after it was
    /// emptied, would play up to a target latency of silence (a second by default) before the new audio.
    public func flush(refillFirst: Bool = false) {
        connection.withLock {
            if refillFirst && !desiredCorked { awaitingRefill.store(true, ordering: .releasing) }
            let heard = heardLocked()
            _ = ring.discardReadable()
            // Every frame read so far is now either heard or dropped; later frames are numbered from here.
            heardAtFlush = heard ?? max(heardAtFlush, ring.totalFramesRead - targetFrames)
            readAtFlush = ring.totalFramesRead
            cancelDrainLocked()
            draining = false
            // An emptied stream restarts like a new one (prebuffer, a sink that may pause): the stall watchdog
            // waits for its first request again.
            restartSilenceCountLocked()
            guard let stream, isReadyLocked else { return }
            let sent = pa_stream_flush(stream, { _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.flush, success != 0)
            }, Unmanaged.passUnretained(self).toOpaque())
            if sent == nil {
                // Refused at once (the stream is failing): its own failure notice follows.
                deliver(.commandFailed(.flush))
            }
            track(sent)
            // A flush leaves libpulse without a write index until the server next reports timing.
            requestTimingLocked()
        }
    }

    /// Asks the server to play out what is queued, without padding silence, and returns at once: the notice handler
    /// receives `.drained` once all of it has played. Implies end of data. A corked stream drains only when it runs
    /// again; `flush()`, `setEndOfData(false)` or another `drain()` cancel a drain in progress (no `.drained` then).
    public func drain() throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            guard let stream, isReadyLocked else { throw PulseError(code: .badState, step: "drain") }
            cancelDrainLocked()
            draining = true
            drainOperation = pa_stream_drain(stream, { _, success, userdata in
                guard success != 0 else { return }
                PlaybackStream.owner(userdata)?.drainCompleted()
            }, Unmanaged.passUnretained(self).toOpaque())
            guard drainOperation != nil else { throw PulseError.lastError(of: connection.context, step: "drain") }
        }
    }

    /// The ring holds audio again after `flush(refillFirst: true)`: the server's buffer is filled now, and the write
    /// callback pads silence again when the decoder is late.
    ///
    /// The stream starts again here, not at the flush: the server's request after the flush found nothing (we held
    /// the audio back) and it asked for nothing more until this top-up, so its silence since then was ours, not the
    /// server's. A station whose prebuffer comes at the stream's own pace holds it back for seconds (48 KiB at
    /// 64 kbit/s: 6 s), and measured from that request the stall watchdog took the wait for a stalled output.
    public func refilled() {
        guard awaitingRefill.exchange(false, ordering: .acquiringAndReleasing) else { return }
        connection.withLock {
            restartSilenceCountLocked()
            if !desiredCorked { topUpLocked() }
        }
    }

    /// A running stream starts again (a flush, the audio given after a refill or after the end of the data was
    /// withdrawn): the stall watchdog counts no silence until the server's first request from here, as after an
    /// uncork. Lock held.
    func restartSilenceCountLocked() {
        if playingSinceNanoseconds > 0 { playingSinceNanoseconds = PlaybackStream.uptimeNanoseconds() }
    }

    /// Declares (true) or withdraws (false) the end of the data: at the end the write callback writes only what the
    /// ring holds, with no silence, so the stream can run out and drain. Withdrawing it also ends a drain and tops
    /// the server's buffer up when playing, because the server asks no more after it ran out.
    public func setEndOfData(_ isAtEnd: Bool) {
        let wasAtEnd = endOfData.exchange(isAtEnd, ordering: .acquiringAndReleasing)
        guard !isAtEnd else { return }
        connection.withLock {
            cancelDrainLocked()
            draining = false
            // A stream that ran out was asked for nothing more, rightly: its silence until now was ours.
            if wasAtEnd { restartSilenceCountLocked() }
            if !desiredCorked {
                topUpLocked()
            }
        }
    }

    /// Asks the server to set the mute of our sink input and returns; `.applied(.setMute)` follows, or
    /// `.commandFailed(.setMute)`. module-role-cork mutes the streams it corks and only unmutes them when the call
    /// ends, so unmute when resuming during a call.
    public func setMuted(_ muted: Bool) throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            guard let index = currentSinkInputIndex, let context = connection.context, isReadyLocked else {
                throw PulseError(code: .badState, step: "set mute")
            }
            try sent(.setMute, pa_context_set_sink_input_mute(context, index, muted ? 1 : 0, { _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.setMute, success != 0)
            }, Unmanaged.passUnretained(self).toOpaque()))
        }
    }

    /// Asks the server to set our sink input's volume on both channels, in percent of normal (100 = unchanged,
    /// clamped to 0...150), on the server's (cubic) volume scale like mixers, times `gain` (a linear amplitude factor,
    /// 0...1: a fade or a duck under the user's volume), and returns; `.applied(.setVolume)` follows, or
    /// `.commandFailed(.setVolume)`.
    public func setVolume(percent: Int, gain: Double = 1) throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            guard let index = currentSinkInputIndex, let context = connection.context, isReadyLocked else {
                throw PulseError(code: .badState, step: "set volume")
            }
            let normal = UInt64(PA_VOLUME_NORM)
            let user = pa_volume_t(normal * UInt64(min(max(percent, 0), 150)) / 100)
            // The server's volume is cubic; the gain is an amplitude, which libpulse converts to its scale.
            let level = gain >= 1 ? user : pa_sw_volume_multiply(user, pa_sw_volume_from_linear(max(gain, 0)))
            var volume = pa_cvolume()
            pa_cvolume_set(&volume, 2, level)
            try sent(.setVolume, pa_context_set_sink_input_volume(context, index, &volume, { _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.setVolume, success != 0)
            }, Unmanaged.passUnretained(self).toOpaque()))
        }
    }

    /// Asks the server to replace the stream's `media.name` (the track title mixers show) and returns;
    /// `.applied(.updateMediaName)` follows, or `.commandFailed(.updateMediaName)`. The title is never logged.
    public func updateMediaName(_ mediaName: String) throws(PulseError) {
        try connection.withLock { () throws(PulseError) in
            guard let stream, isReadyLocked else { throw PulseError(code: .badState, step: "update media name") }
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, PA_PROP_MEDIA_NAME, mediaName)
            try sent(.updateMediaName, pa_stream_proplist_update(stream, PA_UPDATE_REPLACE, properties, {
                _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.updateMediaName, success != 0)
            }, Unmanaged.passUnretained(self).toOpaque()))
        }
    }

    // MARK: - Internals (lock held)

    /// Whether the stream is connected. Lock held.
    var isReadyLocked: Bool {
        guard let stream else { return false }
        return pa_stream_get_state(stream) == PA_STREAM_READY
    }

    /// The single caller of `pa_stream_cork`, for both directions. Lock held.
    private func sendCork(_ corked: Bool) throws(PulseError) {
        guard let stream, isReadyLocked else { throw PulseError(code: .badState, step: corked ? "cork" : "uncork") }
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Two callbacks, since a C callback captures nothing: each knows which way it went.
        let operation = corked
            ? pa_stream_cork(stream, 1, { _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.cork, success != 0)
            }, me)
            : pa_stream_cork(stream, 0, { _, success, userdata in
                PlaybackStream.owner(userdata)?.acknowledged(.uncork, success != 0)
            }, me)
        try sent(corked ? .cork : .uncork, operation)
    }

    /// Keeps a sent operation to cancel at close, or throws when libpulse refused to send it. Lock held.
    private func sent(_ command: StreamCommand, _ operation: OpaquePointer?) throws(PulseError) {
        guard let operation else { throw PulseError.lastError(of: connection.context, step: command.rawValue) }
        track(operation)
    }

    /// The stream behind an operation's userdata, unretained.
    static func owner(_ userdata: UnsafeMutableRawPointer?) -> PlaybackStream? {
        guard let userdata else { return nil }
        return Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue()
    }

    /// The server answered `command`: records what it confirmed and delivers it. Lock held (an operation callback).
    func acknowledged(_ command: StreamCommand, _ succeeded: Bool) {
        guard succeeded else {
            deliver(.commandFailed(command))
            return
        }
        switch command {
        case .cork:
            acknowledge(corked: true)
            // Report the cork with fresh timing: the server answers this request after the cork, so the position
            // read on `.corked` is where the listener stopped (PipeWire's last timing before it can be off).
            guard let stream, isReadyLocked, let update = pa_stream_update_timing_info(stream, { _, _, userdata in
                PlaybackStream.owner(userdata)?.deliver(.corked)
            }, Unmanaged.passUnretained(self).toOpaque()) else {
                deliver(.corked)
                return
            }
            track(update)
        case .uncork:
            acknowledge(corked: false)
            startTimingUpdatesLocked()
            deliver(.uncorked)
        case .flush:
            deliver(.flushed)
        case .setMute, .setVolume, .updateMediaName:
            deliver(.applied(command))
        }
    }

    /// Records what the server confirmed. Lock held (an operation callback).
    private func acknowledge(corked: Bool) {
        if !corked && acknowledgedCorked {
            playingSinceNanoseconds = PlaybackStream.uptimeNanoseconds()
        } else if corked {
            playingSinceNanoseconds = 0
            stopTimingUpdatesLocked()
        }
        acknowledgedCorked = corked
    }

    /// Cancels the drain in progress, if any, so its completion never arrives. Lock held.
    func cancelDrainLocked() {
        guard let operation = drainOperation else { return }
        drainOperation = nil
        if pa_operation_get_state(operation) == PA_OPERATION_RUNNING { pa_operation_cancel(operation) }
        pa_operation_unref(operation)
    }

    /// The server played out everything queued before `drain()`. Lock held (an operation callback).
    private func drainCompleted() {
        if let operation = drainOperation {
            drainOperation = nil
            pa_operation_unref(operation)
        }
        deliver(.drained)
    }
}
