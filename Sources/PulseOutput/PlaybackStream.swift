// One playback stream on a PulseConnection. Threading follows "A note on threading" in PulseConnection.swift.
//
// The stream is written in five files: this one (its state, opening and closing it), +Commands (cork, uncork,
// flush, drain and the settings, each sent without waiting, its outcome a notice), +Supply (the write callback and
// the stall watchdog), +Timing (the heard position and what the stream reports of itself) and +Notices (what the
// server tells the stream). Its stored state is internal rather than private so the extensions can reach it; nothing
// outside PulseOutput can.
//
// The stream never waits and never acts on its own: a command is sent under the mainloop lock and returns; the
// server's answer arrives as a notice. A move or the removal of its sink is only reported; the owner decides.
//
// Buffering: tlength is the target latency (the configuration's, 1000 ms by default) and ADJUST_LATENCY makes the
// server size the sink's buffer from it, so little of our audio can be queued anywhere when the output changes
// (libpulse's default tlength of about 2 s would all play on the next sink). minreq is a third of tlength: at the
// default 1000 ms the server asks every 333 ms and keeps (1000 - 2 x 333) / 2 = 167 ms in the sink. A quarter (250 ms
// requests, 250 ms in the sink) woke libpulse's thread a third more often for the same audio (4 requests a second
// instead of 3; its CPU while playing went from 0.31 to 0.24 ms a second, 2026-12-05). prebuf is one minreq, a
// deliberate non-zero choice:
//   - The stream starts corked (START_CORKED). While corked the write callback only copies what the ring holds and
//     never pads, and uncork() first tops the server's buffer up (padding only then) before uncorking, so at uncork
//     there is always at least prebuf queued and playback starts at once; prebuf never delays a start.
//   - prebuf = 0 would also start at once, but it disables the server's own stop on underrun: when the server runs
//     dry (our process stalled) its read index would run past the write index and the late frames would be
//     skipped. With a small prebuf the server pauses instead and resumes as soon as one minreq arrives, so a stall
//     costs a gap, never audio.
// At the end of the queue (`setEndOfData(true)`, or while draining) the callback writes only what is there, so
// the tail plays and `drain()` can complete; prebuf does not hold back a short tail because draining disables it.

import AudioPipeline
import CPulse
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One playback stream: S16LE stereo at a fixed sample rate, fed from a `FrameRing` by libpulse's write callback.
///
/// The stream starts corked. The owner fills the ring from its decoder thread, then calls `uncork()` once the
/// `.ready` notice has arrived. No method waits for the server: each command is sent and returns at once, and its
/// outcome arrives through the notice handler (`.ready`, `.corked`, `.uncorked`, `.flushed`, `.applied`,
/// `.commandFailed`, `.drained`). Every method may also be called from inside a notice handler.
public final class PlaybackStream: @unchecked Sendable {
    // Unchecked Sendable: the `let`s never change; `endOfData` and `underruns` are atomics; every `var` is only
    // read or written with the mainloop lock held (callbacks run with it; methods take it through `connection`).

    /// The connection this stream lives on; kept alive by the stream.
    public let connection: PulseConnection
    /// Where the write callback takes frames from. The stream is the ring's only consumer.
    public let ring: FrameRing
    /// Frames per second.
    public let sampleRate: Int
    /// The requested server-side buffer length, in milliseconds.
    public let targetLatencyMilliseconds: Int

    let noticeHandler: @Sendable (StreamNotice) -> Void
    /// Called around the write callback's body; nil outside tests.
    let writeProbe: WriteCallbackProbe?
    /// Set by the owner when nothing more will be written: the write callback then stops padding with silence.
    /// Set by a flush that asked for a refill first (`flush(refillFirst:)`): until `refilled()` or `uncork()`, the
    /// write callback writes only what the ring holds, with no silence.
    let awaitingRefill = Atomic<Bool>(false)
    let endOfData = Atomic<Bool>(false)
    /// How many write callbacks found the ring short while playing and padded with silence.
    let underruns = Atomic<Int>(0)
    /// How many times the server ran out of our data while we meant to keep playing (its underflow event).
    let serverUnderflows = Atomic<Int>(0)
    /// CLOCK_MONOTONIC nanoseconds of the server's last request for data (write callback); 0 before the first.
    let lastRequestNanoseconds = Atomic<UInt64>(0)
    /// Frames the server has asked for in all, over every write callback.
    let framesRequested = Atomic<Int>(0)

