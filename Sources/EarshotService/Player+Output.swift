// The player's output side: connecting to the server, opening and closing the stream, moving the decoder, and
// what the server and the decoder report (see Player.swift).
import AudioPipeline
import EarshotCore
import Foundation
import PulseOutput

extension Player {
    // MARK: Output

    /// Connects to the sound server (blocking, with libpulse's timeout) and subscribes to its changes.
    func connect() -> Bool {
        // The generation only moves on success: a failed attempt must not orphan a background reconnection,
        // whose result is then still current.
        let generation = connectionGeneration + 1
        guard let server = Self.makeConnection(generation: generation, inbox: inbox) else { return false }
        let candidate = server.connection
        connectionGeneration = generation
        connection = candidate
        noteRealtime(of: server)
        // A background reconnection still running belongs to an older generation: its result is dropped, and a
        // later loss starts a new one.
        reconnecting = false
        serverName = (try? candidate.serverInfo())?.displayName
        log.record("server", ["state": "connected"])
        return true
    }

    /// Remembers and logs how the new connection's mainloop thread is scheduled.
    func noteRealtime(of server: ConnectedServer) {
        realtime = (server.realtime, server.threadID)
        log.record("realtime", ["thread": "mainloop", "scheduling": server.realtime.description])
    }

    /// Opens the stream when there is a connection and the audio's format is known, and reports it (`streamOpened`:
    /// the rules uncork it when the player is playing).
    func ensureStream() {
        guard stream == nil, let connection, let format = worker.currentFormat else { return }
        streamGeneration += 1
        let generation = streamGeneration
        let inbox = self.inbox
        let properties = StreamProperties(mediaRole: configuration.mediaRole, mediaName: title(of: heard?.trackIndex))
        var opened: PlaybackStream?
        for sinkName in [configuration.sinkName, nil] where opened == nil {
            opened = try? PlaybackStream(
                connection: connection, sampleRate: format.sampleRate, ring: ring, properties: properties,
                targetLatencyMilliseconds: configuration.targetLatencyMilliseconds, sinkName: sinkName
            ) { notice in inbox.yield(.stream(notice, generation: generation)) }
            if sinkName == nil { break }
        }
        guard let opened else {
            log.record("output", ["command": "openStream", "error": "failed"])
            dispatch(.outputCommandFailed)
            return
        }
        stream = opened
        disarmWatchdog()
        if queueEndRingFrame != nil { opened.setEndOfData(true) }
        if rules.volumePercent != 100 { try? opened.setVolume(percent: rules.volumePercent) }
        followOurSink()
        // Every sink, for the devices behind a virtual sink of ours.
        for sink in (try? connection.sinks()) ?? [] { dispatchAll(translator.sinkChanged(sink)) }
        if let inputs = try? connection.sinkInputs() {
            for input in inputs { dispatchAll(translator.sinkInputChanged(input, at: monotonicMoment())) }
        }
        for source in (try? connection.sources()) ?? [] { translator.sourceChanged(source) }
        for capture in (try? connection.sourceOutputs()) ?? [] { translator.sourceOutputChanged(capture) }
        for card in (try? connection.cards()) ?? [] { dispatchAll(translator.cardChanged(card, at: monotonicMoment())) }
        // A playing player's stream is uncorked next: let it find audio in the ring.
        if rules.isPlaying { waitForDecodedAudio() }
        dispatch(.streamOpened)
    }

    /// Gives the decoder (~1000x real time) a moment to put two server buffers into the ring after it was
    /// emptied, so the write callbacks of a running stream do not find it short. At most 200 ms.
    func waitForDecodedAudio() {
        let rate = worker.currentFormat?.sampleRate ?? 44_100
        let wanted = rate * configuration.targetLatencyMilliseconds * 2 / 1000
        for _ in 0..<100 where ring.readableFrames < wanted && queueEndRingFrame == nil { usleep(2000) }
    }

    /// Waits for the listener to hear new audio before the stall watchdog may act again.
    func disarmWatchdog() {
        watchdogBase = nil
        watchdogArmed = false
    }

    /// Tells the translator which sink our stream is on now.
    func followOurSink() {
        guard let stream, let connection, let sinkIndex = stream.sinkIndex,
              let sink = (try? connection.sinks())?.first(where: { $0.index == sinkIndex }) else { return }
        dispatchAll(translator.ourStreamIsOn(sink, sinkInputIndex: stream.sinkInputIndex, at: monotonicMoment()))
    }

    func dispatchAll(_ events: [Event]) {
        for event in events { dispatch(event) }
    }

    /// Closes our stream (keeping its underrun count).
    func closeStream() {
        guard let closing = stream else { return }
        underrunsOfClosedStreams += closing.underrunCount
        serverUnderflowsOfClosedStreams += closing.serverUnderflowCount
        closing.close()
        stream = nil
        streamGeneration += 1
        dispatch(.streamClosed)
        // A drain dies with its stream; a pending format change drains again on the next one.
        drainingFor = nil
    }

