// The player's output side: connecting to the server, opening and closing the stream, moving the decoder, and
// what the server and the decoder report (see Player.swift).
import AudioPipeline
import EarshotCore
import Glibc
import SystemSupport
import PulseOutput
import TrackPaths

extension Player {
    // MARK: Output

    /// Starts connecting to the sound server: the rules ask for the first attempt (row 42, `attemptConnection`).
    func startConnecting() {
        dispatch(.playerStarted(at: eventMoment()))
    }

    /// A connection attempt's connection is the current one now (`OutputLink.connected`). The rules hear of it: after a
    /// loss it is an output appearing, which never resumes by itself, and a stream they asked for meanwhile is opened.
    func connected(_ server: ConnectedServer) {
        noteRealtime(of: server)
        // Not waited for: the answer arrives as `.serverInfoChanged`.
        do {
            try server.connection.requestServerInfo()
        } catch {
            // Status shows no server name until the next answer; a connection that refuses a query is failing, and
            // its own notice tells the rules so.
            log.record("server", ["query": "serverInfo", "error": "\(error.code.rawValue)"])
        }
        let awaySince = rules.server.awaySince
        let waited = awaySince.map { eventMoment().milliseconds(since: $0) }
        log.record("server", ["state": "connected", "afterMs": waited.map { "\($0)" } ?? "-"])
        dispatch(.serverConnected)
    }

    /// A connection attempt found no server: the rules hear of it, and decide when the next one is made (row 42), and
    /// whether a foreground player ends (row 29).
    func connectionAttemptFailed() {
        // Logged once each time the server is away, not at every attempt; not when the rules ended the player.
        let firstFailure = !rules.server.attemptFailed
        dispatch(.serverConnectFailed(at: eventMoment()))
        if firstFailure && exitCode == nil { log.record("server", ["state": "unavailable", "action": "waiting"]) }
    }

    /// Logs how the new connection's mainloop thread is scheduled (the link keeps it for status).
    func noteRealtime(of server: ConnectedServer) {
        log.record("realtime", ["thread": "mainloop", "scheduling": server.realtime.description])
    }

    /// What an inventory (`requestInventory`) was asked for.
    enum InventoryPurpose: Sendable {
        /// Describing the server to the translator before the new stream is reported open.
        case streamOpened
        /// Learning the sink our stream is on after a move.
        case followSink
    }

    /// Opens the stream when there is a connection and the audio's format is known. Nothing here waits: the open is
    /// sent, `.ready` asks the server for its inventory, and once the translator has seen it the rules learn that
    /// the stream is open (`streamOpened`: they uncork it when the player is playing).
    /// Before the decoder has started a track the format is not known: the open waits for it (`streamAwaitsFormat`).
    func ensureStream(format newFormat: AudioFormat? = nil, on sink: SinkChoice = .configured) {
        guard stream == nil, let connection else { return }
        guard let format = newFormat ?? worker.currentFormat else {
            streamAwaitsFormat = sink
            return
        }
        streamAwaitsFormat = nil
        openStream(on: connection, format: format, sinkName: sink == .configured ? configuration.sinkName : nil)
    }

    /// Sends the open of a stream on `sinkName` (nil: the default sink). A named sink that libpulse refuses at once
    /// (here) or the server refuses later (`streamOpenFailed`) is reported to the rules, which decide whether to open
    /// on the default sink instead (`configuredSinkRefused`).
    func openStream(on connection: PulseConnection, format: AudioFormat, sinkName: String?) {
        let generation = link.newStreamGeneration()
        let inbox = self.inbox
        let properties = StreamProperties(mediaRole: configuration.mediaRole, mediaName: title(of: heard?.trackIndex))
        let opened: PlaybackStream
        do {
            opened = try PlaybackStream(
                connection: connection, sampleRate: format.sampleRate, ring: ring, properties: properties,
                targetLatencyMilliseconds: configuration.targetLatencyMilliseconds, sinkName: sinkName
            ) { notice in inbox.yield(.stream(notice, generation: generation)) }
        } catch {
            log.record("output", ["command": "openStream", "error": "\(error.code.rawValue)"])
            dispatch(sinkName != nil ? .configuredSinkRefused : .outputCommandFailed)
            return
        }
        link.opened(opened, for: StreamOpening(format: format, sinkName: sinkName))
        disarmWatchdog()
        if queueEndRingFrame != nil { opened.setEndOfData(true) }
        // Sent right behind the stream's creation, not after its `.ready`: one round trip to the server fewer before
        // the first sound (see `streamConnected`).
        requestOpeningInventory(failing: { link.openingListsAgainWhenReady() })
    }

