// The executor: the one serial owner of the player's state.
//
// Every input (libpulse notices from its thread, decoder notices from the decode thread, control requests
// from client threads, the position tick) is put into one ordered inbox and handled here, one at a time:
// events go through `PlayerState.apply`, the resulting commands are performed on the output, and what
// really happened (cork acknowledged, stream opened, command failed) is fed back as events. Handling is
// synchronous inside the actor (no suspension points), so no two inputs ever interleave.
import AudioPipeline
import EarshotCore
import Foundation
import PulseOutput
import Synchronization

/// The player: state, decoder, output and the rules that join them.
actor Player {
    /// Everything that can happen to the player, in one ordered stream.
    enum Input: Sendable {
        case decode(DecodeNotice)
        case stream(StreamNotice, generation: Int)
        case connection(ConnectionNotice, generation: Int)
        case reconnected(ConnectedServer, generation: Int)
        case tick(arming: Int)
        case request(ControlRequest, ReplySlot<String>)
        case mpris(MPRISCommand, ReplySlot<MPRISReply>)
        case shutdown(signal: Int32)
    }

    /// What is known of a track once the decoder opened it.
    private struct TrackInfo {
        var format: AudioFormat
        var lengthFrames: Int?
        var metadata: TrackMetadata
    }

    private let configuration: PlayerConfiguration
    private let mode: PlayerMode
    private let store: StateStore?
    private let mpris: MPRISServer?
    private let positionCell: PositionCell
    private let log: EventLog
    private let inbox: AsyncStream<Input>.Continuation
    private let ring: FrameRing
    private let worker: DecodeWorker

    /// The rulebook and the order of its decisions.
    private let decisions: DecisionLoop
    private var rules: PlayerState { decisions.rules }
    private var translator: ServerEventTranslator
    private var paths: [TrackPath] = []
    private var tracks: [Int: TrackInfo] = [:]
    private var workerLoaded = false

    private var connection: PulseConnection?
    /// The scheduling of the connection's mainloop thread (the one that feeds the server), and its thread id.
    private var realtime: (outcome: RealtimeOutcome, threadID: Int32?)?
    private var connectionGeneration = 0
    private var reconnecting = false
    private var serverName: String?
    private var stream: PlaybackStream?
    private var streamGeneration = 0
    private var underrunsOfClosedStreams = 0
    private var serverUnderflowsOfClosedStreams = 0

    /// The last position the listener heard.
    private var heard: TrackPosition?
    /// After a reposition, ring frames before `ringFrame` belong to audio that was dropped: until the
    /// listener hears past it, the position is the reposition's target.
    private var repositionFloor: (ringFrame: Int, position: TrackPosition)?
    /// A format change waits until the listener has heard everything before `ringFrame`.
    private var pendingFormatChange: (format: AudioFormat, ringFrame: Int)?
    /// Where the queue's audio ends in the ring, once the decoder has finished it.
    private var queueEndRingFrame: Int?
    /// What the stream's drain in progress is for; its `.drained` notice completes it.
    private var drainingFor: DrainPurpose?
    /// The track whose title the stream's media name shows.
    private var announcedTrack: Int?
    private var anyTrackStarted = false
    private var exitCode: Int32?
    private var progressShown = false
    /// Bumped whenever the queue is replaced, so MPRIS track ids of a new queue differ from the old ones.
    private var queueGeneration = 0
    /// Counts repositions, so a queue replacement can tell whether the rules already moved the decoder.
    private var repositionCount = 0
    /// The heard frame when the stream last (re)started running; the stall watchdog is armed only once the
    /// listener has heard past it, i.e. once the sink really consumes audio. A sink that is still starting (an
    /// idle null sink, a waking Bluetooth link) asks for nothing for a while without being stalled.
    private var watchdogBase: Int?
    private var watchdogArmed = false
    /// The player's one timer, armed only while playing (see `TickTimer`).
    private let tickTimer: TickTimer
    /// When the state was last saved (or found unchanged).
    private var lastSave = ContinuousClock.now
    /// Where in the ring each decoded track ends: the tick is due when the listener reaches the current one's end.
    private var trackEndRingFrames: [Int: Int] = [:]
    /// The track the listener was last reported (`heardTrack`) to hear.
    private var reportedHeardTrack: Int?
    /// The ring frame the listener had heard at the last tick.
    private var lastHeardRingFrame: Int?
    /// What MPRIS was last told, so that it is told only changes.
    private var publishedSnapshot: MPRISSnapshot?
    /// The playback shown last on the progress line, so that a change is shown at once.
    private var shownPlayback: Playback?
    /// What was last saved, to save only changes.
    private var lastSaved: PersistedState?

    init(
        configuration: PlayerConfiguration, mode: PlayerMode, log: EventLog, store: StateStore?,
        mpris: MPRISServer?, positionCell: PositionCell, inbox: AsyncStream<Input>.Continuation
    ) {
        self.configuration = configuration
        self.mode = mode
        self.store = store
        self.mpris = mpris
        self.positionCell = positionCell
        self.log = log
        self.inbox = inbox
        // About 2.7 s at 48 kHz: the decoder keeps this much ahead of the listener.
        ring = FrameRing(minimumCapacity: 131_072)
        worker = DecodeWorker(ring: ring) { notice in inbox.yield(.decode(notice)) }
        tickTimer = TickTimer { arming in inbox.yield(.tick(arming: arming)) }
        decisions = DecisionLoop(
            rules: PlayerState(policy: configuration.policy, stream: StreamCondition(isOpen: false, isCorked: true)))
        translator = ServerEventTranslator(
            triggerRoles: configuration.triggerRoles, scope: configuration.interruptionScope)
    }

    // MARK: Running

    /// Connects, then either plays `files` (foreground) or restores the saved queue (service), and handles
    /// inputs until the work is done or a signal arrives. Returns the process exit code.
    func run(inputs: AsyncStream<Input>) async -> Int32 {
        attachDecisions()
        switch mode {
        case .foreground(let files):
            guard connect() else {
                FileHandle.standardError.write(Data("earshot: cannot connect to the sound server\n".utf8))
                return 1
            }
            replaceQueue(with: files, play: true)
        case .service:
            if !connect() {
                // The service waits for the server to appear.
                log.record("server", ["state": "unavailable", "action": "waiting"])
                startReconnecting()
            }
            restoreSavedState()
        }
        publish()
        for await input in inputs {
            handle(input)
            armTick()
            if configuration.showsProgress && rules.playback != shownPlayback { showProgress() }
            if let exitCode {
                finishProgressLine()
                let underruns = underrunsOfClosedStreams + (stream?.underrunCount ?? 0)
                let underflows = serverUnderflowsOfClosedStreams + (stream?.serverUnderflowCount ?? 0)
                log.record("service", ["state": "finished", "underruns": "\(underruns)",
                                       "serverUnderflows": "\(underflows)"])
                return exitCode
            }
        }
        return exitCode ?? 0
    }

    private func handle(_ input: Input) {
        switch input {
        case .decode(let notice): decoderNoticed(notice)
        case .stream(let notice, let generation):
            guard generation == streamGeneration, stream != nil else { return }
            streamNoticed(notice)
        case .connection(let notice, let generation):
            guard generation == connectionGeneration, connection != nil else { return }
            connectionNoticed(notice)
        case .reconnected(let server, let generation):
            guard generation == connectionGeneration else { return }
            reconnecting = false
            connection = server.connection
            noteRealtime(of: server)
            serverName = (try? server.connection.serverInfo())?.displayName
            log.record("server", ["state": "connected"])
            dispatch(.outputAppeared)
        case .tick(let arming):
            // A stale tick (its timer was replaced or disarmed as it went off) has no work.
            guard tickTimer.wentOff(arming: arming) else { return }
            // Ticks save on their own schedule.
            tick()
            publish()
            return
        case .request(let request, let slot):
            let reply = answer(request)
            saveState()
            publish()
            slot.fulfil(reply)
            return
        case .mpris(let command, let slot):
            // MPRIS clients read PlaybackStatus right after the reply: publish it first.
            let reply = answer(command)
            saveState()
            publish()
            slot.fulfil(reply)
            return
        case .shutdown(let signal): shutdown(signal: signal)
        }
        saveState()
        publish()
    }

    // MARK: The rules

    /// Applies `event`, logs it, and performs the resulting commands (see `DecisionLoop`).
    private func dispatch(_ event: Event) {
        decisions.dispatch(event)
    }

    /// Connects the decision loop to this player: it logs each decision and performs its commands here.
    private func attachDecisions() {
        decisions.perform = { [unowned self] command in perform(command) }
        decisions.decided = { [unowned self] event, commands in decided(event, commands) }
    }

    private func decided(_ event: Event, _ commands: [Command]) {
        let named = commands.isEmpty ? "none" : commands.map(\.description).joined(separator: ",")
        log.record("event", ["kind": event.description, "playback": rules.playback.description, "commands": named])
        if case .stopped = rules.playback, exitCode == nil, case .foreground = mode {
            switch event {
            case .queuePlayedOut, .trackFailed(_, _, nil):
                // The queue ran out: the foreground player's work is done.
                exitCode = anyTrackStarted ? 0 : 1
            default: break
            }
        }
    }

    private func perform(_ command: Command) {
        switch command {
        case .cork:
            guard let stream else { return }
            do {
                try stream.cork()
                // Quiet now: status shows the position where the listener stopped, not the last tick's.
                if let position = currentHeardPosition() { heard = position }
                dispatch(.streamCorked)
            } catch {
                log.record("output", ["command": "cork", "error": "\(error.code.rawValue)"])
                dispatch(.outputCommandFailed)
            }
        case .uncork:
            // The rules uncork only a stream they know is open; without one the command cannot be carried out.
            guard let stream else {
                log.record("output", ["command": "uncork", "error": "noStream"])
                dispatch(.outputCommandFailed)
                return
            }
            do {
                try stream.uncork()
                disarmWatchdog()
                dispatch(.streamUncorked)
            } catch {
                log.record("output", ["command": "uncork", "error": "\(error.code.rawValue)"])
                dispatch(.outputCommandFailed)
            }
        case .flush:
            reposition(to: currentHeardPosition() ?? TrackPosition(trackIndex: rules.queue.index, frame: 0,
                                                                     sampleRate: 44_100))
        case .clearServerMute:
            try? stream?.setMuted(false)
        case .openStream:
            if connection == nil && !connect() {
                // Still no server: the output is lost for that reason, and the reconnection carries on.
                startReconnecting()
                dispatch(.outputLost(.serverLost))
                return
            }
            // The rules uncork it when it opens (`streamOpened`), if the player is playing.
            ensureStream()
        case .playTrack(let index):
            reposition(to: TrackPosition(trackIndex: index, frame: 0, sampleRate: tracks[index]?.format.sampleRate
                                             ?? 44_100))
            mpris?.emitSeeked(positionMicroseconds: 0)
        case .seek(let milliseconds):
            let index = rules.queue.index
            let rate = tracks[index]?.format.sampleRate ?? heard?.sampleRate ?? 44_100
            var frame = milliseconds * rate / 1000
            if let length = tracks[index]?.lengthFrames { frame = min(frame, max(length - 1, 0)) }
            reposition(to: TrackPosition(trackIndex: index, frame: frame, sampleRate: rate))
            mpris?.emitSeeked(positionMicroseconds: Int64(frame) * 1_000_000 / Int64(max(rate, 1)))
        case .setVolume(let percent):
            try? stream?.setVolume(percent: percent)
        }
    }

    // MARK: Output

    /// Connects to the sound server (blocking, with libpulse's timeout) and subscribes to its changes.
    private func connect() -> Bool {
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
    private func noteRealtime(of server: ConnectedServer) {
        realtime = (server.realtime, server.threadID)
        log.record("realtime", ["thread": "mainloop", "scheduling": server.realtime.description])
    }

    /// Opens the stream when there is a connection and the audio's format is known, and reports it (`streamOpened`:
    /// the rules uncork it when the player is playing).
    private func ensureStream() {
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
    private func waitForDecodedAudio() {
        let rate = worker.currentFormat?.sampleRate ?? 44_100
        let wanted = rate * configuration.targetLatencyMilliseconds * 2 / 1000
        for _ in 0..<100 where ring.readableFrames < wanted && queueEndRingFrame == nil { usleep(2000) }
    }

    /// Waits for the listener to hear new audio before the stall watchdog may act again.
    private func disarmWatchdog() {
        watchdogBase = nil
        watchdogArmed = false
    }

    /// Tells the translator which sink our stream is on now.
    private func followOurSink() {
        guard let stream, let connection, let sinkIndex = stream.sinkIndex,
              let sink = (try? connection.sinks())?.first(where: { $0.index == sinkIndex }) else { return }
        dispatchAll(translator.ourStreamIsOn(sink, sinkInputIndex: stream.sinkInputIndex, at: monotonicMoment()))
    }

    private func dispatchAll(_ events: [Event]) {
        for event in events { dispatch(event) }
    }

    /// Closes our stream (keeping its underrun count).
    private func closeStream() {
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
    private func currentHeardPosition() -> TrackPosition? {
        guard let stream, let frame = stream.heardRingFrame() else { return heard }
        if let floor = repositionFloor, frame < floor.ringFrame { return floor.position }
        return worker.locate(ringFrame: frame) ?? heard
    }

    /// After our stream died: what it had taken from the ring but not yet played died with it. The rules flush
    /// when the player was playing; when it was already paused (a pause corks without flushing) nothing else
    /// moves the decoder back, and a later resume would skip what the dead stream held (its whole buffer, 50 ms
    /// by default). So unless a reposition happened since `repositionsBefore`, decoding restarts at the position
    /// heard.
    private func restartDecodingAtHeardPosition(unlessRepositionedSince repositionsBefore: Int) {
        guard repositionCount == repositionsBefore, case .paused = rules.playback, let heard else { return }
        reposition(to: heard)
    }

    /// Drops what is queued but unheard and continues decoding at `position`.
    private func reposition(to position: TrackPosition) {
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

    private func decoderNoticed(_ notice: DecodeNotice) {
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
    private func applyFormatChange() {
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
    private func startDrain(for purpose: DrainPurpose) {
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
    private func drainCompleted(_ purpose: DrainPurpose) {
        switch purpose {
        case .formatChange:
            applyFormatChange()
        case .queueEnd:
            queueEndRingFrame = nil
            dispatch(.queuePlayedOut)
        }
    }

    private func streamNoticed(_ notice: StreamNotice) {
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

    private func connectionNoticed(_ notice: ConnectionNotice) {
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
    private func serverLost(at now: Moment) {
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

    private func startReconnecting() {
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

    // MARK: Time

    private func tick() {
        if let stream, let frame = stream.heardRingFrame() {
            if let base = watchdogBase {
                if frame > base { watchdogArmed = true }
            } else {
                watchdogBase = frame
            }
        }
        if let stream, watchdogArmed, stream.isStalled(periods: 8, minimum: .seconds(1)) {
            // Playing, but the server has asked for nothing for several periods (PipeWire can drop a device
            // with no callback at all): nothing is heard, so the output is lost. A whole second: on a machine
            // loaded twenty deep the server was seen to go quiet for over half a second and then carry on, and
            // a player that calls that "output lost" stops the music for nothing.
            log.record("output", ["watchdog": "stalled"])
            dispatch(.outputStalled)
            return
        }
        if let stream, let frame = stream.heardRingFrame() {
            lastHeardRingFrame = frame
            let position: TrackPosition?
            if let floor = repositionFloor, frame < floor.ringFrame {
                position = floor.position
            } else {
                repositionFloor = nil
                position = worker.locate(ringFrame: frame)
            }
            if let position { heard = position }
            if let index = position?.trackIndex, index != reportedHeardTrack {
                // Reported when the heard track changes; whether that moves the queue on is the rules' call.
                reportedHeardTrack = index
                dispatch(.heardTrack(index: index))
            }
            if drainingFor == nil, let change = pendingFormatChange, ring.totalFramesRead >= change.ringFrame,
               rules.isPlaying {
                // Everything in the old format was handed over: play it out, then switch.
                startDrain(for: .formatChange)
            }
            if drainingFor == nil, let end = queueEndRingFrame, ring.totalFramesRead >= end, rules.isPlaying {
                // Everything was handed to the server: let it play the tail out (below the prebuffer a stream
                // would otherwise wait for more), then the queue has ended.
                startDrain(for: .queueEnd)
            }
        }
        if let index = heard?.trackIndex, index != announcedTrack, let stream {
            announcedTrack = index
            try? stream.updateMediaName(title(of: index))
        }
        if rules.isPlaying && ContinuousClock.now - lastSave >= Self.saveInterval { saveState() }
        if configuration.showsProgress { showProgress() }
    }

    /// While playing, the position is saved this often: a kill loses at most this much.
    private static let saveInterval = Duration.seconds(2)
    /// The longest a playing player goes without a tick: the stall watchdog's resolution (it acts on a second of
    /// silence), and the progress line's rate (4 Hz).
    private static let tickIntervalMilliseconds = 250

    /// Arms the timer for the next moment the tick has work, or disarms it when the player is not playing.
    private func armTick() {
        guard rules.isPlaying, stream != nil else {
            tickTimer.disarm()
            return
        }
        tickTimer.arm(after: nextTickDelay())
    }

    /// How long until the tick has work: the listener reaching the current track's end, the server having taken
    /// everything before a format change or the queue's end (both advance at the sample rate while playing), and
    /// at most `tickIntervalMilliseconds`.
    private func nextTickDelay() -> Duration {
        var frames = Int.max
        if drainingFor == nil {
            if let change = pendingFormatChange { frames = min(frames, change.ringFrame - ring.totalFramesRead) }
            if let end = queueEndRingFrame { frames = min(frames, end - ring.totalFramesRead) }
        }
        if let end = trackEndRingFrames[rules.queue.index], let heard = lastHeardRingFrame {
            frames = min(frames, end - heard)
        }
        guard frames != Int.max else { return .milliseconds(Self.tickIntervalMilliseconds) }
        let rate = max(worker.currentFormat?.sampleRate ?? 44_100, 1)
        // A couple of milliseconds late rather than early, so the tick finds the boundary passed.
        let milliseconds = max(frames, 0) * 1000 / rate + 2
        return .milliseconds(min(max(milliseconds, 5), Self.tickIntervalMilliseconds))
    }

    private func title(of index: Int?) -> String {
        guard let index, let metadata = tracks[index]?.metadata else { return "Earshot" }
        return metadata.title ?? "Earshot"
    }

    private func showProgress() {
        guard rules.playback != .idle else { return }
        let state = rules.isPlaying ? "playing" : rules.playback.description
        let line = StatusText.progressLine(track: rules.queue.index, of: paths.count, at: positionMilliseconds,
                                           length: durationMilliseconds, state: state)
        FileHandle.standardOutput.write(Data(line.utf8))
        progressShown = true
        shownPlayback = rules.playback
    }

    private func finishProgressLine() {
        if progressShown { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }

    // MARK: Control

    private var positionMilliseconds: Int {
        guard let heard, heard.trackIndex == rules.queue.index, heard.sampleRate > 0 else { return 0 }
        return heard.frame * 1000 / heard.sampleRate
    }

    private var durationMilliseconds: Int? {
        guard let info = tracks[rules.queue.index], let length = info.lengthFrames else { return nil }
        return length * 1000 / info.format.sampleRate
    }

    private func answer(_ request: ControlRequest) -> String {
        switch request {
        case .load(let newPaths, let play): replaceQueue(with: newPaths, play: play)
        case .add(let newPaths): appendToQueue(newPaths)
        case .clear: replaceQueue(with: [], play: false)
        case .queue:
            // The user's own terminal asks: the paths are theirs to see (never logged).
            return ControlReply.success(["queue": paths.map(\.jsonValue), "current": rules.queue.index])
        case .play: dispatch(.userPlay)
        case .pause: dispatch(.userPause)
        case .toggle: dispatch(.userToggle)
        case .stop: dispatch(.userStop)
        case .next: dispatch(.userNext)
        case .previous: dispatch(.userPrevious)
        case .seek(let seconds): dispatch(.userSeek(milliseconds: Int(seconds * 1000)))
        case .volume(let percent): dispatch(.userVolume(percent: percent))
        case .status, .events: break
        }
        return ControlReply.success(["status": status()])
    }

    /// The status object of replies: kinds, states and numbers, never user content.
    private func status() -> [String: Any] {
        var pauseReason: Any = NSNull()
        var lossReason: Any = NSNull()
        if case .paused(let reason) = rules.playback {
            pauseReason = reason.description
            if case .outputLost(let cause) = reason { lossReason = cause.description }
        }
        var lastError: Any = NSNull()
        if let failure = rules.lastFailure {
            lastError = ["trackIndex": failure.index, "kind": failure.failure.description]
        }
        return [
            "playback": rules.playback == .idle ? "stopped" : rules.playback.name,
            "pauseReason": pauseReason,
            "outputLostReason": lossReason,
            "waitingForInterruptionEnd": rules.waitingForInterruptionEnd,
            "activeInterruptions": rules.interruptions.map(\.description).sorted(),
            "resumeIntent": rules.resumeIntent.description,
            "positionMs": positionMilliseconds,
            "durationMs": durationMilliseconds.map { $0 as Any } ?? NSNull(),
            "trackIndex": rules.queue.index,
            "trackCount": rules.queue.trackCount,
            "sink": stream?.sinkName.map { $0 as Any } ?? NSNull(),
            "corked": stream?.isCorked ?? true,
            "streamOpen": stream != nil,
            "underruns": underrunsOfClosedStreams + (stream?.underrunCount ?? 0),
            "serverUnderflows": serverUnderflowsOfClosedStreams + (stream?.serverUnderflowCount ?? 0),
            "server": serverName.map { $0 as Any } ?? NSNull(),
            "realtime": realtime?.outcome.description ?? RealtimeOutcome.none(reason: "not connected").description,
            "realtimeThread": realtime?.threadID.map { Int($0) as Any } ?? NSNull(),
            "volume": rules.volumePercent,
            "lastError": lastError,
        ]
    }

    private func shutdown(signal: Int32) {
        log.record("service", ["state": "stopping", "signal": signal == SIGINT ? "INT" : "TERM"])
        saveState()
        mpris?.stop()
        try? stream?.cork()
        closeStream()
        worker.stop()
        connection?.disconnect()
        connection = nil
        if case .foreground = mode {
            exitCode = signal == SIGINT ? 130 : 0
        } else {
            exitCode = 0
        }
    }

    // MARK: Queue and persistence

    /// Replaces the queue with `newPaths`, playing them when `play`.
    private func replaceQueue(with newPaths: [TrackPath], play: Bool) {
        paths = newPaths
        tracks = [:]
        queueGeneration += 1
        announcedTrack = nil
        let repositionsBefore = repositionCount
        dispatch(.queueReplaced(trackCount: newPaths.count, startIndex: 0))
        if play { dispatch(.userPlay) }
        if repositionCount == repositionsBefore && workerLoaded {
            // The rules did not start the new queue: still move the decoder off the old one, so nothing decoded
            // from it is queued or reported as the new queue's.
            reposition(to: TrackPosition(trackIndex: 0, frame: 0, sampleRate: 44_100))
        }
        saveState()
    }

    /// Appends `newPaths` to the queue; decoding continues into them without a gap.
    private func appendToQueue(_ newPaths: [TrackPath]) {
        paths += newPaths
        if workerLoaded { worker.append(paths: newPaths) }
        if queueEndRingFrame != nil {
            queueEndRingFrame = nil
            // Withdrawing the end of the data cancels a drain: the queue's end is not reached after all, while a
            // format change still has to play its tail out.
            stream?.setEndOfData(false)
            let interrupted = drainingFor
            drainingFor = nil
            if interrupted == .formatChange { startDrain(for: .formatChange) }
        }
        dispatch(.queueExtended(trackCount: paths.count))
        saveState()
    }

    /// Restores the saved queue, paused at the saved position; a corrupt state file is reported and set aside.
    private func restoreSavedState() {
        guard let store else { return }
        switch store.load() {
        case .empty:
            log.record("state", ["restored": "nothing"])
        case .corrupt(let reason, let keptAs):
            let name = (keptAs as NSString).lastPathComponent
            log.record("state", ["restored": "corrupt", "keptAs": name])
            FileHandle.standardError.write(Data(
                "earshot: the saved state could not be read (\(reason)); kept aside as \(name), starting empty\n".utf8))
        case .restored(let saved):
            paths = saved.queue
            dispatch(.userVolume(percent: saved.volumePercent))
            dispatch(.queueRestored(trackCount: saved.queue.count, index: saved.trackIndex))
            guard rules.playback == .paused(.restored) else { return }
            // The saved position is in milliseconds; the decoder needs frames at the track's output rate.
            let rate = (try? MP3Decoder(path: saved.queue[saved.trackIndex]))?.format.sampleRate ?? 44_100
            reposition(to: TrackPosition(trackIndex: saved.trackIndex,
                                         frame: saved.positionMilliseconds * rate / 1000, sampleRate: rate))
            log.record("state", ["restored": "queue", "tracks": "\(saved.queue.count)"])
            lastSaved = saved
        }
    }

    /// Saves queue, track, position and volume when they changed (atomically, by the store).
    private func saveState() {
        lastSave = ContinuousClock.now
        guard let store else { return }
        let state = PersistedState(queue: paths, trackIndex: rules.queue.index,
                                   positionMilliseconds: positionMilliseconds, volumePercent: rules.volumePercent)
        guard state != lastSaved else { return }
        do {
            try store.save(state)
            lastSaved = state
        } catch {
            log.record("state", ["saved": "failed"])
        }
    }

    // MARK: MPRIS

    /// Publishes the current state to MPRIS when it changed (the adapter then sends only the changed properties),
    /// and the position for `Position`, which MPRIS clients read when they want it.
    private func publish() {
        guard let mpris else { return }
        let index = rules.queue.index
        let path = rules.playback != .idle && paths.indices.contains(index) ? paths[index] : nil
        let length = path != nil ? durationMilliseconds.map { Int64($0) * 1000 } : nil
        positionCell.store(microseconds: Int64(positionMilliseconds) * 1000, advancing: rules.isPlaying, limit: length)
        let snapshot = MPRISSnapshot(
            rules: rules, trackNumber: queueGeneration * 100_000 + index, path: path,
            metadata: tracks[index]?.metadata, lengthMicroseconds: length, queueLength: paths.count)
        // Told only changes: an unchanged snapshot would still wake the bus thread.
        guard snapshot != publishedSnapshot else { return }
        publishedSnapshot = snapshot
        mpris.update(snapshot)
    }

    /// Carries out an MPRIS request through the same rules as every other command.
    private func answer(_ command: MPRISCommand) -> MPRISReply {
        switch command {
        case .play: dispatch(.userPlay)
        case .pause: dispatch(.externalPause)
        case .playPause: dispatch(.userToggle)
        case .stop: dispatch(.userStop)
        case .next: dispatch(.userNext)
        case .previous: dispatch(.userPrevious)
        case .seek(let offset):
            let target = positionMilliseconds + Int(offset / 1000)
            if let duration = durationMilliseconds, target >= duration {
                // MPRIS: seeking past the end goes to the next track.
                dispatch(.userNext)
            } else {
                dispatch(.userSeek(milliseconds: max(target, 0)))
            }
        case .setPosition(let trackId, let position):
            guard trackId == MPRISSnapshot.trackId(queueGeneration * 100_000 + rules.queue.index) else {
                return .done
            }
            dispatch(.userSeek(milliseconds: Int(position / 1000)))
        case .openUri(let path):
            replaceQueue(with: [path], play: true)
        case .setVolume(let volume):
            dispatch(.userVolume(percent: Int((volume * 100).rounded())))
        case .quit:
            inbox.yield(.shutdown(signal: SIGTERM))
        }
        return .done
    }
}
