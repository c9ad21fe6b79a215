// DecodeWorker: the decode thread. It walks a queue of files and keeps a FrameRing filled ahead of
// the real-time consumer, back to back across tracks of the same format (gapless), and records
// where in the ring each track starts so a heard ring frame can be turned back into a track position.
//
// A note on threading:
// - One dedicated thread (named "earshot-decode") runs `run()`. It alone opens files, owns the
//   decoders and writes into the ring (the ring's only producer). It never touches libpulse.
// - Control calls (`load`, `append`, `reposition`, `continueAfterFormatChange`, `skipFailedTrack`,
//   `noticeWhenBuffered`, `stop`) come from one ordinary controlling context at a time (the service's actor). They change `state`
//   under `control` (held by either side only for a few loads and stores, never across a step) and wake the
//   worker: the condition for its idle states, the ring's semaphore (`wakeProducer`) when it sleeps for space
//   (with no timeout: it wakes only when the consumer has freed half the ring or a control call gives it work).
//   None of them waits for the worker's step in progress, which may be long (opening a file on a slow disk or a
//   pipe nobody writes to yet): only `stop` waits, for the thread to end.
// - Notices are delivered on the worker thread with no lock held. The handler must be quick (the worker
//   decodes nothing meanwhile) and must not call `stop` (it waits for this very thread); it may call
//   `continueAfterFormatChange` or hand the notice to another context.
// - The track markers live behind their own lock; the real-time consumer never takes it. It is a
//   SystemSupport Lock (a pthread mutex), not Synchronization's Mutex: ThreadSanitizer on Linux does not see the
//   latter's futex hand-offs and reports false races, and this code must stay TSan-clean.
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif
import SystemSupport

/// The decode thread: fills a `FrameRing` from a queue of audio files, ahead of the real-time consumer.
///
/// How far ahead is the ring's capacity (for example 2 s). Tracks of the same format follow each other
/// in the ring with no gap. A file that cannot be opened or decoded is reported and skipped.
///
/// ## Repositioning (seek, skip, flush): a new ring generation, nothing waited for
/// 1. Controller: `let generation = ring.beginGeneration()`. The consumer reads nothing more until the worker
///    answers it, so nothing the worker's step in progress writes can be heard.
/// 2. Consumer side (for example the output's write path, with its audio lock held): `ring.discardReadable()`
///    frees the room of everything decoded but not yet played.
/// 3. Controller: `reposition(paths:trackIndex:frame:generation:)`, which returns at once. Between two steps the
///    worker takes it: it abandons its track, answers the generation at the write index
///    (`ring.publishGenerationStart`, which makes the consumer skip whatever the abandoned step wrote after 2),
///    posts `.restarted`, opens the track, seeks, posts `.trackStarted` at that same ring frame and fills the ring.
/// The steps' order matters: a discard after 3 could drop the new generation's first frames. Any pending format
/// change is cancelled by the new start point (the worker re-checks the new track's format against the ring's).
/// Between 1 and 3 the worker writes nothing new (it waits at its next checkpoint for the start point), so at most the
/// one step under way at 1 writes frames after 2 (a quarter of the ring at most): the new generation always finds
/// room, even when the consumer does not run (a corked stream waiting for `.buffered`).
///
/// ## Format changes
/// The output plays one sample rate at a time. When the next frames' format differs from the
/// ring's (between tracks, or mid-track in a stitched stream), the worker posts `.formatChange` and
/// parks before writing any of them. The consumer plays the ring out to the notice's `ringFrame`,
/// re-creates its stream in the new format, then calls `continueAfterFormatChange()`.
///
/// The worker's thread keeps the object alive until `stop()`, which must be called to end it.
public final class DecodeWorker: @unchecked Sendable {
    // Sendable because every mutable property is guarded: `state` by `control`, `markerList` by
    // `markerLock`, `thread` is written once in `init` before any other thread can see `self` used,
    // and the worker's own decoding state lives on its thread's stack (see `WorkerState`).

    /// The ring this worker fills; the caller drains it (its consumer side).
    public let ring: FrameRing

    /// The ReplayGain settings each opened track's gain is chosen by (a change applies from the next track).
    public let replayGain = ReplayGainControl()

    /// The live buffer's settings and counts, for the live streams this worker opens (LiveBuffer.swift).
    public let liveBuffer: LiveBufferLink

    /// The receiver of notices, called on the worker thread.
    let notify: @Sendable (DecodeNotice) -> Void

    /// Guards `state`; its condition wakes the worker from its idle states and `stop` callers that wait for
    /// the thread to end.
    let control = Condition()

    /// What the controller asked for and what the worker acknowledged. Guarded by `control`.
    var state = ControlState()

    /// Guards `markerList`.
    let markerLock = Lock()