    /// The stream is connected (`.ready`): its settings are sent. The server is listed for the translator (every sink,
    /// for the devices behind a virtual sink of ours; the streams, for calls already in progress; sources, capture
    /// streams and cards, for profile switches) before the rules hear that the stream is open, so that a call already
    /// under way holds the music before it could be uncorked. The lists were asked for with the stream's creation;
    /// a server answers in order (PulseAudio does), so they arrive after `.ready` and describe the server from the
    /// stream's creation on, and everything after them comes through the subscription. Lists that came back before
    /// `.ready` (pipewire-pulse may answer a creation late) are dropped and asked for again now, so that no older list
    /// is laid over what the subscription reported meanwhile.
    func streamConnected() {
        guard stream != nil, let opening = streamOpening else { return }
        link.openingStreamReady()
        // The rules set the user's volume when they hear the stream is open (`streamOpened`), before any uncork;
        // the fade and duck gains are set under it (Player+Edges).
        streamVolumeOnOpen()
        if opening.listsAgainWhenReady {
            requestOpeningInventory(failing: { streamDescribed(ServerInventory()) })
        }
    }

    /// Asks for the lists a new stream's translator needs (`streamConnected`); `failing` runs when they cannot be sent.
    func requestOpeningInventory(failing: () -> Void) {
        let generation = link.streamGeneration
        let inbox = self.inbox
        do throws(PulseError) {
            guard let connection else { throw PulseError(code: .badState, step: "request inventory") }
            try connection.requestInventory { inventory in
                inbox.yield(.inventory(inventory, purpose: .streamOpened, generation: generation))
            }
        } catch {
            log.record("output", ["query": "inventory", "error": "\(error.code.rawValue)"])
            failing()
        }
    }

    /// Hands a listed inventory to what asked for it.
    func inventoryArrived(_ inventory: ServerInventory, for purpose: InventoryPurpose) {
        switch purpose {
        case .streamOpened:
            guard let opening = streamOpening else { return }
            // Lists that came before the stream was ready are asked for again (see `streamConnected`).
            if opening.isReady { streamDescribed(inventory) } else { link.openingListsAgainWhenReady() }
        case .followSink: ourSinkListed(inventory.sinks)
        }
    }

    /// The new stream's server is described: the translator learns it, then the rules learn the stream is open.
    func streamDescribed(_ inventory: ServerInventory) {
        guard streamOpening != nil else { return }
        ourSinkListed(inventory.sinks)
        for sink in inventory.sinks { dispatchAll(translator.sinkChanged(sink)) }
        for input in inventory.sinkInputs { dispatchAll(translator.sinkInputChanged(input, at: eventMoment())) }
        let now = eventMoment()
        for source in inventory.sources { dispatchCalls(translator.sourceChanged(source, at: now)) }
        // Captures running before our stream count at once: a call under way holds the music before the uncork.
        for capture in inventory.sourceOutputs { dispatchCalls(translator.sourceOutputListed(capture, at: now)) }
        for card in inventory.cards { dispatchAll(translator.cardChanged(card, at: eventMoment())) }
        link.openingFinished()
        // A playing player's stream is uncorked next (`uncorkWhenDecoded`).
        dispatch(.streamOpened)
    }

    /// The server refused the stream before it was ready (`.failed` while opening): on a named sink, the rules hear
    /// that the configured sink refused it (they decide whether to open on the default sink); otherwise the open
    /// failed, which they hear as a failed output command.
    func streamOpenFailed(_ opening: StreamOpening) {
        link.openFailed()
        log.record("output", ["command": "openStream", "error": "failed"])
        dispatch(opening.sinkName != nil ? .configuredSinkRefused : .outputCommandFailed)
    }

    /// Uncorks the stream once the ring holds two server buffers, so the first write callbacks find audio rather
    /// than pad silence (the decoder, ~1000x real time, needs a moment after the ring was emptied or a track was
    /// opened). When they are not there yet the owner does not wait: it asks the decoder for `.buffered` and uncorks
    /// then (`decodedAudioArrived`); a cork or a closed stream in between withdraws the uncork.
    func uncorkWhenDecoded() {
        if awaitDecodedAudio() {
            sequence.uncorkWaitsForAudio()
            return
        }
        uncork()
    }

