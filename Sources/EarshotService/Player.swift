// The executor: the one serial owner of the player's state.
//
// Every input (libpulse notices from its thread, decoder notices from the decode thread, control requests
// from client threads, the position tick) is put into one ordered inbox and handled here, one at a time:
// events go through `PlayerState.apply`, the resulting commands are performed on the output, and what
// really happened (cork acknowledged, stream opened, command failed) is fed back as events. Handling is
// synchronous inside the actor (no suspension points), so no two inputs ever interleave.
//
// The actor is written in three files: this one (its state, the inbox loop, the rules and the commands), Player+Output
// (connecting, opening and closing the stream through its `OutputLink`, and the notices from the server and the
// decoder) and Player+Control (time, control requests, the queue, persistence and MPRIS); its inputs are listed in
// PlayerParts. Its members are therefore internal rather than private; nothing
// outside the actor can reach them anyway, since the actor isolates them.
import AudioPipeline
import EarshotCore
import EarshotMPRIS
import Glibc
import SystemSupport
import PulseOutput
import RealtimeScheduling
import TrackPaths

/// The player: state, decoder, output and the rules that join them.
actor Player {
    /// The actor's own thread (see `OwnerThread`): the owner reacts to a notice as soon as it is enqueued.
    nonisolated let ownerThread = OwnerThread(name: "earshot-owner")
    nonisolated var unownedExecutor: UnownedSerialExecutor { ownerThread.asUnownedSerialExecutor() }

    let configuration: PlayerConfiguration
    let mode: PlayerMode
    /// Saves the state off the owner's thread (nil: nothing is saved, `earshot play`).
    let stateWriter: (any StateSaving)?
    let mpris: (any MPRISPublishing)?
    /// The logind adapter, which performs `releaseSleepDelay` (nil: `earshot play`, which follows no session).
    let logind: (any SleepDelayReleasing)?
    /// The idle-suspend inhibitor's adapter, which performs `holdIdleInhibitor` and `releaseIdleInhibitor` (nil:
    /// `earshot play`).
    let idleInhibitor: (any IdleSuspendInhibiting)?
    let positionCell: PositionCell
    let log: any EventRecording
    let inbox: AsyncStream<Input>.Continuation
    let ring: FrameRing
    let worker: DecodeWorker
    /// Stores the cover pictures of started tracks, on a low-priority thread of its own (EarshotStorage's
    /// `CoverArtWorker`).
    let covers: any CoverArtStoring

    /// The rulebook and the order of its decisions.
    let decisions: DecisionLoop
    var rules: PlayerState { decisions.rules }
    var translator: ServerEventTranslator
    /// The queue's paths, stored as bytes once (shared with the decode thread and the saved state).
    var paths = TrackList()
    var tracks: [Int: TrackInfo] = [:]
    var workerLoaded = false
    /// The ring generation of the latest reposition (`ring.beginGeneration()`), and the latest one the decoder has
    /// answered (`.restarted`): while they differ, the decoder's notices describe audio that is never heard.
    var decoderGeneration = 0
    var decoderAnsweredGeneration = 0

    /// The connection and the stream, and how they are replaced (see `OutputLink`).
    var link: OutputLink
    var connection: PulseConnection? { link.connection }
    var stream: PlaybackStream? { link.stream }
    var streamOpening: StreamOpening? { link.streamOpening }
    /// What waits for the server's or the decoder's answer: the flush, the uncork, the refill, the fades
    /// (`OutputSequence`).
    var sequence = OutputSequence()

    /// Where the listener is, from the ring frames the stream's timing names (see `HeardPosition`).
    var listening = HeardPosition()
    /// The last position the listener heard.
    var heard: TrackPosition? { listening.current }
    /// A format change waits until the listener has heard everything before `ringFrame`.
    var pendingFormatChange: (format: AudioFormat, ringFrame: Int)?
    /// Where the queue's audio ends in the ring, once the decoder has finished it.
    var queueEndRingFrame: Int?
    /// What the stream's drain in progress is for; its `.drained` notice completes it.
    var drainingFor: OutputBoundary?
    /// The rules asked for a stream before the decoder knew the audio's format: it is opened, on that sink, when the
    /// decoder starts a track (`decoderNoticed`).
    var streamAwaitsFormat: SinkChoice?
    /// The track whose title the stream's media name shows.
    var announcedTrack: Int?
    /// The playback the last decision left (`decided`): what a quiet retry must leave unchanged to go unlogged.
    var playbackDecided: Playback?
    var exitCode: Int32?
    var progressShown = false
    /// Bumped whenever the queue is replaced, so MPRIS track ids of a new queue differ from the old ones.
    var queueGeneration = 0
    /// The queue entries' ids and change versions, as MPD's clients follow them (QueueIdentities).
    var identities = QueueIdentities()
    /// Counts repositions: the state writer saves the position again after one (`SaveSchedule`).
    var repositionCount = 0
    /// The heard frame when the stream last (re)started running: once the listener has heard past it, the sink
    /// really consumes audio (`heardSinceStart`), which the stall watchdog reports with its measurement.
    var watchdogBase: Int?
    /// The listener has heard past `watchdogBase`. A sink that is still starting (an idle null sink, a waking
    /// Bluetooth link) asks for nothing for a while: the rules call that no stall (`outputSilent`).
    var heardSinceStart = false
    /// The last silence reported to the rules (`tick`), so that the same one is not reported at every tick.
    var reportedSilence: SilenceReport?
    /// The silence alarm last given to a stream (`armTick`).
    var silenceAlarmGiven: SilenceAlarmSetting?
    /// The tick's timer, armed only while playing (see `TickTimer`).
    let tickTimer: TickTimer
    /// What was handed to the state writer, and when (see `SaveSchedule`).
    var saving = SaveSchedule()
    /// The repeat mode and shuffled order last handed to the state writer (Player+PlayOrder).
    var savedModes = SavedPlayModes.off
    /// The rules' order last handed to the decoder (Player+PlayOrder).
    var followedModes: PlayModes?
    /// The ReplayGain settings: the configuration's, until a client's `replaygain` changes the mode.
    var replayGain: ReplayGainSettings
    /// The rules' timer (`armTimer`): armed only while a capture waits to have run long enough to count as a call, a
    /// Bluetooth profile switch waits for our stream to reach the headset again (Player+Calls), or a station's or the
    /// sound server's next reconnection waits its backoff (Player+Network, Player+Output).
    let rulesTimer: TickTimer
    /// The fade and duck gains under the user's volume (Player+Edges), and the timer of their steps, armed only while
    /// a ramp is under way.
    var edges: VolumeEdges
    let edgeTimer: TickTimer
    /// What MPRIS was last told, so that it is told only changes.
    var publishedSnapshot: MPRISSnapshot?
    /// The playback shown last on the progress line, so that a change is shown at once.
    var shownPlayback: Playback?
    /// The longest one inbox item took to handle, and of which kind, overall and per kind (status:
    /// `slowestHandlingMicros`, `slowestHandlingKind`, `slowestHandlingByKind`): the owner never waits, so a large
    /// value is a regression to look for.
    var handling = HandlingRecord()
    /// The music library's latest state, shown by `status` (nil where no library runs).
    var library: LibraryStatus?
    /// The rules' last refusal of a request (`refuse`), for the front-end that asked (Player+Streams).
    var refusal: Refusal?
    /// Why the player last rejoined a live stream's live edge, for status (`liveRejoined`).
    var lastLiveRejoin: LiveRejoin?
    /// A live stream's decoder ran dry with its connection down (row 40), and the ring frame its last audio ends at:
    /// reported to the rules once the output has read that far, so that what was decoded is heard first.
    var dryLiveStream: (index: Int, ringFrame: Int)?

    init(
        configuration: PlayerConfiguration, mode: PlayerMode, parts: OwnerParts,
        inbox: AsyncStream<Input>.Continuation
    ) {
        self.configuration = configuration
        self.mode = mode
        self.stateWriter = parts.stateSaver
        self.mpris = parts.mpris
        self.logind = parts.sleepDelay
        self.idleInhibitor = parts.idleInhibitor
        self.positionCell = parts.positionCell
        self.log = parts.log
        self.inbox = inbox
        // About 2.7 s at 48 kHz: the decoder keeps this much ahead of the listener.
        ring = FrameRing(minimumCapacity: 131_072)
        // The decode thread only passes its notices on: a started track's cover picture travels as its location (or
        // the bytes a tag held inline), and the owner hands it to the cover worker, which reads, hashes and writes it
        // at low priority and reports back through the inbox. Neither the decoder nor the owner waits for the disk.
        // A paused station is kept for `liveBufferMinutes`; the fetch thread reports its first overflow (rule 32).
        let liveBuffer = LiveBufferLink(seconds: configuration.liveBufferSeconds) { index in
            inbox.yield(.liveBufferOverflowed(index: index))
        } network: { index, notice in
            inbox.yield(.liveNetwork(index: index, notice))
        }
        worker = DecodeWorker(ring: ring, liveBuffer: liveBuffer) { notice in inbox.yield(.decode(notice)) }
        replayGain = configuration.replayGain
        worker.replayGain.set(replayGain, shuffled: false)
        worker.replayGain.setLibrary(parts.library)
        covers = parts.makeCoverStore { job, outcome in inbox.yield(.cover(job, outcome)) }
        tickTimer = TickTimer(on: ownerThread) { arming in inbox.yield(.tick(arming: arming)) }
        rulesTimer = TickTimer(on: ownerThread) { arming in inbox.yield(.rulesTimerDue(arming: arming)) }
        edges = VolumeEdges(
            fadeMilliseconds: configuration.fadeMilliseconds, duckGain: configuration.duckGain,
            duckRampMilliseconds: configuration.duckRampMilliseconds)
        edgeTimer = TickTimer(on: ownerThread) { arming in inbox.yield(.edgeDue(arming: arming)) }
        link = OutputLink()
        decisions = DecisionLoop(
            rules: PlayerState(policy: configuration.policy.startedAs(mode),
                               stream: StreamCondition(isOpen: false, isCorked: true)))
        translator = ServerEventTranslator(
            triggerRoles: configuration.triggerRoles, scope: configuration.interruptionScope,
            callDetection: Self.callDetection(of: configuration, ownProcessID: getpid()),
            duckRoles: configuration.duckRoles)
    }

    // MARK: Running

    /// Starts connecting (off the owner: the outcome is an input), then either plays `files` (foreground) or restores
    /// the saved queue (service), and handles inputs until the work is done or a signal arrives. Returns the process
    /// exit code.
    func run(inputs: AsyncStream<Input>) async -> Int32 {
        attachDecisions()
        log.record("realtime", ["thread": "owner", "nice": ownerThread.niceOutcome, "slice": ownerThread.sliceOutcome])
        // The decoder starts while the connection is made; the stream opens once both are there. Without a server the
        // foreground player ends (`connectionAttemptFailed`), and the service waits for one.
        startConnecting()
        switch mode {
        case .foreground(let files):
            replaceQueue(with: files, play: true)
        case .service:
            restoreSavedState()
        }
        publish()
        for await input in inputs {
            let kind = input.kind
            let started = ThreadUsage.now()
            handle(input)
            handling.note(kind, ThreadUsage.sample(since: started))
            armTick()
            if configuration.showsProgress && rules.playback != shownPlayback { showProgress() }
            if let exitCode {
                finishProgressLine()
                log.record("service", ["state": "finished", "underruns": "\(link.underruns)",
                                       "serverUnderflows": "\(link.serverUnderflows)"])
                return exitCode
            }
        }
        return exitCode ?? 0
    }

    func handle(_ input: Input) {
        switch input {
        case .decode(let notice): decoderNoticed(notice)
        case .cover(let job, let outcome): coverSettled(job, outcome)
        case .stream(let notice, let generation):
            guard link.isCurrent(streamGeneration: generation) else { return }
            streamNoticed(notice)
        case .connection(let notice, let generation):
            guard link.isCurrent(connectionGeneration: generation) else { return }
            connectionNoticed(notice)
        case .inventory(let inventory, let purpose, let generation):
            guard link.isCurrent(streamGeneration: generation) else { return }
            inventoryArrived(inventory, for: purpose)
        case .connected(let server, let generation):
            // A result for an older generation (the server was lost again meanwhile) is dropped with its connection.
            guard link.connected(server, generation: generation) else { return }
            connected(server)
        case .connectFailed(let generation):
            guard generation == link.connectionGeneration, connection == nil else { return }
            connectionAttemptFailed()
        case .rulesTimerDue(let arming):
            // A stale delivery (the timer was re-armed or disarmed as it went off) has no work.
            guard rulesTimer.wentOff(arming: arming) else { return }
            dispatch(.timerFired(at: eventMoment()))
        case .edgeDue(let arming):
            guard edgeTimer.wentOff(arming: arming) else { return }
            stepEdges()
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
        case .session(let event): dispatch(event)
        case .liveBufferOverflowed(let index): dispatch(.liveBufferOverflowed(index: index))
        case .liveNetwork(let index, let notice): liveNetworkNoticed(notice, index: index)
        case .library(let status):
            // Shown by the next status; nothing to save or publish.
            library = status
            return
        case .shutdown(let signal): shutdown(signal: signal)
        }
        saveState()
        publish()
    }

    // MARK: The rules

    /// Applies `event`, logs it, and performs the resulting commands (see `DecisionLoop`).
    func dispatch(_ event: Event) {
        decisions.dispatch(event)
    }

    /// Connects the decision loop to this player: it logs each decision and performs its commands here.
    func attachDecisions() {
        decisions.perform = { [unowned self] command in perform(command) }
        decisions.decided = { [unowned self] decision, reported in decided(decision, reported: reported) }
    }

    /// Logs a decision in the rules' terms: a call's signal as what it amounted to (an output loss, a call), and the
    /// signal itself after it.
    func decided(_ decision: Decision, reported: Event) {
        followPlayOrder()
        let before = playbackDecided
        playbackDecided = decision.playback
        guard !isQuietRetry(decision, before: before), !decision.isOutputFactOfNoConsequence(before: before) else {
            return
        }
        let commands = decision.commands
        let named = commands.isEmpty ? "none" : commands.map(\.description).joined(separator: ",")
        let kind = decision.event.description, playback = decision.playback.description
        if decision.event == reported {
            log.record("event", ["kind": kind, "playback": playback, "commands": named])
        } else {
            log.record("event", ["kind": kind, "playback": playback, "commands": named, "signal": reported.description])
        }
    }

    /// Whether a decision is only the sound server's next attempt while it is away (row 42: the wait's end, an
    /// attempt, its failure, the next wait), which the user neither hears nor sees: not logged, so that a server away
    /// for a night does not write two lines a second. The `server` lines say when it went and when it came back. One
    /// that changed the playback (the failure of an attempt a play was waiting for) is logged.
    private func isQuietRetry(_ decision: Decision, before: Playback?) -> Bool {
        guard !rules.server.isConnected, decision.playback == before else { return false }
        switch decision.event {
        case .timerFired, .serverConnectFailed: break
        default: return false
        }
        return decision.commands.allSatisfy { command in
            if case .armTimer = command { return true }
            return command == .connectServer
        }
    }

    func perform(_ command: Command) {
        // A flush waiting for its cork's acknowledgement goes first: the output carries commands out in order.
        if command != .flush && sequence.beforeCommand() { flushNow() }
        switch command {
        case .fadeOutAndCork:
            fadeOutAndCork()
        case .duck, .unduck:
            setDucked(command == .duck)
        case .cork:
            fadeGivesWayToCork()
            withdrawWaitingUncork()
            // A stream still opening was created corked, and the rules do not count it as open yet: nothing to send.
            guard let stream, streamOpening == nil else { return }
            do {
                // Sent, not waited for: its acknowledgement (`.corked`) brings `streamCorked` (`streamNoticed`).
                try stream.cork()
                sequence.corkSent()
            } catch {
                log.record("output", ["command": "cork", "error": "\(error.code.rawValue)"])
                dispatch(.outputCommandFailed)
            }
        case .uncork:
            // The rules uncork only a stream they know is open; without one the command cannot be carried out.
            guard stream != nil else {
                log.record("output", ["command": "uncork", "error": "noStream"])
                dispatch(.outputCommandFailed)
                return
            }
            prepareFadeIn()
            uncorkWhenDecoded()
        case .flush:
            flushWhenCorked()
        case .clearServerMute:
            // Only a stream the rules count as open has a mute of the server's to clear.
            guard let stream, streamOpening == nil else { return }
            do {
                try stream.setMuted(false)
            } catch {
                log.record("output", ["command": "clearServerMute", "error": "\(error.code.rawValue)"])
                dispatch(.outputSettingFailed(.unmute))
            }
        case .openStream, .openStreamOnDefaultSink:
            // The rules hold a stream back while the server is away (row 42): without a connection here the command
            // cannot be carried out.
            guard connection != nil else {
                log.record("output", ["command": "openStream", "error": "noConnection"])
                dispatch(.outputCommandFailed)
                return
            }
            // The rules uncork it when it opens (`streamOpened`), if the player is playing.
            ensureStream(on: command == .openStream ? .configured : .serverDefault)
        case .armTimer(let moment):
            armRulesTimer(for: moment)
        case .connectServer:
            attemptConnection()
        case .exitForeground(let reason):
            // The first exit asked for stands (a queue's end right after a failed connection changes nothing).
            guard exitCode == nil else { return }
            if reason == .noServer { log.tellUser("earshot: cannot connect to the sound server\n") }
            exitCode = reason == .queuePlayed ? 0 : 1
        case .closeStream:
            // Refused a cork or an uncork (`outputCommandFailed`): the rules count it as closed already.
            closeStream()
            dispatchAll(translator.ourStreamIsGone(at: eventMoment()))
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
        case .requeue(let index):
            requeue(at: index)
        case .removeTrack(let index):
            removeConsumedTrack(at: index)
        case .cue(let index, let milliseconds):
            // Also for an empty queue: the decoder lets go of the old one.
            let rate = tracks[index]?.format.sampleRate ?? 44_100
            reposition(to: TrackPosition(trackIndex: index, frame: milliseconds * rate / 1000, sampleRate: rate),
                       milliseconds: milliseconds)
        case .setVolume:
            // The user's volume, under the fade and duck gains (status and MPRIS show the user's).
            sendVolume()
        case .switchFormat(let reopen):
            switchFormat(reopen: reopen)
        case .skipFailedTrack(let failed, let next):
            // The decoder waits for it; a reposition since has given it another start, and it ignores this then.
            worker.skipFailedTrack(failed, next: next)
        case .releaseSleepDelay:
            // Handed over, not waited for: the adapter closes the lock on its own thread.
            logind?.releaseSleepDelay()
        case .holdIdleInhibitor:
            // Rule 23, handed over: the adapter asks the desktop on its own thread.
            idleInhibitor?.hold()
        case .releaseIdleInhibitor:
            idleInhibitor?.release()
        case .drain(let boundary):
            startDrain(for: boundary)
        case .rejoinLive(let reason):
            rejoinLive(reason)
        case .refuse(let reason):
            refuse(reason)
        case .reconnectLiveStream(let index):
            reconnectLiveStream(index)
        case .endLiveStream(let index):
            endLiveStream(index)
        }
    }
}
