// One playback stream on a PulseConnection. Threading follows "A note on threading" in PulseConnection.swift.
//
// The write callback is the real-time path: it runs whenever the server asks for data and only copies frames from
// the FrameRing into memory libpulse hands out (pa_stream_begin_write), padding with silence when the decoder is
// late. No allocation, no locks beyond the mainloop lock libpulse already holds, no logging, no strings.
// RealtimePathTests proves it on a real server: a `WriteCallbackProbe` lets the test count heap and lock calls on
// libpulse's thread while exactly this callback body runs (the libpulse calls it makes included).
//
// Buffering: tlength is the target latency (50 ms by default) and ADJUST_LATENCY makes the server size the sink's
// buffer from it, so little of our audio can be queued anywhere when the output changes (the default tlength of
// about 2 s would all play on the next sink). minreq is a quarter of tlength, so the server asks for data in
// small steps. prebuf is one minreq, a deliberate non-zero choice:
//   - The stream starts corked (START_CORKED). While corked the write callback only copies what the ring holds and
//     never pads, and uncork() first tops the server's buffer up (padding only then) before uncorking, so at uncork
//     there is always at least prebuf queued and playback starts at once; prebuf never delays a start.
//   - prebuf = 0 would also start at once, but it disables the server's own stop on underrun: when the server runs
//     dry (our process stalled) its read index would run past the write index and the late frames would be
//     skipped. With a small prebuf the server pauses instead and resumes as soon as one minreq arrives, so a stall
//     costs a gap, never audio.
// At the end of the queue (`setEndOfData(true)`, or while draining) the callback writes only what is there, so
// the tail plays and `drain()` can complete; prebuf does not hold back a short tail because draining disables it.
//
// Stall watchdog: besides copying, the write callback only stores the time of the request and adds the requested
// frames to a counter (one relaxed atomic store, one relaxed atomic add; clock_gettime goes through the vDSO). The
// owner polls `isStalled()` (or `requestSilence()`) from its own tick: a stream that is playing (uncorked, and the
// server acknowledged it) but that the server has not asked for data for several periods is stalled. On PipeWire
// the graph can stop driving a stream with no callback at all (a node left unlinked, a stuck driver); this is how
// the owner learns that nothing is heard any more.

import AudioPipeline
import CPulse
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Properties of our stream that mixers (pavucontrol) show and the server's policy modules act on.
public struct StreamProperties: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `media.role`: module-role-cork corks only `music` and `video` streams, and none without a role.
    public var mediaRole: String
    /// `application.name`.
    public var applicationName: String
    /// `application.icon_name`.
    public var iconName: String
    /// `media.name`: the track title, shown by mixers. User content: NEVER logged, and redacted from `description`.
    public var mediaName: String

    /// Creates stream properties; the defaults suit a music player.
    public init(
        mediaRole: String = "music",
        applicationName: String = "Earshot",
        iconName: String = "audio-x-generic",
        mediaName: String = "Earshot"
    ) {
        self.mediaRole = mediaRole
        self.applicationName = applicationName
        self.iconName = iconName
        self.mediaName = mediaName
    }

    /// A description safe to log: the media name is redacted.
    public var description: String {
        "StreamProperties(mediaRole: \(mediaRole), applicationName: \(applicationName), iconName: \(iconName), "
            + "mediaName: <redacted>)"
    }

    /// Same as `description`: the media name is redacted here too.
    public var debugDescription: String {
        description
    }
}