    /// Whether the ring still lacks the audio the stream's first requests will take (two server buffers, at most half
    /// the ring); if so the decoder is asked for `.buffered`. At the queue's end or a format change no more audio comes
    /// before the stream plays what it has, so nothing is awaited then.
    func awaitDecodedAudio() -> Bool {
        let rate = worker.currentFormat?.sampleRate ?? 44_100
        // At most half the ring, which the decoder keeps fuller than that: a long target latency asks for more
        // than the ring holds.
        let wanted = min(rate * configuration.targetLatencyMilliseconds * 2 / 1000, ring.capacity / 2)
        guard ring.readableFrames < wanted && queueEndRingFrame == nil && pendingFormatChange == nil else {
            return false
        }
        worker.noticeWhenBuffered(frames: wanted)
        // The decoder looks between two chunks: it may have got there before it was asked.
        guard ring.readableFrames < wanted else {
            worker.noticeWhenBuffered(frames: nil)
            return false
        }
        return true
    }

    /// The decoder buffered what a waiting uncork or refill needs, or will write nothing more before the stream
    /// plays (the queue's end, a format change): the uncork or the refill is carried out now.
    func decodedAudioArrived() {
        guard sequence.awaitsAudio else { return }
        worker.noticeWhenBuffered(frames: nil)
        let due = sequence.audioArrived()
        if due.refill { stream?.refilled() }
        if due.uncork { uncork() }
    }

    /// Withdraws an uncork or a refill that waits for decoded audio (a cork came first, or the stream closed; an
    /// uncork ends the stream's refill too).
    func withdrawWaitingUncork() {
        if sequence.withdrawAudioWaits() { worker.noticeWhenBuffered(frames: nil) }
    }

    /// The rules' flush (after a cork: rule 10). It drops what is queued and continues decoding at the position heard,
    /// so that position must be the one the server confirms: while the cork sent just before is not yet acknowledged,
    /// libpulse still interpolates a stream that may have stopped being played already (PipeWire stops a removed
    /// sink's streams before its SINK REMOVE arrives), so the flush waits for `.corked`, which comes with fresh timing.
    /// It is carried out then, or before the next command, or when the stream closes, whichever comes first.
    func flushWhenCorked() {
        if sequence.flushRequested(streamOpen: stream != nil) { flushNow() }
    }

    /// Carries out the rules' flush now (`OutputSequence` says when): at the position heard.
    func flushNow() {
        reposition(to: currentHeardPosition() ?? TrackPosition(trackIndex: rules.queue.index, frame: 0,
                                                                 sampleRate: 44_100))
    }

    /// Sends the uncork; its acknowledgement (`.uncorked`) brings `streamUncorked` (`streamNoticed`).
    func uncork() {
        guard let stream else { return }
        do {
            try stream.uncork()
        } catch {
            log.record("output", ["command": "uncork", "error": "\(error.code.rawValue)"])
            dispatch(.outputCommandFailed)
        }
    }

    /// The stream starts again (an uncork, a new stream, a flush, a move): until the listener hears new audio, the
    /// stall watchdog reports its silences as before the sink played (`heardSinceStart`).
    func disarmWatchdog() {
        watchdogBase = nil
        heardSinceStart = false
    }

    /// Lists the server's sinks, to tell the translator which sink our stream is on now (`ourSinkListed`).
    func followOurSink() {
        let generation = link.streamGeneration
        let inbox = self.inbox
        do {
            try connection?.requestInventory(.sinks) { inventory in
                inbox.yield(.inventory(inventory, purpose: .followSink, generation: generation))
            }
        } catch {
            log.record("output", ["query": "sinks", "error": "\(error.code.rawValue)"])
        }
    }

    /// Tells the translator which of `sinks` our stream is on now (as the stream last reported it).
    func ourSinkListed(_ sinks: [SinkSnapshot]) {
        guard let stream, let sinkIndex = stream.sinkIndex, let sink = sinks.first(where: { $0.index == sinkIndex })
        else { return }
        dispatchAll(translator.ourStreamIsOn(sink, sinkInputIndex: stream.sinkInputIndex, at: eventMoment()))
    }

    func dispatchAll(_ events: [Event]) {
        for event in events { dispatch(event) }
    }

    /// Closes our stream (keeping its underrun count).
    func closeStream() {
        guard link.closeStream() else { return }
        // No acknowledgement comes from a closed stream; a flush that waited for one is carried out without the
        // stream (the ring is emptied here).
        let pending = sequence.streamClosed()
        if pending.flush { flushNow() }
        if pending.withdrawAudioWait { worker.noticeWhenBuffered(frames: nil) }
        dispatch(.streamClosed)
        // A drain dies with its stream; a pending format change drains again on the next one.
        drainingFor = nil
    }