    /// The position the listener last heard, read from the stream's timing now when there is a stream.
    func currentHeardPosition() -> TrackPosition? {
        guard let stream, let frame = stream.heardRingFrame() else { return heard }
        if let floor = repositionFloor, frame < floor.ringFrame { return floor.position }
        return worker.locate(ringFrame: frame) ?? heard
    }

    /// After our stream died: what it had taken from the ring but not yet played died with it. The rules flush
    /// when the player was playing; when it was already paused (a pause corks without flushing) nothing else
    /// moves the decoder back, and a later resume would skip what the dead stream held (its whole buffer, 50 ms
    /// by default). So unless a reposition happened since `repositionsBefore`, decoding restarts at the position
    /// heard.
    func restartDecodingAtHeardPosition(unlessRepositionedSince repositionsBefore: Int) {
        guard repositionCount == repositionsBefore, case .paused = rules.playback, let heard else { return }
        reposition(to: heard)
    }

    /// Drops what is queued but unheard and continues decoding at `position`.
    func reposition(to position: TrackPosition) {
        repositionCount += 1
        // Read before production restarts: ring frames from here on are the new position's.
        var floorFrame = ring.totalFramesWritten
        if !workerLoaded {
            workerLoaded = true
            worker.load(paths: paths, startIndex: position.trackIndex, startFrame: position.frame)
        } else {
            worker.pauseProduction()
            defer {
                // The queue may have changed: the worker takes the current one, and the resume says where in it.
                worker.load(paths: paths, startIndex: position.trackIndex, startFrame: position.frame)
                worker.resumeProduction(trackIndex: position.trackIndex, frame: position.frame)
            }
            if let stream {
                do {
                    try stream.flush()
                } catch {
                    log.record("output", ["command": "flush", "error": "\(error.code.rawValue)"])
                }
            } else {
                // No stream, so no consumer: this context may empty the ring.
                _ = ring.discardReadable()
            }
            floorFrame = ring.totalFramesWritten
        }
        repositionFloor = (floorFrame, position)
        heard = position
        pendingFormatChange = nil
        queueEndRingFrame = nil
        // The flush cancelled any drain; setEndOfData(false) would too.
        drainingFor = nil
        trackEndRingFrames = [:]
        lastHeardRingFrame = nil
        reportedHeardTrack = position.trackIndex
        stream?.setEndOfData(false)
        disarmWatchdog()
        if rules.isPlaying { waitForDecodedAudio() }
    }

    // MARK: Notices

    func decoderNoticed(_ notice: DecodeNotice) {
        switch notice {
        case .trackStarted(let index, _, let format, let lengthFrames, let metadata):
            tracks[index] = TrackInfo(format: format, lengthFrames: lengthFrames, metadata: metadata)
            anyTrackStarted = true
            if stream == nil && rules.playback != .idle && rules.playback != .stopped { ensureStream() }
        case .trackFailed(let index, let error):
            let failure = Self.failure(of: error.kind)
            FileHandle.standardError.write(Data(
                "earshot: track \(index + 1) of \(paths.count) skipped: \(error.description)\n".utf8))
            dispatch(.trackFailed(index: index, failure: failure, next: index + 1 < paths.count ? index + 1 : nil))
        case .trackDecoded(let index, let ringFrame):
            trackEndRingFrames[index] = ringFrame
        case .formatChange(_, let format, let ringFrame):
            log.record("output", ["formatChange": "\(format.sampleRate)Hz"])
            pendingFormatChange = (format, ringFrame)
            // Let the stream run dry at the boundary instead of padding it with silence.
            stream?.setEndOfData(true)
            if stream == nil { applyFormatChange() }
        case .queueFinished(let ringFrame):
            queueEndRingFrame = ringFrame
            stream?.setEndOfData(true)
        }
    }

    /// Reopens the stream at the new format once everything before the boundary was heard.
    func applyFormatChange() {
        guard pendingFormatChange != nil else { return }
        pendingFormatChange = nil
        let wasOpen = stream != nil
        closeStream()
        worker.continueAfterFormatChange()
        if wasOpen || rules.isPlaying {
            // `ensureStream` opens at the worker's format; wait briefly for the worker to switch to it.
            for _ in 0..<50 where worker.currentFormat == nil { usleep(1000) }
            ensureStream()
        }
    }

    /// Asks the stream to play out its tail for `purpose`; the `.drained` notice completes it. The owner does not
    /// wait: an output lost meanwhile corks and flushes, which cancels the drain, and the tail is decoded again.
    func startDrain(for purpose: DrainPurpose) {
        guard let stream else { return }
        do {
            try stream.drain()
            drainingFor = purpose
        } catch {
            // The stream cannot drain (it is failing): what was handed over is as played as it will be.
            log.record("output", ["command": "drain", "error": "\(error.code.rawValue)"])
            drainCompleted(purpose)
        }
    }