    var stream: OpaquePointer?
    /// What the owner asked for last (cork() / uncork()).
    var desiredCorked = true
    /// What the server last acknowledged.
    var acknowledgedCorked = true
    /// CLOCK_MONOTONIC nanoseconds of the first cork asked for since the last uncork (0 before any): the server plays
    /// on until it acts on it, so the clock runs up to here while the cork is on its way (+Timing).
    var corkRequestedNanoseconds: UInt64 = 0
    /// CLOCK_MONOTONIC nanoseconds when the server last acknowledged an uncork (0 while corked): the stall watchdog
    /// counts from here when the last request is older, since a corked stream is asked for nothing.
    var playingSinceNanoseconds: UInt64 = 0
    /// drain() is in progress or completed: no silence padding.
    var draining = false
    var currentSinkIndex: UInt32?
    var currentSinkName: String?
    var currentSinkInputIndex: UInt32?
    /// `ring.totalFramesRead` when the server's buffer was last flushed; nothing before it can still be heard.
    var readAtFlush = 0
    /// The last heard frame just before that flush.
    var heardAtFlush = 0
    /// The heard frame read as the connection failed (`connectionIsFailing()`), while the timing was still there.
    var heardAtConnectionLoss: Int?
    /// Operations started with this stream as userdata; cancelled in close() so none outlives it.
    var pendingOperations: [OpaquePointer] = []
    /// The drain in progress (`drain()`), until it completes or is cancelled.
    var drainOperation: OpaquePointer?
    /// The timer that asks the server for timing while the stream plays (+Timing); disabled while corked.
    var timingTimer: OpaquePointer?
    /// The silence alarm's timer (+Supply), and its length; nil while the owner wants no alarm.
    var silenceTimer: OpaquePointer?
    var silenceAlarmNanoseconds: UInt64?
    /// The context the alarm's timer was made on, so the write callback restarts it without reading the connection.
    var silenceTimerContext: OpaquePointer?
    /// CLOCK_MONOTONIC nanoseconds of the moment the server's last timing reading describes (+Timing); 0 before the
    /// first.
    var timingReadNanoseconds: UInt64 = 0
    /// Whether the timing timer runs (from an acknowledged uncork to the cork).
    var timingTimerArmed = false

    /// Creates the stream on `connection` and sends its connection (corked) to `sinkName` or the default sink. Does
    /// not wait: the `.ready` notice says it is connected, `.failed` that the server refused it (no such sink, for
    /// example). Throws only when libpulse refuses at once (no ready connection, an invalid rate or latency).
    ///
    /// - Parameters:
    ///   - connection: a ready connection.
    ///   - sampleRate: frames per second of the ring's audio.
    ///   - ring: interleaved stereo Int16 frames; this stream becomes its only consumer.
    ///   - properties: role, names and icon shown to mixers and policy modules.
    ///   - targetLatencyMilliseconds: the server-side buffer length to ask for.
    ///   - sinkName: the sink to play on, or nil for the server's default.
    ///   - writeProbe: for tests only: functions called around the write callback's body (see `WriteCallbackProbe`).
    ///   - noticeHandler: called on the libpulse thread with the lock held; must return quickly (hand the notice to
    ///     your own serial owner). It may call this stream's methods, none of which waits.
    public init(
        connection: PulseConnection,
        sampleRate: Int,
        ring: FrameRing,
        properties: StreamProperties = StreamProperties(),
        targetLatencyMilliseconds: Int = 50,
        sinkName: String? = nil,
        writeProbe: WriteCallbackProbe? = nil,
        noticeHandler: @escaping @Sendable (StreamNotice) -> Void = { _ in }
    ) throws(PulseError) {
        self.connection = connection
        self.writeProbe = writeProbe
        self.ring = ring
        self.sampleRate = sampleRate
        self.targetLatencyMilliseconds = targetLatencyMilliseconds
        self.noticeHandler = noticeHandler
        try connection.withLock { () throws(PulseError) in
            try openLocked(properties: properties, sinkName: sinkName)
        }
    }

    deinit {
        connection.withLock { closeLocked() }
    }

    /// Disconnects the stream from the server and frees it; no notices arrive afterwards. Safe to repeat. Deinit
    /// does the same.
    public func close() {
        connection.withLock { closeLocked() }
    }

    // MARK: - Internals (lock held)

    static let bytesPerFrame = 4