    /// The position the listener last heard, read from the stream's timing now when there is a stream.
    func currentHeardPosition() -> TrackPosition? {
        listening.position(atRingFrame: stream?.heardRingFrame(), locate: worker.locate(ringFrame:))
    }

    /// Drops what is queued but unheard and continues decoding at `position`, without waiting for the decoder (whose
    /// step in progress may be opening a file on a slow disk): a new ring generation keeps whatever that step still
    /// writes from being heard, and the decoder answers it with `.restarted` once it has taken the new position (see
    /// `DecodeWorker`, "Repositioning"). The three steps' order is the ring's protocol.
    /// `milliseconds`: the decoder seeks to that time at the track's own rate, which the owner may not know yet (it
    /// opens no files): `position` is then what the listener is shown until the track starts.
    func reposition(to position: TrackPosition, milliseconds: Int? = nil, rejoinLive: Bool = false) {
        repositionCount += 1
        workerLoaded = true
        // 1. From here on the ring's consumer reads nothing until the decoder answers this generation.
        let generation = ring.beginGeneration()
        decoderGeneration = generation
        // 2. What was queued is dropped, and its room freed for the new audio.
        if let stream {
            // The ring is emptied and the flush point kept before this returns (under libpulse's lock, which the
            // write callback holds too, so every later callback sees the new generation); the server's part is
            // sent, and only its acknowledgement comes later (`.flushed`). A running stream pads no silence until
            // the decoder has refilled the ring (`refillWhenDecoded`).
            stream.flush(refillFirst: true)
        } else {
            // No stream, so no consumer: this context may empty the ring.
            _ = ring.discardReadable()
        }
        // 3. The decoder's new work, after the discard (which could otherwise drop the new audio's first frames). The
        // queue may have changed: the worker takes the current one.
        if let milliseconds {
            worker.reposition(paths: paths, trackIndex: position.trackIndex, milliseconds: milliseconds,
                              generation: generation)
        } else {
            worker.reposition(paths: paths, trackIndex: position.trackIndex, frame: position.frame,
                              generation: generation, rejoinLive: rejoinLive)
        }
        // Where the new audio starts in the ring comes with `.restarted`.
        listening.repositioned(to: position, floorRingFrame: nil)
        pendingFormatChange = nil
        queueEndRingFrame = nil
        // The flush cancelled any drain; setEndOfData(false) would too.
        drainingFor = nil
        stream?.setEndOfData(false)
        disarmWatchdog()
        // A waiting uncork's `.buffered` may have been answered for the old audio, a notice now dropped: asked again.
        if sequence.uncorkAwaitsAudio && !awaitDecodedAudio() { decodedAudioArrived() }
        refillWhenDecoded()
    }

    /// After a flush of a running stream: the owner does not wait for the decoder; it asks for `.buffered`, and the
    /// stream, which meanwhile writes what the ring holds with no silence, is refilled then (`decodedAudioArrived`).
    /// A corked stream needs nothing: its uncork waits for the audio (`uncorkWhenDecoded`).
    func refillWhenDecoded() {
        guard let stream, stream.isAwaitingRefill else { return }
        if awaitDecodedAudio() {
            sequence.refillWaitsForAudio()
        } else {
            stream.refilled()
        }
    }

    // MARK: Notices

