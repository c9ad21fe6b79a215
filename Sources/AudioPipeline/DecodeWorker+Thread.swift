// The decode thread's own side of DecodeWorker (DecodeWorker.swift has the type, its threading note and the control
// calls): the loop that alternates a control checkpoint with one unit of work, and opening and activating tracks.
// Everything here runs on the worker thread.
#if canImport(Glibc)
import Glibc
import TrackPaths
#endif
import SystemSupport

extension DecodeWorker {
    // MARK: - The worker thread

    /// Whether the caller runs on the worker thread.
    var isWorkerThread: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }

    /// The thread's body: alternate between a control checkpoint and one unit of work.
    func run() {
        var work = WorkerState()
        while let queue = checkpoint(&work) {
            if let restart = work.restartToAnnounce {
                work.restartToAnnounce = nil
                notify(.restarted(generation: restart.generation, ringFrame: restart.ringFrame))
            }
            if let frames = work.bufferedToAnnounce {
                work.bufferedToAnnounce = nil
                notify(.buffered(readableFrames: frames))
            }
            step(&work, queue: queue)
        }
        control.lock()
        state.exited = true
        control.broadcast()
        control.unlock()
    }

    /// Applies the controller's requests and sleeps while idle; nil means stop.
    ///
    /// Here the worker holds no uncommitted frames (every write is committed within one step), which
    /// is what makes the write index a clean start for a new generation.
    func checkpoint(_ work: inout WorkerState) -> TrackList? {
        control.lock()
        defer { control.unlock() }
        while true {
            if state.stopRequested {
                return nil
            }
            if let restart = state.restart {
                state.restart = nil
                state.exhaustedAt = nil
                // A new start point supersedes the track being decoded (the step just done is abandoned) and any
                // pending format change.
                state.awaitingFormatContinue = false
                work.awaitingActivation = nil
                work.superseded = work.track ?? work.superseded
                work.track = nil
                work.next = restart
                if !restart.afterFailure { work.failuresInARow = 0 }
                state.failedAwaitingSkip = nil
                if let generation = state.unansweredGeneration {
                    state.unansweredGeneration = nil
                    // Under the lock, so a later `reposition` cannot be answered before this one; the new track's
                    // marker and `.trackStarted` come at this same ring frame, since opening writes nothing.
                    let start = ring.publishGenerationStart(generation)
                    work.restartToAnnounce = (generation, start)
                    work.answeredGeneration = generation
                }
            }
            if let wanted = state.bufferedWanted, ring.readableFrames >= wanted {
                state.bufferedWanted = nil
                work.bufferedToAnnounce = ring.readableFrames
            }
            let idle = work.track == nil && work.next == nil
            // A generation was started and its start point is not here yet (the controller discards in between):
            // decoding on would only write frames nobody hears, and could fill the ring with them. Waiting here keeps
            // the stale frames to the one step that was under way when the generation began.
            let startPointComing = ring.currentGeneration != work.answeredGeneration
            if idle || state.awaitingFormatContinue || startPointComing {
                control.wait()
                continue
            }
            return state.queue
        }
    }

    /// Does one unit of work: activate a track, open the next one, wait for space, or decode a chunk.
    func step(_ work: inout WorkerState, queue: TrackList) {
        if let activation = work.awaitingActivation {
            // `checkpoint` returned, so the format change was acknowledged.
            work.awaitingActivation = nil
            activate(activation, &work)
            return
        }
        guard let track = work.track else {
            if let start = work.next {
                work.next = nil
                open(start, queue: queue, &work)
            }
            return
        }
        let writable = ring.writableFrames
        if writable == 0 || (!work.filling && writable < refillFrames) {
            work.filling = false
            // No timeout: the consumer's read wakes it once the space is there, and every control call that gives
            // it other work wakes it too (`wakeProducer`), so a paused player's worker sleeps until it is needed.
            _ = ring.waitForSpace(minimumFrames: refillFrames, timeoutMilliseconds: nil)
            return
        }
        work.filling = true
        // Straight into the ring: the decoder writes its output into the free region, no staging buffer.
        let free = ring.writableRegions().first
        let region = UnsafeMutableBufferPointer(rebasing: free.prefix(stepFrames * FrameRing.samplesPerFrame))
        do {
            switch try track.decoder.decode(into: region) {
            case .frames(let frames):
                ring.commitWrite(frames: frames)
                if let live = work.live, live.index == track.index, let metadata = live.source.takeMetadataChange() {
                    notify(.metadataChanged(index: track.index, ringFrame: ring.totalFramesWritten, metadata: metadata))
                }
            case .formatChanged(let format):
                requestActivation(.formatChange, format: format, &work)
            case .finished:
                notify(.trackDecoded(index: track.index, ringFrame: ring.totalFramesWritten))
                work.track = nil
                work.next = successor(ofEnded: track.index, queue: queue)
            }
        } catch {
            reportFailure(of: track.index, error, &work)
        }
    }

    /// Opens the track at `start` and seeks; a failure is reported and the next track is tried.
    func open(_ start: StartPoint, queue: TrackList, _ work: inout WorkerState) {
        guard start.index >= 0, start.index < queue.count else {
            // The queue may have grown since `queue` was read: then try again with the longer one.
            control.lock()
            let grown = start.index >= 0 && start.index < state.queue.count
            if !grown { state.exhaustedAt = start.index }
            control.unlock()
            if grown {
                work.next = start
            } else {
                notify(.queueFinished(ringFrame: ring.totalFramesWritten))
            }
            return
        }
        let path = queue[start.index]
        let superseded = work.superseded
        work.superseded = nil
        // A start in the file the superseded track was decoding seeks in its decoder (the same track, opened from
        // the same path). A decoder that cannot seek there is let go, and the file opened afresh.
        if let superseded, superseded.index == start.index, superseded.path == path {
            // A live stream's rejoin drops what its fetch received before the decoder goes on (rows 32 and 33).
            if start.rejoinLive, let live = work.live, live.index == start.index { live.source.rejoinLive() }
        }
        if let superseded, superseded.index == start.index, superseded.path == path,
           (try? superseded.decoder.seek(toFrame: start.frame(in: superseded.decoder.format))) != nil {
            work.track = superseded
            work.failuresInARow = 0
            requestActivation(.trackStart, format: superseded.decoder.format, &work)
            return
        }
        do {
            // The decoder is chosen by the file's content. Later MP3s are decoded at the rate already in the ring
            // (converted by libmpg123 when theirs differs), so a queue of MP3s never changes the stream's rate; the
            // other formats come at their own rate, and a change is announced like any other (`.formatChange`).
            // The gain (ReplayGain.swift) is chosen here, at the track's start, and scales its every frame.
            let opened = try AudioFileKind.openDecoder(path: path, outputRate: work.ringFormat?.sampleRate,
                                                       cancellation: streamCancellation(index: start.index,
                                                                                        path: path),
                                                       live: (liveBuffer, start.index))
            work.live = (opened as? any LiveMetadataSource).map { (start.index, $0) }
            let decoder = replayGain.applied(to: opened, path: path)
            let frame = start.frame(in: decoder.format)
            if frame > 0 {
                // A restored position past the track's end (the file changed since) starts at its last frame.
                try decoder.seek(toFrame: decoder.lengthFrames.map { min(frame, max($0 - 1, 0)) } ?? frame)
            }
            work.track = (start.index, path, decoder)
            work.failuresInARow = 0
            requestActivation(.trackStart, format: decoder.format, &work)
        } catch {
            reportFailure(of: start.index, error, &work)
        }
    }

    /// Activates the current track's frames now if their format matches the ring's, else posts
    /// `.formatChange` and leaves the activation until the controller continues.
    func requestActivation(_ activation: Activation, format: AudioFormat, _ work: inout WorkerState) {
        guard let ringFormat = work.ringFormat, ringFormat != format else {
            activate(activation, &work)
            return
        }
        control.lock()
        // Set before the notice, so a handler that continues at once is not missed.
        state.awaitingFormatContinue = true
        control.unlock()
        work.awaitingActivation = activation
        notify(.formatChange(from: ringFormat, to: format, ringFrame: ring.totalFramesWritten))
    }

    /// Records a marker for the current track's frames from the write index on (and announces a start).
    func activate(_ activation: Activation, _ work: inout WorkerState) {
        guard let track = work.track else { return }
        let format = track.decoder.format
        work.ringFormat = format
        control.lock()
        state.currentFormat = format
        control.unlock()

        let ringFrame = ring.totalFramesWritten
        let marker = TrackMarker(ringFrame: ringFrame, trackIndex: track.index, format: format,
                                 startFrame: track.decoder.positionFrame, lengthFrames: track.decoder.lengthFrames)
        let oldestNeeded = ring.totalFramesRead - markerRetentionFrames
        markerLock.withLock {
            markerList.append(marker)
            // A marker is needed while frames it covers may still be asked about: until the next
            // marker starts before the oldest frame a listener could still be hearing.
            while markerList.count > 1
                && (markerList[1].ringFrame <= oldestNeeded || markerList.count > Self.markerLimit) {
                markerList.removeFirst()
            }
        }
        if activation == .trackStart {
            notify(.trackStarted(index: track.index, ringFrame: ringFrame, format: format,
                                 lengthFrames: track.decoder.lengthFrames, metadata: track.decoder.metadata))
        }
    }
}