    var targetFrames: Int {
        sampleRate * max(targetLatencyMilliseconds, 1) / 1000
    }

    func openLocked(properties: StreamProperties, sinkName: String?) throws(PulseError) {
        guard let context = connection.context, pa_context_get_state(context) == PA_CONTEXT_READY else {
            throw PulseError(code: .badState, step: "connect stream (connection not ready)")
        }
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(clamping: sampleRate), channels: 2)
        guard pa_sample_spec_valid(&spec) != 0, targetLatencyMilliseconds > 0 else {
            throw PulseError(code: .invalid, step: "connect stream (sample rate or latency)")
        }
        var channels = pa_channel_map()
        pa_channel_map_init_stereo(&channels)

        let list = pa_proplist_new()
        defer { pa_proplist_free(list) }
        pa_proplist_sets(list, PA_PROP_MEDIA_ROLE, properties.mediaRole)
        pa_proplist_sets(list, PA_PROP_APPLICATION_NAME, properties.applicationName)
        pa_proplist_sets(list, PA_PROP_APPLICATION_ICON_NAME, properties.iconName)
        // An empty media.name would leave the stream nameless, which libpulse rejects.
        let mediaName = properties.mediaName.isEmpty ? properties.applicationName : properties.mediaName
        pa_proplist_sets(list, PA_PROP_MEDIA_NAME, mediaName)

        guard let newStream = pa_stream_new_with_proplist(context, nil, &spec, &channels, list) else {
            throw PulseError.lastError(of: context, step: "create stream")
        }
        stream = newStream
        installCallbacks(on: newStream)
        connection.register(self)

        let frameBytes = Self.bytesPerFrame
        let targetBytes = targetFrames * frameBytes
        let requestBytes = max(targetBytes / 3 / frameBytes, 1) * frameBytes
        var buffer = pa_buffer_attr(
            maxlength: UInt32.max,
            tlength: UInt32(targetBytes),
            prebuf: UInt32(requestBytes),
            minreq: UInt32(requestBytes),
            fragsize: UInt32.max
        )
        let flags = pa_stream_flags_t(
            rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_START_CORKED.rawValue
        )
        // No AUTO_TIMING_UPDATE: libpulse would ask the server for timing every 1.5 s even while corked, waking
        // the process all through a pause. The stream asks for timing itself, only while playing, and runs the
        // clock on from the last reading itself, instead of libpulse's INTERPOLATE_TIMING (+Timing says why).
        guard pa_stream_connect_playback(newStream, sinkName, &buffer, flags, nil, nil) >= 0 else {
            let error = PulseError.lastError(of: context, step: "connect stream")
            closeLocked()
            throw error
        }
        // Not waited for: the state callback delivers `.ready` (or `.failed`).
    }

    func closeLocked() {
        connection.unregister(self)
        cancelDrainLocked()
        freeTimingTimerLocked()
        freeSilenceTimerLocked()
        for operation in pendingOperations {
            if pa_operation_get_state(operation) == PA_OPERATION_RUNNING {
                pa_operation_cancel(operation)
            }
            pa_operation_unref(operation)
        }
        pendingOperations.removeAll()
        guard let stream else { return }
        pa_stream_set_state_callback(stream, nil, nil)
        pa_stream_set_write_callback(stream, nil, nil)
        pa_stream_set_moved_callback(stream, nil, nil)
        pa_stream_set_event_callback(stream, nil, nil)
        pa_stream_set_started_callback(stream, nil, nil)
        pa_stream_set_underflow_callback(stream, nil, nil)
        pa_stream_set_latency_update_callback(stream, nil, nil)
        pa_stream_set_suspended_callback(stream, nil, nil)
        pa_stream_set_buffer_attr_callback(stream, nil, nil)
        let state = pa_stream_get_state(stream)
        if state == PA_STREAM_READY || state == PA_STREAM_CREATING {
            // Also cancels the stream's own pending operations (cork, flush, ...).
            pa_stream_disconnect(stream)
        }
        pa_stream_unref(stream)
        self.stream = nil
        currentSinkInputIndex = nil
    }


    func track(_ operation: OpaquePointer?) {
        pendingOperations.removeAll { pending in
            guard pa_operation_get_state(pending) != PA_OPERATION_RUNNING else { return false }
            pa_operation_unref(pending)
            return true
        }
        if let operation {
            pendingOperations.append(operation)
        }
    }

    func deliver(_ notice: StreamNotice) {
        noticeHandler(notice)
    }
}