    func decoderNoticed(_ notice: DecodeNotice) {
        if case .restarted(let generation, let ringFrame) = notice {
            decoderAnsweredGeneration = generation
            if generation == decoderGeneration { listening.newAudioStarts(atRingFrame: ringFrame) }
            return
        }
        // Until the decoder has taken the latest reposition, what it reports (a track started or failed, the queue's
        // end, a format change, audio buffered) is about audio that is never heard.
        guard decoderAnsweredGeneration == decoderGeneration else { return }
        switch notice {
        case .restarted:
            break
        case .trackStarted(let index, _, let format, let lengthFrames, let metadata):
            recordStartedTrack(index, format: format, lengthFrames: lengthFrames, metadata: metadata)
            if paths.indices.contains(index), paths[index].isStreamURL { dispatch(.liveStreamStarted(index: index)) }
            // What is known of a track is kept near the cursor only (the one before it for `previous`, and those the
            // decoder has opened ahead), so a long queue played through does not keep every track's tags.
            if tracks.count > 32 {
                let kept = (rules.queue.index - 1)...
                tracks = tracks.filter { kept.contains($0.key) }
            }
            // Only a stream the rules asked for (`openStream`) before the format was known is opened here.
            if let sink = streamAwaitsFormat { ensureStream(on: sink) }
        case .trackFailed(let index, let error, let inARow):
            let failure = Self.failure(of: error.kind)
            log.tellUser(
                "earshot: track \(index + 1) of \(paths.count) skipped: \(error.description)\n")
            // The rules name the track the decoder tries next (`skipFailedTrack`), from their own play order.
            dispatch(.trackFailed(index: index, failure: failure, failuresInARow: inARow))
        case .metadataChanged(let index, _, let metadata):
            streamMetadataChanged(index, metadata)
        case .trackDecoded(let index, let ringFrame):
            listening.trackDecoded(index, endsAtRingFrame: ringFrame)
        case .formatChange(_, let format, let ringFrame):
            log.record("output", ["formatChange": "\(format.sampleRate)Hz"])
            pendingFormatChange = (format, ringFrame)
            // Let the stream run dry at the boundary instead of padding it with silence.
            stream?.setEndOfData(true)
            // A waiting uncork lets the stream play the old format's tail: no more of it comes.
            if stream == nil { dispatch(.formatChangeReached) } else { decodedAudioArrived() }
        case .queueFinished(let ringFrame):
            queueEndRingFrame = ringFrame
            stream?.setEndOfData(true)
            decodedAudioArrived()
        case .buffered:
            decodedAudioArrived()
        }
    }

    /// Carries out the rules' `switchFormat` once everything before the boundary was heard: closes the stream, lets
    /// the decoder go on in the new format and, when `reopen`, opens a stream in it.
    func switchFormat(reopen: Bool) {
        guard let change = pendingFormatChange else { return }
        pendingFormatChange = nil
        closeStream()
        worker.continueAfterFormatChange()
        // At the notice's format: the worker reports its new format only once it has written in it.
        if reopen { ensureStream(format: change.format) }
    }