    /// Where tracks start in the ring, oldest first. Guarded by `markerLock`.
    var markerList: [TrackMarker] = []

    /// The worker thread, for `pthread_join` and for spotting calls made from it.
    var thread = pthread_t()

    /// The free space the worker waits for before decoding again: half the ring, so it wakes rarely (about every
    /// 1.5 s with the player's ring) and then fills the ring, `stepFrames` at a time, before it sleeps again.
    let refillFrames: Int

    /// The most frames one decode call writes before they are committed: `chunkFrames`, at most a quarter of the ring,
    /// so that what a step under way writes after a reposition began (never heard) leaves room for the new audio.
    let stepFrames: Int

    /// The most frames one decode call writes before they are committed. Without a bound the first call after an
    /// empty ring decoded a whole ring (3 s of audio, a millisecond or two of CPU on a loaded machine) before the
    /// consumer saw any of it, and before `.buffered` could be announced: a start or a seek waited for all of it.
    /// 16 384 frames (0.37 s at 44.1 kHz) are committed a few at a time instead; each call costs one lock and two
    /// atomics, nothing beside the decoding.
    static let chunkFrames = 16_384

    /// Markers are kept while they may still be asked about: this many frames behind the read index.
    let markerRetentionFrames: Int

    /// The most markers kept, whatever their age.
    static let markerLimit = 512

    /// A start point in the queue: a frame at the track's output rate, or milliseconds when that rate is not known
    /// yet (a restored position), turned into a frame once the track is open.
    struct StartPoint {
        var index: Int
        var frame: Int
        var milliseconds: Int? = nil
        /// The controller named the track after a failed one (`skipFailedTrack`): the failures in a row go on counting.
        /// Any other start point is a new start, and counts afresh.
        var afterFailure = false
        /// The start drops what the live stream at `index` received and goes on from its live edge (RULES.md rows 32
        /// and 33); for a file, or a stream opened afresh, it is an ordinary start.
        var rejoinLive = false

        /// The frame to seek to in a track decoded at `format`.
        func frame(in format: AudioFormat) -> Int {
            guard let milliseconds else { return frame }
            return milliseconds * format.sampleRate / 1000
        }
    }

    /// The controller's requests and the worker's acknowledgements.
    struct ControlState {
        /// The paths of the queue (shared with the controller's copy until either changes).
        var queue = TrackList()
        /// Where to (re)start decoding, set by `load`, `append` and `reposition`, taken by the worker.
        var restart: StartPoint?
        /// The ring generation the controller started for its latest `reposition`, until the worker answers it.
        var unansweredGeneration: Int?
        /// The worker waits for `continueAfterFormatChange`.
        var awaitingFormatContinue = false
        /// The controller wants the thread to end.
        var stopRequested = false
        /// The thread has left its loop.
        var exited = false
        /// Some caller of `stop` has joined or is joining the thread.
        var joinClaimed = false
        /// The format of the frames last written to the ring.
        var currentFormat: AudioFormat?
        /// The worker ran past the last track (`.queueFinished`) and idles until the queue grows or restarts.
        var exhaustedAt: Int?
        /// How many readable frames the controller waits for (`noticeWhenBuffered`), until they are announced.
        var bufferedWanted: Int?
        /// The track after each one (`follow(_:)`); the queue's own order until the controller says otherwise.
        var successors = TrackSuccessors(afterEnd: [])
        /// The failed track whose successor the worker waits for (`skipFailedTrack`); a new start point withdraws it.
        var failedAwaitingSkip: Int?
    }

    /// The worker thread's own decoding state; never shared.
    struct WorkerState {
        /// The track being decoded, and the path its decoder was opened from.
        var track: (index: Int, path: TrackPath, decoder: any AudioDecoder)?
        /// The track a new start point took the place of: a start in that same file seeks in its decoder instead of
        /// opening the file again (a seek in a FLAC with an 8 MiB cover picture cost 5.8 ms of CPU to reopen).
        var superseded: (index: Int, path: TrackPath, decoder: any AudioDecoder)?
        /// The track to open next.
        var next: StartPoint?
        /// Set while the track's (new) format waits for `continueAfterFormatChange`.
        var awaitingActivation: Activation?
        /// The format of the frames in the ring (and of the consumer's stream).
        var ringFormat: AudioFormat?
        /// The ring reached what the controller waits for: `.buffered` is due, outside the lock.
        var bufferedToAnnounce: Int?
        /// A generation was answered: `.restarted` is due, outside the lock, before any other notice.
        var restartToAnnounce: (generation: Int, ringFrame: Int)?
        /// The ring generation last answered; while the ring's newest differs, the start point for it is on its way.
        var answeredGeneration = 0
        /// The worker woke with `refillFrames` free and fills the ring up before it sleeps again.
        var filling = false
        /// Tracks failed in a row, with none opened fine between (reported with each failure).
        var failuresInARow = 0
        /// The current track's live tags (an internet stream's), read after each chunk (StreamDecoder.swift).
        var live: (index: Int, source: any LiveMetadataSource)?
    }