/// Something that happened to a playback stream, as delivered to its notice handler (on the libpulse thread).
public enum StreamNotice: Sendable, Equatable {
    /// The stream is connected: the sink it plays on and its sink input index on the server.
    case ready(sinkName: String?, sinkInputIndex: UInt32?)
    /// Audio started reaching the sink (after an uncork, or after an underrun ended).
    case started
    /// The server ran out of our data.
    case underflow
    /// The server asks us to pause (`request-cork`, e.g. module-role-cork for a phone call). Advisory.
    case corkRequested
    /// The server allows us to resume (`request-uncork`). Advisory: only resume if we paused for the interruption.
    case uncorkRequested
    /// A stream event with a name we do not know; pulse/stream.h says the set can grow. Only the kind is kept.
    case unknownEvent
    /// The server moved the stream to another sink. The stream has already been corked (the safety hold): call
    /// `releaseSafetyHold()` for a deliberate route change, or leave it corked when the output was lost.
    /// `oldSinkStillExists` is false when the old sink is gone (an unplug) or could not be identified.
    case moved(toSinkName: String?, oldSinkStillExists: Bool)
    /// The stream failed (for example because the connection was lost).
    case failed(PulseError)
    /// The server killed the stream (`PA_ERR_KILLED`, e.g. its sink went away and it was not allowed to move).
    case killed
    /// All audio queued before `drain()` has played.
    case drained
}

/// Two C functions a test calls around the body of a stream's write callback, on libpulse's thread: the seam that
/// lets a test prove the real-time path allocates nothing and takes no locks, by counting on that thread only while
/// our code runs (libpulse's own work around the callback is not ours to count).
///
/// Plain C function pointers, so calling them costs no retain or release; a stream without a probe pays one
/// predictable branch per callback. Production code passes none.
public struct WriteCallbackProbe: Sendable {
    /// Called first thing in the write callback, before any of our work.
    public let entered: @convention(c) () -> Void
    /// Called last thing in the write callback, after all of our work.
    public let left: @convention(c) () -> Void

    /// A probe calling `entered` and `left` around every write callback.
    public init(entered: @escaping @convention(c) () -> Void, left: @escaping @convention(c) () -> Void) {
        self.entered = entered
        self.left = left
    }
}

/// Buffer sizes the server actually granted for a stream (it may adjust what was asked for).
public struct BufferMetrics: Sendable, Equatable {
    /// Target length of the server-side buffer (tlength), in bytes.
    public var targetLengthBytes: Int
    /// Bytes the server wants before it starts playing (prebuf).
    public var prebufferBytes: Int
    /// Smallest request the server makes (minreq), in bytes.
    public var minimumRequestBytes: Int
    /// Maximum buffer length (maxlength), in bytes.
    public var maximumLengthBytes: Int
}