    /// Asks the stream to play out its tail for `purpose`; the `.drained` notice completes it. The owner does not
    /// wait: an output lost meanwhile corks and flushes, which cancels the drain, and the tail is decoded again.
    func startDrain(for purpose: OutputBoundary) {
        // A stream still opening has played nothing yet; the tick asks again once it runs.
        guard let stream, streamOpening == nil else { return }
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
    func drainCompleted(_ purpose: OutputBoundary) {
        switch purpose {
        case .formatChange:
            dispatch(.formatChangeReached)
        case .queueEnd:
            queueEndRingFrame = nil
            dispatch(.queuePlayedOut)
        }
    }

    func streamNoticed(_ notice: StreamNotice) {
        let now = eventMoment()
        switch notice {
        case .requestsStopped:
            // The stream's silence alarm: the stall watchdog measures now (`tick`), and the rules judge. One that
            // crossed a pause on its way here has nothing to measure.
            if rules.isPlaying { tick() }
        case .drained:
            guard let purpose = drainingFor else { return }
            drainingFor = nil
            drainCompleted(purpose)
        case .ready:
            streamConnected()
        case .corked:
            let flushWaited = sequence.corkAcknowledged()
            // Quiet now: status shows the position where the listener stopped, not the last tick's.
            if let position = currentHeardPosition() { listening.settle(at: position) }
            if flushWaited { flushNow() }
            corkAcknowledgedForFade()
            dispatch(.streamCorked)
        case .uncorked:
            disarmWatchdog()
            uncorkAcknowledgedForFade()
            dispatch(.streamUncorked)
        case .applied(.setVolume), .commandFailed(.setVolume):
            volumeAcknowledged()
        case .flushed, .applied, .started, .underflow:
            // Underflows are counted by the stream (status: serverUnderflows); logging each would flood the journal
            // on a loaded machine.
            break
        case .commandFailed(let command):
            log.record("output", ["command": command.rawValue, "error": "refused"])
            // Whether a refusal closes the stream or is borne is the rules' decision (`outputCommandFailed`,
            // `outputSettingFailed`); a refused flush or title is only logged (a flush's own failure notice follows).
            switch command {
            case .cork, .uncork: dispatch(.outputCommandFailed)
            case .setMute: dispatch(.outputSettingFailed(.unmute))
            case .setVolume: dispatch(.outputSettingFailed(.volume))
            case .flush, .updateMediaName: break
            }
        case .corkRequested:
            dispatch(.interruptionBegan(.serverCorkRequest, at: now))
        case .uncorkRequested:
            dispatch(.interruptionEnded(.serverCorkRequest, resumeAllowed: true, at: now))
        case .unknownEvent:
            log.record("notice", ["kind": "unknownStreamEvent", "action": "ignored"])
        case .leftSink(let sink):
            // Compared with what we knew of it: a port unplugged under our stream is an output loss, whoever moved it.
            dispatchAll(translator.sinkChanged(sink))
        case .moved(_, let oldSinkStillExists):
            // The stream plays on where the server moved it until the rules decide: off a sink that is gone the
            // output is lost (cork at once, unless SINK REMOVE already decided it); a deliberate move keeps playing.
            if oldSinkStillExists {
                dispatchAll(translator.ourStreamMovedOffExistingSink())
                disarmWatchdog()
            } else {
                dispatchAll(translator.ourStreamLeftRemovedSink(at: now))
            }
            followOurSink()
        case .failed, .killed:
            if let opening = streamOpening {
                streamOpenFailed(opening)
                return
            }
            log.record("output", ["stream": "failed"])
            closeStream()
            dispatchAll(translator.ourStreamIsGone(at: now))
            // What the dead stream held died with it: the rules flush (decoding continues from the frame heard), a
            // paused player's too.
            dispatch(.outputLost(.streamFailed))
        }
    }

    func connectionNoticed(_ notice: ConnectionNotice) {
        let now = eventMoment()
        switch notice {
        case .ready, .serverChange:
            // Port changes are reported by the translator as facts from whole sink snapshots (`sinkChanged`,
            // `sinkPortsChanged`) and judged by the rules (`PortJudge`).
            break
        case .serverInfoChanged(let info):
            link.serverName = info.displayName
        case .failed, .terminated:
            serverLost(at: now)
        case .sinkAdded(let sink):
            dispatchAll(translator.sinkAdded(sink))
        case .sinkChanged(let sink):
            dispatchAll(translator.sinkChanged(sink))
        case .sinkRemoved(let index):
            // When it was our sink, this is the earliest word of an unplug: the rules cork now.
            dispatchAll(translator.sinkRemoved(index, at: now))
        case .sinkInputChanged(let input):
            dispatchAll(translator.sinkInputChanged(input, at: now))
        case .sinkInputRemoved(let index):
            dispatchAll(translator.sinkInputRemoved(index, at: now))
        case .cardChanged(let card):
            dispatchAll(translator.cardChanged(card, at: now))
        case .cardRemoved(let index):
            dispatchAll(translator.cardRemoved(index, at: now))
        case .sourceChanged, .sourceRemoved, .sourceOutputChanged, .sourceOutputRemoved:
            captureNoticed(notice, at: now)
        }
    }

    /// The server went away: pause with the position kept, forget its streams, and reconnect in the background.
    func serverLost(at now: Moment) {
        log.record("server", ["state": "lost"])
        // The stream and its timing died with the server, but the stream read its timing once more as the connection
        // failed: the position is what was heard when the server went away, not at the last tick (up to 50 ms ago).
        if let position = currentHeardPosition() { listening.settle(at: position) }
        closeStream()
        link.lost()
        // A stream asked for on the dead connection is asked for again by the rules' next play (rule 8).
        streamAwaitsFormat = nil
        // What the dead stream held died with it: the rules flush (decoding continues from the frame heard), a paused
        // player's too; and they say when to connect again (row 42).
        dispatch(.serverDisconnected(at: now))
        // Interruptions reported by the dead server can never end by themselves (the rules end its cork request at
        // `serverDisconnected`).
        dispatchAll(translator.ourStreamIsGone(at: now))
    }

    /// Makes one connection attempt now, as the rules ask (`connectServer`: at start-up, after a loss's wait, and when
    /// they want a stream while there is none; one at a time). libpulse's connect waits until the context is ready
    /// or has failed (up to the connection's timeout), subscribing waits for the server's reply, and raising the
    /// mainloop thread's priority may wait for rtkit: the attempt runs on a thread of its own, so the owner does not
    /// wait, and its outcome comes back through the inbox (`.connected`, `.connectFailed`).
    func attemptConnection() {
        let generation = link.connectionGeneration
        let inbox = self.inbox
        SystemThread.start(named: "earshot-connect") {
            if let server = Player.makeConnection(generation: generation, inbox: inbox) {
                inbox.yield(.connected(server, generation: generation))
            } else {
                inbox.yield(.connectFailed(generation: generation))
            }
        }
    }
}