    /// The tail drained for `purpose` has been heard.
    func drainCompleted(_ purpose: DrainPurpose) {
        switch purpose {
        case .formatChange:
            applyFormatChange()
        case .queueEnd:
            queueEndRingFrame = nil
            dispatch(.queuePlayedOut)
        }
    }

    func streamNoticed(_ notice: StreamNotice) {
        let now = monotonicMoment()
        switch notice {
        case .drained:
            guard let purpose = drainingFor else { return }
            drainingFor = nil
            drainCompleted(purpose)
        case .ready, .started, .underflow:
            // Underflows are counted by the stream (status: serverUnderflows); logging each would flood the journal
            // on a loaded machine.
            break
        case .corkRequested:
            dispatch(.interruptionBegan(.serverCorkRequest, at: now))
        case .uncorkRequested:
            dispatch(.interruptionEnded(.serverCorkRequest, resumeAllowed: true, at: now))
        case .unknownEvent:
            log.record("notice", ["kind": "unknownStreamEvent", "action": "ignored"])
        case .moved(_, let oldSinkStillExists):
            // The stream corked itself inside the moved callback (safety hold); now decide.
            if !oldSinkStillExists { dispatchAll(translator.ourStreamLeftRemovedSink(at: now)) }
            followOurSink()
            if oldSinkStillExists {
                dispatch(.routeChanged)
                _ = try? stream?.releaseSafetyHold()
                disarmWatchdog()
            }
        case .failed, .killed:
            log.record("output", ["stream": "failed"])
            closeStream()
            dispatchAll(translator.ourStreamIsGone(at: now))
            let repositionsBefore = repositionCount
            dispatch(.outputLost(.streamFailed))
            restartDecodingAtHeardPosition(unlessRepositionedSince: repositionsBefore)
        }
    }

    func connectionNoticed(_ notice: ConnectionNotice) {
        let now = monotonicMoment()
        switch notice {
        case .ready, .serverChange:
            // Port changes are classified by the translator from whole sink snapshots (`sinkChanged`).
            break
        case .serverInfoChanged(let info):
            serverName = info.displayName
        case .failed, .terminated:
            serverLost(at: now)
        case .sinkAdded(let sink):
            dispatchAll(translator.sinkAdded(sink))
        case .sinkChanged(let sink):
            dispatchAll(translator.sinkChanged(sink))
        case .sinkRemoved(let index):
            dispatchAll(translator.sinkRemoved(index, at: now))
        case .sinkInputChanged(let input):
            dispatchAll(translator.sinkInputChanged(input, at: now))
        case .sinkInputRemoved(let index):
            dispatchAll(translator.sinkInputRemoved(index, at: now))
        case .cardChanged(let card):
            dispatchAll(translator.cardChanged(card, at: now))
        case .cardRemoved(let index):
            dispatchAll(translator.cardRemoved(index, at: now))
        case .sourceChanged(let source):
            translator.sourceChanged(source)
        case .sourceRemoved(let index):
            translator.sourceRemoved(index)
        case .sourceOutputChanged(let capture):
            translator.sourceOutputChanged(capture)
        case .sourceOutputRemoved(let index):
            translator.sourceOutputRemoved(index)
        }
    }

    /// The server went away: pause with the position kept, forget its streams, and reconnect in the background.
    func serverLost(at now: Moment) {
        log.record("server", ["state": "lost"])
        // The stream and its timing died with the server, but the stream read its timing once more as the connection
        // failed: the position is what was heard when the server went away, not at the last tick (up to 50 ms ago).
        if let position = currentHeardPosition() { heard = position }
        closeStream()
        connection = nil
        realtime = nil
        serverName = nil
        connectionGeneration += 1
        let repositionsBefore = repositionCount
        dispatch(.outputLost(.serverLost))
        restartDecodingAtHeardPosition(unlessRepositionedSince: repositionsBefore)
        // Interruptions reported by the dead server can never end by themselves.
        dispatchAll(translator.ourStreamIsGone(at: now))
        if rules.interruptions.contains(.serverCorkRequest) {
            dispatch(.interruptionEnded(.serverCorkRequest, resumeAllowed: false, at: now))
        }
        startReconnecting()
    }

    func startReconnecting() {
        guard !reconnecting else { return }
        reconnecting = true
        let generation = connectionGeneration
        let inbox = self.inbox
        Thread.detachNewThread {
            var delay: UInt32 = 200_000
            while true {
                usleep(delay)
                if let server = Player.makeConnection(generation: generation, inbox: inbox) {
                    inbox.yield(.reconnected(server, generation: generation))
                    return
                }
                delay = min(delay * 2, 1_000_000)
            }
        }
    }
}