    /// Why the current decoder's frames get a new marker.
    enum Activation {
        /// The track is opened (at its start or after a seek): marker and `.trackStarted`.
        case trackStart
        /// The stream changed format mid-track: marker only.
        case formatChange
    }

    /// Starts the worker thread, idle until `load`. Notices go to `notify` on that thread.
    public init(ring: FrameRing, liveBuffer: LiveBufferLink = LiveBufferLink(),
                notify: @escaping @Sendable (DecodeNotice) -> Void) {
        self.ring = ring
        self.liveBuffer = liveBuffer
        self.notify = notify
        refillFrames = min(max(ring.capacity / 2, 1), 65_536)
        stepFrames = min(Self.chunkFrames, max(ring.capacity / 4, 1))
        markerRetentionFrames = max(ring.capacity, 10 * 48_000)
        // The thread holds a strong reference until it exits, so the worker outlives it.
        let retained = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let worker = Unmanaged<DecodeWorker>.fromOpaque(argument).takeRetainedValue()
            SystemThread.nameCurrent("earshot-decode")
            SystemThread.makeBatch()
            worker.run()
            return nil
        }, retained)
        precondition(created == 0, "cannot start the decode thread: \(String(cString: strerror(created)))")
    }

    // MARK: - Control

    /// Replaces the queue and starts decoding at `startIndex`, `startFrame`, after what is in the ring.
    ///
    /// To drop what is buffered, use `reposition` instead.
    public func load(paths: TrackList, startIndex: Int = 0, startFrame: Int = 0) {
        control.lock()
        state.queue = paths
        state.restart = StartPoint(index: startIndex, frame: startFrame)
        control.broadcast()
        control.unlock()
        ring.wakeProducer()
    }

    /// Adds `paths` to the end of the queue without disturbing what is being decoded. A worker that had
    /// already finished the queue carries on with the first new track, right after what is in the ring.
    public func append(paths: TrackList) {
        guard !paths.isEmpty else { return }
        control.lock()
        state.queue.append(contentsOf: paths)
        if let next = state.exhaustedAt, state.restart == nil {
            state.exhaustedAt = nil
            state.restart = StartPoint(index: next, frame: 0)
        }
        control.broadcast()
        control.unlock()
    }

    /// Replaces the queue with `paths` and moves decoding to frame `frame` of track `trackIndex`, as ring generation
    /// `generation` (just started with `ring.beginGeneration()`, and the ring discarded since: see the type's
    /// "Repositioning"). Returns at once: the worker takes it between two steps, answers the generation and posts
    /// `.restarted`.
    /// `rejoinLive`: the live stream at `trackIndex` drops what it received and goes on from its live edge.
    public func reposition(paths: TrackList, trackIndex: Int, frame: Int, generation: Int, rejoinLive: Bool = false) {
        reposition(paths: paths, start: StartPoint(index: trackIndex, frame: frame, rejoinLive: rejoinLive),
                   generation: generation)
    }

    /// As `reposition(paths:trackIndex:frame:generation:)`, at `milliseconds` into the track: the worker turns it into
    /// a frame at the track's own rate once the track is open (the controller does not open files to learn it).
    public func reposition(paths: TrackList, trackIndex: Int, milliseconds: Int, generation: Int) {
        reposition(paths: paths, start: StartPoint(index: trackIndex, frame: 0, milliseconds: milliseconds),
                   generation: generation)
    }

    func reposition(paths: TrackList, start: StartPoint, generation: Int) {
        control.lock()
        state.queue = paths
        state.restart = start
        state.unansweredGeneration = generation
        control.broadcast()
        control.unlock()
        // The worker may be asleep for space in a full ring (a paused player): the new start point is work.
        ring.wakeProducer()
    }

    /// Asks for one `.buffered` notice as soon as the ring holds at least `frames` readable frames; nil withdraws
    /// the request. The worker looks between two chunks, so a ring that already holds them is not announced: look at
    /// `ring.readableFrames` after asking. Nothing is announced while the worker idles (the queue finished) or waits
    /// for `continueAfterFormatChange`; its other notices say so.
    public func noticeWhenBuffered(frames: Int?) {
        control.lock()
        state.bufferedWanted = frames
        control.unlock()
        // A worker asleep for space would look at the request only once the consumer frees some.
        if frames != nil { ring.wakeProducer() }
    }

    /// Sets which track follows each one (the player's repeat and shuffle) for every track boundary from now on;
    /// what was decoded ahead stays as it is.
    public func follow(_ successors: TrackSuccessors) {
        control.lock()
        state.successors = successors
        control.unlock()
    }

    /// The track to decode after `index`, decoded to its end, in the order the controller set.
    func successor(ofEnded index: Int, queue: TrackList) -> StartPoint {
        control.lock()
        let next = state.successors.next(after: index, trackCount: queue.count)
        control.unlock()
        return StartPoint(index: next, frame: 0)
    }

    /// Goes on after failed track `failed` (announced by `.trackFailed`) with track `next` from its start, after what
    /// the ring holds; nil finishes the queue (`.queueFinished`). Ignored when the worker no longer waits for it: a
    /// start point given since (`load`, `reposition`) took its place.
    public func skipFailedTrack(_ failed: Int, next: Int?) {
        control.lock()
        if state.failedAwaitingSkip == failed && state.restart == nil {
            state.failedAwaitingSkip = nil
            // Past the queue's end, the worker reports the queue finished (`open`).
            state.restart = StartPoint(index: next ?? state.queue.count, frame: 0, afterFailure: true)
            control.broadcast()
        }
        control.unlock()
    }

    /// Reports that track `index` failed with `error`, and waits for the controller to name the next
    /// (`skipFailedTrack`): the track after a failure is the rules' choice.
    func reportFailure(of index: Int, _ error: DecodeError, _ work: inout WorkerState) {
        work.failuresInARow += 1
        work.track = nil
        work.next = nil
        control.lock()
        // Set before the notice, so that an answer that comes at once is not missed.
        state.failedAwaitingSkip = index
        control.unlock()
        notify(.trackFailed(index: index, error: error, failuresInARow: work.failuresInARow))
    }

    /// Lets the worker write frames in the new format announced by `.formatChange`. No-op otherwise.
    public func continueAfterFormatChange() {
        control.lock()
        if state.awaitingFormatContinue {
            state.awaitingFormatContinue = false
            control.broadcast()
        }
        control.unlock()
    }

    /// What ends the waits for the network of the internet stream opened as track `index` from `path`: a stop, a new
    /// start point while it opens, and once it plays a new start point that does not take it up again (a `next`, a
    /// `play N`, a queue edit that moves it), so that a dry station never holds the worker from the user's command.
    func streamCancellation(index: Int, path: TrackPath) -> StreamCancellation {
        StreamCancellation(
            stopping: { [self] in controlAnswer { $0.stopRequested } },
            superseded: { [self] in controlAnswer { $0.restart != nil } },
            leaving: { [self] in
                controlAnswer { state in
                    guard let restart = state.restart else { return false }
                    return restart.index != index || restart.index >= state.queue.count
                        || state.queue[restart.index] != path
                }
            })
    }

    func controlAnswer(_ question: (ControlState) -> Bool) -> Bool {
        control.lock(); defer { control.unlock() }
        return question(state)
    }

    /// Ends the worker thread and waits for it (join), which includes the worker's step in progress. Further
    /// control calls do nothing.
    public func stop() {
        precondition(!isWorkerThread, "stop called from the decode thread would wait for itself")
        control.lock()
        state.stopRequested = true
        control.broadcast()
        let mustJoin = !state.joinClaimed
        state.joinClaimed = true
        control.unlock()
        ring.wakeProducer()
        if mustJoin {
            WaitGuard.check("pthread_join (the decoder)")
            pthread_join(thread, nil)
        } else {
            control.lock()
            while !state.exited {
                control.wait()
            }
            control.unlock()
        }
    }

    // MARK: - Queries

    /// The format of the frames most recently written to the ring: what the output's stream should use.
    ///
    /// Nil before the first track opens. During a format change it stays the old format until the
    /// worker continues; use the notice's `to` for the new stream.
    public var currentFormat: AudioFormat? {
        control.lock()
        defer { control.unlock() }
        return state.currentFormat
    }

    /// The track and frame that ring frame `ringFrame` (for example the last frame heard) belongs to.
    ///
    /// Nil for frames before the first track or pruned long ago. Frames discarded unplayed map to the
    /// track they were decoded from. Past the end of the last track the frame runs on past its length.
    public func locate(ringFrame: Int) -> TrackPosition? {
        markerLock.withLock {
            guard let marker = markerList.last(where: { $0.ringFrame <= ringFrame }) else { return nil }
            return TrackPosition(trackIndex: marker.trackIndex, frame: marker.startFrame + ringFrame - marker.ringFrame,
                                 sampleRate: marker.format.sampleRate)
        }
    }

    /// The markers currently kept, oldest first (for tests).
    var trackMarkers: [TrackMarker] {
        markerLock.withLock { markerList }
    }
}