/// One playback stream: S16LE stereo at a fixed sample rate, fed from a `FrameRing` by libpulse's write callback.
///
/// The stream starts corked. The owner fills the ring from its decoder thread, then calls `uncork()`. `cork()`,
/// `uncork()` and `flush()` each wait for the server's acknowledgement; `drain()` returns at once and its completion
/// arrives as the `.drained` notice. Waiting methods must not be called from a notice handler (they throw `.badState`
/// there).
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

    private let noticeHandler: @Sendable (StreamNotice) -> Void
    /// Called around the write callback's body; nil outside tests.
    private let writeProbe: WriteCallbackProbe?
    /// Set by the owner when nothing more will be written: the write callback then stops padding with silence.
    private let endOfData = Atomic<Bool>(false)
    /// How many write callbacks found the ring short while playing and padded with silence.
    private let underruns = Atomic<Int>(0)
    /// How many times the server ran out of our data while we meant to keep playing (its underflow event).
    private let serverUnderflows = Atomic<Int>(0)
    /// CLOCK_MONOTONIC nanoseconds of the server's last request for data (write callback); 0 before the first.
    private let lastRequestNanoseconds = Atomic<UInt64>(0)
    /// Frames the server has asked for in all, over every write callback.
    private let framesRequested = Atomic<Int>(0)

    private var stream: OpaquePointer?
    /// What the owner asked for last (cork() / uncork()); the safety hold never changes it.
    private var desiredCorked = true
    /// What the server last acknowledged.
    private var acknowledgedCorked = true
    /// CLOCK_MONOTONIC nanoseconds when the server last acknowledged an uncork (0 while corked): the stall watchdog
    /// counts from here when the last request is older, since a corked stream is asked for nothing.
    private var playingSinceNanoseconds: UInt64 = 0
    /// Corked by the moved callback; waiting for the owner's decision.
    private var safetyHold = false
    /// drain() is in progress or completed: no silence padding.
    private var draining = false
    private var currentSinkIndex: UInt32?
    private var currentSinkName: String?
    private var currentSinkInputIndex: UInt32?
    /// `ring.totalFramesRead` when the server's buffer was last flushed; nothing before it can still be heard.
    private var readAtFlush = 0
    /// The last heard frame just before that flush.
    private var heardAtFlush = 0
    /// The heard frame read as the connection failed (`connectionIsFailing()`), while the timing was still there.
    private var heardAtConnectionLoss: Int?
    /// Operations started from callbacks with this stream as userdata; cancelled in close() so none outlives it.
    private var pendingOperations: [OpaquePointer] = []
    /// The drain in progress (`drain()`), until it completes or is cancelled.
    private var drainOperation: OpaquePointer?

    /// Creates the stream on `connection`, connects it (corked) to `sinkName` or the default sink, and waits until
    /// it is ready.
    ///
    /// - Parameters:
    ///   - connection: a ready connection.
    ///   - sampleRate: frames per second of the ring's audio.
    ///   - ring: interleaved stereo Int16 frames; this stream becomes its only consumer.
    ///   - properties: role, names and icon shown to mixers and policy modules.
    ///   - targetLatencyMilliseconds: the server-side buffer length to ask for.
    ///   - sinkName: the sink to play on, or nil for the server's default.
    ///   - writeProbe: for tests only: functions called around the write callback's body (see `WriteCallbackProbe`).
    ///   - noticeHandler: called on the libpulse thread with the lock held; must return quickly and must not call
    ///     waiting methods.
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
        try connection.lockedForWaiting("connect stream") { () throws(PulseError) in
            try openLocked(properties: properties, sinkName: sinkName)
        }
    }

    deinit {
        connection.withLock { closeLocked() }
    }

    // MARK: - Commands

    /// Pauses playback on the server (queued audio is kept) and waits for the acknowledgement. Safe to repeat.
    /// Also ends a safety hold: the owner has decided.
    public func cork() throws(PulseError) {
        try connection.lockedForWaiting("cork") { () throws(PulseError) in
            desiredCorked = true
            safetyHold = false
            try sendWaitedCork(true, step: "cork")
        }
    }

    /// Resumes playback and waits for the acknowledgement. Safe to repeat. Tops the server's buffer up first, so
    /// playback starts at once. Also ends a safety hold: an explicit uncork is the owner's decision.
    public func uncork() throws(PulseError) {
        try connection.lockedForWaiting("uncork") { () throws(PulseError) in
            desiredCorked = false
            safetyHold = false
            topUpLocked()
            try sendWaitedCork(false, step: "uncork")
        }
    }

    /// Ends the safety hold that a move started: uncorks if, and only if, the owner's last wish was to play
    /// (`uncork()` was called after the last `cork()`). Returns whether it uncorked. Call it for a deliberate route
    /// change; for a lost output call `cork()` (or nothing) instead.
    @discardableResult
    public func releaseSafetyHold() throws(PulseError) -> Bool {
        try connection.lockedForWaiting("release safety hold") { () throws(PulseError) -> Bool in
            guard safetyHold else { return false }
            safetyHold = false
            guard !desiredCorked else { return false }
            topUpLocked()
            try sendWaitedCork(false, step: "release safety hold")
            return true
        }
    }

    /// Drops everything queued: the frames still in the ring and the audio in the server's buffer (not yet
    /// played). Waits for the acknowledgement. Read `heardRingFrame()` before flushing if you need the position;
    /// afterwards it stays at that point until new audio is heard. The ring is emptied here, under the mainloop
    /// lock, because the stream is its consumer: do not call `ring.discardReadable()` yourself while the stream
    /// exists.
    public func flush() throws(PulseError) {
        try connection.lockedForWaiting("flush") { () throws(PulseError) in
            guard let stream else { throw PulseError(code: .badState, step: "flush") }
            let heard = heardLocked()
            _ = ring.discardReadable()
            // Every frame read so far is now either heard or dropped; later frames are numbered from here.
            heardAtFlush = heard ?? max(heardAtFlush, ring.totalFramesRead - targetFrames)
            readAtFlush = ring.totalFramesRead
            cancelDrainLocked()
            draining = false
            // An emptied stream restarts like a new one (prebuffer, a sink that may pause): the stall watchdog
            // waits for its first request again.
            if playingSinceNanoseconds > 0 { playingSinceNanoseconds = PlaybackStream.uptimeNanoseconds() }
            try connection.performLocked("flush", initial: ()) { reply in
                pa_stream_flush(stream, { _, success, userdata in
                    Reply<Void>.from(userdata)?.finish(succeeded: success != 0)
                }, reply.userdata)
            }
        }
    }

    /// Asks the server to play out what is queued, without padding silence, and returns at once: the notice handler
    /// receives `.drained` once all of it has played. Implies end of data. A corked stream drains only when it runs
    /// again; `flush()`, `setEndOfData(false)` or another `drain()` cancel a drain in progress (no `.drained` then).
    public func drain() throws(PulseError) {
        try connection.lockedForWaiting("drain") { () throws(PulseError) in
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else {
                throw PulseError(code: .badState, step: "drain")
            }
            cancelDrainLocked()
            draining = true
            drainOperation = pa_stream_drain(stream, { _, success, userdata in
                guard success != 0, let userdata else { return }
                Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().drainCompleted()
            }, Unmanaged.passUnretained(self).toOpaque())
            guard drainOperation != nil else { throw PulseError.lastError(of: connection.context, step: "drain") }
        }
    }

    /// Declares (true) or withdraws (false) the end of the data: at the end the write callback writes only what the
    /// ring holds, with no silence, so the stream can run out and drain. Withdrawing it also ends a drain and tops
    /// the server's buffer up when playing, because the server asks no more after it ran out.
    public func setEndOfData(_ isAtEnd: Bool) {
        endOfData.store(isAtEnd, ordering: .releasing)
        guard !isAtEnd else { return }
        connection.withLock {
            cancelDrainLocked()
            draining = false
            if !desiredCorked {
                topUpLocked()
            }
        }
    }

    /// Sets the server-side mute of our sink input and waits. module-role-cork mutes the streams it corks and only
    /// unmutes them when the call ends, so unmute when resuming during a call.
    public func setMuted(_ muted: Bool) throws(PulseError) {
        try connection.lockedForWaiting("set mute") { () throws(PulseError) in
            guard let index = currentSinkInputIndex, let context = connection.context else {
                throw PulseError(code: .badState, step: "set mute")
            }
            try connection.performLocked("set mute", initial: ()) { reply in
                pa_context_set_sink_input_mute(context, index, muted ? 1 : 0, { _, success, userdata in
                    Reply<Void>.from(userdata)?.finish(succeeded: success != 0)
                }, reply.userdata)
            }
        }
    }

    /// Sets our sink input's volume on both channels, in percent of normal (100 = unchanged, clamped to 0...150),
    /// on the server's (cubic) volume scale like mixers, and waits.
    public func setVolume(percent: Int) throws(PulseError) {
        try connection.lockedForWaiting("set volume") { () throws(PulseError) in
            guard let index = currentSinkInputIndex, let context = connection.context else {
                throw PulseError(code: .badState, step: "set volume")
            }
            let normal = UInt64(PA_VOLUME_NORM)
            let level = pa_volume_t(normal * UInt64(min(max(percent, 0), 150)) / 100)
            var volume = pa_cvolume()
            pa_cvolume_set(&volume, 2, level)
            try connection.performLocked("set volume", initial: ()) { reply in
                pa_context_set_sink_input_volume(context, index, &volume, { _, success, userdata in
                    Reply<Void>.from(userdata)?.finish(succeeded: success != 0)
                }, reply.userdata)
            }
        }
    }

    /// Replaces the stream's `media.name` (the track title mixers show) and waits. The title is never logged.
    public func updateMediaName(_ mediaName: String) throws(PulseError) {
        try connection.lockedForWaiting("update media name") { () throws(PulseError) in
            guard let stream else { throw PulseError(code: .badState, step: "update media name") }
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, PA_PROP_MEDIA_NAME, mediaName)
            try connection.performLocked("update media name", initial: ()) { reply in
                pa_stream_proplist_update(stream, PA_UPDATE_REPLACE, properties, { _, success, userdata in
                    Reply<Void>.from(userdata)?.finish(succeeded: success != 0)
                }, reply.userdata)
            }
        }
    }

    /// Disconnects the stream from the server and frees it; no notices arrive afterwards. Safe to repeat. Deinit
    /// does the same.
    public func close() {
        connection.withLock { closeLocked() }
    }

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
    /// (the sink is still starting), in a safety hold, draining, or at the end of the data (a stream that has run
    /// out is legitimately asked for nothing more).
    ///
    /// Meant to be polled from the owner's periodic tick (every 50 ms is plenty), never from a notice handler.
    public func requestSilence(atUptimeNanoseconds now: UInt64 = PlaybackStream.uptimeNanoseconds()) -> Duration? {
        connection.withLock { () -> Duration? in
            guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
                !desiredCorked, !acknowledgedCorked, !safetyHold, !draining,
                !endOfData.load(ordering: .acquiring), playingSinceNanoseconds > 0
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

    /// Whether the server has acknowledged that the stream is corked (the actual state, not the wish).
    public var isCorked: Bool {
        connection.withLock { acknowledgedCorked }
    }

    /// Whether a move corked the stream and the owner has not yet decided (see `releaseSafetyHold()`).
    public var isSafetyHoldActive: Bool {
        connection.withLock { safetyHold }
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

    private static let bytesPerFrame = 4

    private var targetFrames: Int {
        sampleRate * max(targetLatencyMilliseconds, 1) / 1000
    }

    private func openLocked(properties: StreamProperties, sinkName: String?) throws(PulseError) {
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
        let requestBytes = max(targetBytes / 4 / frameBytes, 1) * frameBytes
        var buffer = pa_buffer_attr(
            maxlength: UInt32.max,
            tlength: UInt32(targetBytes),
            prebuf: UInt32(requestBytes),
            minreq: UInt32(requestBytes),
            fragsize: UInt32.max
        )
        let flags = pa_stream_flags_t(
            rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_INTERPOLATE_TIMING.rawValue
                | PA_STREAM_AUTO_TIMING_UPDATE.rawValue | PA_STREAM_START_CORKED.rawValue
        )
        guard pa_stream_connect_playback(newStream, sinkName, &buffer, flags, nil, nil) >= 0 else {
            throw PulseError.lastError(of: context, step: "connect stream")
        }
        let settled = connection.waitLocked(timeout: connection.operationTimeout) {
            let state = pa_stream_get_state(newStream)
            return state == PA_STREAM_READY || state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED
        }
        guard pa_stream_get_state(newStream) == PA_STREAM_READY else {
            let error = settled
                ? PulseError.lastError(of: context, step: "connect stream")
                : PulseError(code: .timeout, step: "connect stream")
            closeLocked()
            throw error
        }
    }

    private func installCallbacks(on stream: OpaquePointer) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        pa_stream_set_state_callback(stream, { stream, userdata in
            guard let stream, let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().stateChanged(stream)
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
            guard let stream, let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().moved(stream)
        }, me)
        pa_stream_set_event_callback(stream, { _, name, _, userdata in
            guard let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().serverEvent(name)
        }, me)
        pa_stream_set_started_callback(stream, { _, userdata in
            guard let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().deliver(.started)
        }, me)
        pa_stream_set_underflow_callback(stream, { _, userdata in
            guard let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().serverRanDry()
        }, me)
    }

    private func closeLocked() {
        connection.unregister(self)
        cancelDrainLocked()
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
        let state = pa_stream_get_state(stream)
        if state == PA_STREAM_READY || state == PA_STREAM_CREATING {
            // Also cancels the stream's own pending operations (cork, flush, ...).
            pa_stream_disconnect(stream)
        }
        pa_stream_unref(stream)
        self.stream = nil
        currentSinkInputIndex = nil
    }

    /// The single caller of `pa_stream_cork`, for both directions and both the waited and the safety-hold cork.
    private func sendCork(
        _ corked: Bool,
        acknowledged callback: pa_stream_success_cb_t,
        userdata: UnsafeMutableRawPointer
    ) throws(PulseError) -> OpaquePointer? {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else {
            throw PulseError(code: .badState, step: corked ? "cork" : "uncork")
        }
        return pa_stream_cork(stream, corked ? 1 : 0, callback, userdata)
    }

    private func sendWaitedCork(_ corked: Bool, step: String) throws(PulseError) {
        try connection.performLocked(step, initial: CorkAcknowledgement(stream: self, corked: corked)) {
            (reply) throws(PulseError) -> OpaquePointer? in
            try sendCork(corked, acknowledged: { _, success, userdata in
                guard let reply = Reply<CorkAcknowledgement>.from(userdata) else { return }
                if success != 0 {
                    reply.value.stream.acknowledge(corked: reply.value.corked)
                }
                reply.finish(succeeded: success != 0)
            }, userdata: reply.userdata)
        }
    }

    /// Fills the server's buffer as far as it asks, so that an uncork starts at once.
    private func topUpLocked() {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        let writable = pa_stream_writable_size(stream)
        // (size_t) -1 means error.
        if writable > 0 && writable != Int.max && writable != -1 {
            supply(stream, requestedBytes: writable)
        }
    }

    private func heardLocked() -> Int? {
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

    /// Cancels the drain in progress, if any, so its completion never arrives. Lock held.
    private func cancelDrainLocked() {
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

    private func track(_ operation: OpaquePointer?) {
        pendingOperations.removeAll { pending in
            guard pa_operation_get_state(pending) != PA_OPERATION_RUNNING else { return false }
            pa_operation_unref(pending)
            return true
        }
        if let operation {
            pendingOperations.append(operation)
        }
    }

    private func deliver(_ notice: StreamNotice) {
        noticeHandler(notice)
    }

    /// Records what the server confirmed. Lock held (an operation callback).
    private func acknowledge(corked: Bool) {
        if !corked && acknowledgedCorked {
            playingSinceNanoseconds = PlaybackStream.uptimeNanoseconds()
        } else if corked {
            playingSinceNanoseconds = 0
        }
        acknowledgedCorked = corked
    }

    // MARK: - Callbacks (mainloop thread, lock held)

    /// The watchdog's part of the write callback: one relaxed atomic store and one relaxed atomic add, nothing else.
    private func noteRequest(bytes: Int) {
        lastRequestNanoseconds.store(PlaybackStream.uptimeNanoseconds(), ordering: .relaxed)
        framesRequested.add(bytes / Self.bytesPerFrame, ordering: .relaxed)
    }

    /// The write callback's work. Real-time path: copies only; no allocation, no locks, no logging, no strings.
    private func supply(_ stream: OpaquePointer, requestedBytes: Int) {
        let frameBytes = Self.bytesPerFrame
        // Silence keeps a playing stream going while the decoder is late. Not while corked (the owner will top up
        // at uncork), not at the end of the data (the tail must be allowed to run out and drain).
        let padsWithSilence = !desiredCorked && !draining && !endOfData.load(ordering: .acquiring)
        var remainingFrames = requestedBytes / frameBytes
        var paddedSilence = false
        while remainingFrames > 0 {
            var memory: UnsafeMutableRawPointer?
            var size = remainingFrames * frameBytes
            guard pa_stream_begin_write(stream, &memory, &size) == 0, let memory, size >= frameBytes else {
                return
            }
            let frames = min(remainingFrames, size / frameBytes)
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
    private func serverRanDry() {
        if !desiredCorked && !draining && !endOfData.load(ordering: .acquiring) {
            serverUnderflows.add(1, ordering: .relaxed)
        }
        deliver(.underflow)
    }

    private func stateChanged(_ stream: OpaquePointer) {
        switch pa_stream_get_state(stream) {
        case PA_STREAM_READY:
            currentSinkIndex = validIndex(pa_stream_get_device_index(stream))
            currentSinkName = string(pa_stream_get_device_name(stream))
            currentSinkInputIndex = validIndex(pa_stream_get_index(stream))
            deliver(.ready(sinkName: currentSinkName, sinkInputIndex: currentSinkInputIndex))
        case PA_STREAM_FAILED:
            let error = PulseError.lastError(of: connection.context, step: "stream")
            deliver(error.code == .killed ? .killed : .failed(error))
        default:
            break
        }
        // connect() may be waiting for the stream to settle.
        pa_threaded_mainloop_signal(connection.mainloop, 0)
    }

    /// The safety hold: corks at once without waiting (fire and forget); the acknowledgement updates `isCorked`.
    private func holdForSafety() {
        safetyHold = true
        track(try? sendCork(true, acknowledged: { _, success, userdata in
            guard success != 0, let userdata else { return }
            Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue().acknowledge(corked: true)
        }, userdata: Unmanaged.passUnretained(self).toOpaque()))
    }

    /// Called by the connection's state callback when the connection fails (the server died), before libpulse fails
    /// the connection's streams: the stream is still ready and its interpolated timing still readable, for the last
    /// time. What it says is kept for `heardRingFrame()`, so that the owner learns what the listener heard up to the
    /// moment the server went away, not up to its last poll. Lock held.
    func connectionIsFailing() {
        heardAtConnectionLoss = heardLocked()
    }

    /// Called by the connection's subscription when a sink is removed, which on PulseAudio 16 arrives before the
    /// moved callback: if it is our sink, the safety hold starts now. The moved callback still reports the move.
    func sinkWasRemoved(_ index: UInt32) {
        guard index == currentSinkIndex, let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        holdForSafety()
    }

    private func moved(_ stream: OpaquePointer) {
        // Cork first, before anything else: every millisecond until the server processes this plays on the new
        // sink, which after an unplug is the speakers. The owner decides later whether to resume.
        holdForSafety()
        let me = Unmanaged.passUnretained(self).toOpaque()

        let oldSinkIndex = currentSinkIndex
        currentSinkIndex = validIndex(pa_stream_get_device_index(stream))
        currentSinkName = string(pa_stream_get_device_name(stream))
        guard let oldSinkIndex, let context = connection.context else {
            // Unknown origin is never permission to play: report it like a lost output.
            deliver(.moved(toSinkName: currentSinkName, oldSinkStillExists: false))
            return
        }
        // On PulseAudio the old sink is already gone when this callback runs for an unplug ("No such entity").
        track(pa_context_get_sink_info_by_index(context, oldSinkIndex, { _, info, endOfList, userdata in
            guard let userdata else { return }
            let stream = Unmanaged<PlaybackStream>.fromOpaque(userdata).takeUnretainedValue()
            // Success calls back twice (the info, then the end of the list); failure once, with a negative end.
            if info != nil {
                stream.deliver(.moved(toSinkName: stream.currentSinkName, oldSinkStillExists: true))
            } else if endOfList < 0 {
                stream.deliver(.moved(toSinkName: stream.currentSinkName, oldSinkStillExists: false))
            }
        }, me))
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

/// What a waited cork acknowledgement confirms: the stream and the state the server has now reached.
private struct CorkAcknowledgement {
    /// The stream whose acknowledged state to update.
    let stream: PlaybackStream
    /// The state the server confirms.
    let corked: Bool
}
