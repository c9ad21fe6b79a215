// What the server tells the stream, translated into notices (see PlaybackStream.swift). These run on the libpulse
// thread with the lock held (see "A note on threading" in PulseConnection.swift): they record what the server said
// and deliver it, and decide nothing. In particular a move, even off a sink that is gone, is only reported: whether
// to cork is the owner's decision, through its rules.

import CPulse

extension PlaybackStream {
    /// Registers the stream's callbacks; `closeLocked()` clears them. Lock held.
    func installCallbacks(on stream: OpaquePointer) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        pa_stream_set_state_callback(stream, { stream, userdata in
            guard let stream else { return }
            PlaybackStream.owner(userdata)?.stateChanged(stream)
        }, me)
        pa_stream_set_write_callback(stream, { stream, requestedBytes, userdata in
            guard let stream, let userdata else { return }
            // Guaranteed reference: the stream outlives its callbacks (close() clears them), so the real-time
            // path does no retain/release on the owner.
            Unmanaged<PlaybackStream>.fromOpaque(userdata)._withUnsafeGuaranteedRef { owner in
                owner.writeProbe?.entered()
                owner.noteRequest(bytes: requestedBytes)
                owner.supply(stream, requestedBytes: requestedBytes)
                owner.writeProbe?.left()
            }
        }, me)
        pa_stream_set_moved_callback(stream, { stream, userdata in
            guard let stream else { return }
            PlaybackStream.owner(userdata)?.moved(stream)
        }, me)
        pa_stream_set_event_callback(stream, { _, name, _, userdata in
            PlaybackStream.owner(userdata)?.serverEvent(name)
        }, me)
        // Started, underflow and a move change how far the server is behind our writes: fresh timing follows each.
        pa_stream_set_started_callback(stream, { _, userdata in
            guard let owner = PlaybackStream.owner(userdata) else { return }
            owner.requestTimingLocked()
            owner.deliver(.started)
        }, me)
        pa_stream_set_underflow_callback(stream, { _, userdata in
            guard let owner = PlaybackStream.owner(userdata) else { return }
            owner.requestTimingLocked()
            owner.serverRanDry()
        }, me)
        // A sink suspended or resumed under the stream, or buffer sizes the server changed: the listener's distance
        // from our writes changed with no other notice.
        pa_stream_set_suspended_callback(stream, { _, userdata in
            PlaybackStream.owner(userdata)?.requestTimingLocked()
        }, me)
        pa_stream_set_buffer_attr_callback(stream, { _, userdata in
            PlaybackStream.owner(userdata)?.requestTimingLocked()
        }, me)
        // Every timing reading the server sends (all of them asked for by the stream, see +Timing).
        pa_stream_set_latency_update_callback(stream, { stream, userdata in
            guard let stream else { return }
            PlaybackStream.owner(userdata)?.timingArrived(stream)
        }, me)
    }

    /// Called by the connection's state callback when the connection fails (the server died), before libpulse fails
    /// the connection's streams: the stream is still ready and its timing still readable, for the last
    /// time. What it says is kept for `heardRingFrame()`, so that the owner learns what the listener heard up to the
    /// moment the server went away, not up to its last poll. Lock held.
    func connectionIsFailing() {
        heardAtConnectionLoss = heardLocked()
    }

    private func stateChanged(_ stream: OpaquePointer) {
        switch pa_stream_get_state(stream) {
        case PA_STREAM_READY:
            currentSinkIndex = validIndex(pa_stream_get_device_index(stream))
            currentSinkName = string(pa_stream_get_device_name(stream))
            currentSinkInputIndex = validIndex(pa_stream_get_index(stream))
            // One reading while still corked, so the position is known before anything plays.
            requestTimingLocked()
            deliver(.ready(sinkName: currentSinkName, sinkInputIndex: currentSinkInputIndex))
        case PA_STREAM_FAILED:
            let error = PulseError.lastError(of: connection.context, step: "stream")
            deliver(error.code == .killed ? .killed : .failed(error))
        default:
            break
        }
    }

    private func moved(_ stream: OpaquePointer) {
        let oldSinkIndex = currentSinkIndex
        requestTimingLocked()
        currentSinkIndex = validIndex(pa_stream_get_device_index(stream))
        currentSinkName = string(pa_stream_get_device_name(stream))
        guard let oldSinkIndex, let context = connection.context else {
            // Unknown origin is never permission to play: report it like a lost output.
            deliver(.moved(toSinkName: currentSinkName, oldSinkStillExists: false))
            return
        }
        // On PulseAudio the old sink is already gone when this callback runs for an unplug ("No such entity").
        track(pa_context_get_sink_info_by_index(context, oldSinkIndex, { _, info, endOfList, userdata in
            guard let stream = PlaybackStream.owner(userdata) else { return }
            // Success calls back twice (the info, then the end of the list); failure once, with a negative end.
            if let info {
                stream.deliver(.leftSink(SinkSnapshot(info.pointee)))
                stream.deliver(.moved(toSinkName: stream.currentSinkName, oldSinkStillExists: true))
            } else if endOfList < 0 {
                stream.deliver(.moved(toSinkName: stream.currentSinkName, oldSinkStillExists: false))
            }
        }, Unmanaged.passUnretained(self).toOpaque()))
    }

    private func serverEvent(_ name: UnsafePointer<CChar>?) {
        guard let name else {
            deliver(.unknownEvent)
            return
        }
        let event = String(cString: name)
        if event == PA_STREAM_EVENT_REQUEST_CORK {
            deliver(.corkRequested)
        } else if event == PA_STREAM_EVENT_REQUEST_UNCORK {
            deliver(.uncorkRequested)
        } else {
            deliver(.unknownEvent)
        }
    }
}
