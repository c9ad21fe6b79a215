// Starting the player: the wiring of the owner (EarshotService) to what may wait, its clients (EarshotClients: the
// control socket, the event log) and its storage (EarshotStorage: the state writer, the cover pictures), with MPRIS and
// signals. The owner only knows them by the interfaces it defines (`OwnerParts`, `PlayerInbox`).
import AudioPipeline
import EarshotClients
import EarshotIdleInhibitor
import EarshotLogind
import EarshotMPRIS
import EarshotService
import EarshotStorage
import Glibc
import SystemSupport
import TrackPaths

/// Entry points of the service for the command line.
enum PlayerService {
    /// Plays `files` in the foreground until the queue ends or SIGINT/SIGTERM; returns the exit code.
    static func runForeground(files: [TrackPath], configuration: PlayerConfiguration) -> Int32 {
        run(mode: .foreground(files: files), configuration: configuration, saving: false, withMPRIS: false)
    }

    /// Runs the long-lived service (`earshot serve`): restores the saved queue paused, answers the control
    /// socket and MPRIS, and runs until SIGTERM/SIGINT or MPRIS Quit. Returns the exit code.
    static func serve(configuration: PlayerConfiguration) -> Int32 {
        run(mode: .service, configuration: configuration, saving: true, withMPRIS: true)
    }

    private static func run(
        mode: PlayerMode, configuration: PlayerConfiguration, saving: Bool, withMPRIS: Bool
    ) -> Int32 {
        // SIGINT and SIGTERM are taken by a thread of their own with sigwait (see `awaitStopSignals`), so they are
        // blocked here, before any other thread starts: every thread inherits the mask, and none is interrupted.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGINT)
        sigaddset(&stopSignals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        let log = EventLog(echoToStandardError: !configuration.showsProgress || configuration.debugLogging)
        let stateWriter = saving ? makeStateWriter(log: log) : nil
        // Read here, on the main thread, before the owner starts: the owner only takes the result.
        stateWriter?.loadSavedState()
        let inbox = PlayerInbox()
        // The music library runs with the service only (not `earshot play FILE`): its thread starts below.
        let library = withMPRIS ? LibraryWiring.make(configuration, log: log, inbox: inbox) : nil

        // The MPD front-end, whose figures (listeners that could not start, limits) `status` shows.
        let mpdFigures = LockedValue<MPDServer?>(nil)
        // Every front-end's request, answered on its client's thread (which may wait; the owner never does).
        let answer: @Sendable (ControlRequest) -> String = { request in
            @Sendable func ask(_ request: ControlRequest) -> String {
                let slot = ReplySlot(timeoutReply: ControlReply.failure("the player did not answer in time"))
                inbox.request(request, replyTo: slot)
                return slot.wait(timeout: .seconds(10))
            }
            // Library requests are answered here, on the client's thread; `findadd` queues through `add`.
            if let library, let reply = LibraryWiring.answer(request, library: library, add: {
                ask(.add(paths: $0))
            }) {
                return reply
            }
            return ask(request)
        }
        // The control socket's: `status` with the MPD front-end's figures (MPD's own `status` has no room for them).
        let handler: @Sendable (ControlRequest) -> String = { request in
            let reply = answer(request)
            guard case .status = request, let mpd = mpdFigures.withLock({ $0 }) else { return reply }
            return mpd.noting(in: reply)
        }
        let server: ControlServer
        do {
            server = try ControlServer(path: configuration.socketPath, log: log, handler: handler)
        } catch {
            StandardStream.writeError("earshot: \(error.description)\n")
            return 1
        }

        // MPD's protocol, with the service only: the same requests as the control socket's, on threads of its own.
        let musicFolders = LibraryWiring.musicFolders(configuration, environment: ProcessEnvironment.current)
        let mpdServer = withMPRIS && !configuration.mpdListen.isEmpty
            ? MPDServer(addresses: configuration.mpdListen, playlistDirectory: configuration.playlistDirectory,
                        password: configuration.mpdPassword, musicFolders: musicFolders,
                        connectionTimeoutSeconds: configuration.mpdConnectionTimeoutSeconds, log: log, ask: answer)
            : nil
        mpdFigures.withLock { $0 = mpdServer }

        let positionCell = PositionCell()
        var mpris: MPRISServer?
        if withMPRIS {
            let candidate = MPRISServer(
                supportedMimeTypes: AudioFileKind.mimeTypes + PlaylistFormat.mimeTypes,
                connectionChanged: { change in log.record(change) }, positionProvider: { positionCell.load() }
            ) { asked in
                // On the bus thread, which may wait: a playlist given to OpenUri is read here, never on the owner.
                let (command, refusal) = expandingPlaylists(asked, log: log)
                if let refusal { return refusal }
                let slot = ReplySlot(timeoutReply: MPRISReply.refused("the player did not answer in time"))
                inbox.mpris(command, replyTo: slot)
                return slot.wait(timeout: .seconds(10))
            }
            do {
                try candidate.start()
                mpris = candidate
            } catch {
                // Without a session bus the player still works; media keys and WirePlumber's pause do not.
                log.record("mpris", ["state": "unavailable"])
            }
        }

        awaitStopSignals(stopSignals, inbox: inbox)
        // The service follows its login session (rule 19); it connects on its own thread, so a slow or missing system
        // bus never holds up the start.
        let logind = withMPRIS ? LogindWatcher(
            sessionID: ProcessEnvironment.value(named: "XDG_SESSION_ID"), userID: getuid(),
            report: { report in log.record(report) }, emit: { event in inbox.session(event) }) : nil
        logind?.start()
        // Rule 23: the idle suspend held off while playing, asked of the session bus on a thread of its own.
        let idleInhibitor = withMPRIS && configuration.policy.inhibitIdleSuspend
            ? IdleInhibitor(report: { report in log.record(report) }) : nil
        idleInhibitor?.start()
        library?.start()
        // The decode thread asks the library for a track's tags and the gains it measured (LibraryLoudness).
        var libraryLookup: (@Sendable (TrackPath) -> LibraryTrackInfo?)?
        if let library { libraryLookup = { path in library.trackInfo(for: path) } }
        let parts = OwnerParts(
            log: log, stateSaver: stateWriter, mpris: mpris, positionCell: positionCell,
            makeCoverStore: { report in
                CoverArtWorker(cache: CoverArtCache(environment: ProcessEnvironment.current), report: report)
            }, sleepDelay: logind, idleInhibitor: idleInhibitor, library: libraryLookup)
        if case .service = mode { log.record("service", ["state": "started"]) }
        let code = PlayerOwner.run(configuration: configuration, mode: mode, inbox: inbox, parts: parts)
        // The owner handed its last state over (`shutdown`): on disk before the process ends.
        stateWriter?.finish()
        logind?.stop()
        idleInhibitor?.stop()
        library?.stop()
        server.shutdown()
        mpdServer?.shutdown()
        log.record("service", ["state": "stopped", "exit": "\(code)"])
        // The owner queued its last lines for standard error and its progress line's end for standard output: written
        // before the process ends, unless a stream stalls.
        log.flushStandardStreams()
        return code
    }
}

extension PlayerService {
    /// Starts the thread that waits for `signals` (blocked in every thread) and puts a shutdown into the inbox for each.
    /// A thread parked in sigwait costs nothing until a signal comes; a dispatch signal source would need a global
    /// queue, whose worker pool's monitor wakes the process every second for good (see TickTimer.swift).
    private static func awaitStopSignals(_ signals: sigset_t, inbox: PlayerInbox) {
        SystemThread.start(named: "earshot-signals") {
            var waitedFor = signals
            while true {
                var number: Int32 = 0
                guard sigwait(&waitedFor, &number) == 0 else { continue }
                inbox.shutdown(signal: number)
            }
        }
    }

    /// The writer of the service's state files, in the XDG state directory: the disk is written on the writer's own
    /// thread, the owner only hands over what changed. A failure is logged by its step and error number, not its path.
    private static func makeStateWriter(log: EventLog) -> StateWriter {
        StateWriter(store: StateStore(environment: ProcessEnvironment.current)) { file, error in
            log.record("state", ["saved": "failed", "file": file, "step": error.operation, "errno": "\(error.code)"])
        }
    }
}

extension PlayerService {
    /// MPRIS `OpenUri` given a playlist (`.m3u`, `.m3u8`, `.pls`) asks for its tracks, with the limits and the checks
    /// of `earshot add` (`QueueInput`); any other command is as asked. A playlist with nothing to play is refused with
    /// what was wrong (the caller's own message: names included); otherwise the problems are only counted in the log,
    /// which never names files.
    static func expandingPlaylists(
        _ command: MPRISCommand, log: EventLog
    ) -> (command: MPRISCommand, refusal: MPRISReply?) {
        guard case .openUri(let paths) = command, paths.contains(where: { PlaylistFormat.of($0) != nil }) else {
            return (command, nil)
        }
        let expansion = QueueInput.expandPlaylists(paths)
        guard !expansion.paths.isEmpty else {
            let reasons = expansion.problems.isEmpty ? "the playlist names no file" : expansion.problems
                .joined(separator: "; ")
            return (command, .refused("OpenUri: nothing to play: \(reasons)"))
        }
        if !expansion.problems.isEmpty {
            log.record("mpris", ["openUri": "playlist", "problems": "\(expansion.problems.count)"])
        }
        return (.openUri(paths: expansion.paths), nil)
    }
}

extension EventLog {
    /// Records a change of the MPRIS server's bus connection.
    func record(_ change: MPRISConnectionChange) {
        switch change {
        case .connected: record("mpris", ["state": "connected"])
        case .lost(let error): record("mpris", ["state": "lost", "error": error])
        case .reconnected: record("mpris", ["state": "reconnected"])
        }
    }
}

extension EventLog {
    /// Records what the logind adapter reports: kinds and causes only.
    func record(_ report: LogindReport) {
        switch report {
        case .connected(let session): record("logind", ["state": "connected", "session": session ? "found" : "none"])
        case .unavailable(let reason): record("logind", ["state": "unavailable", "reason": reason])
        case .sleepDelayTaken: record("logind", ["sleepDelay": "taken"])
        case .sleepDelayRefused(let reason): record("logind", ["sleepDelay": "refused", "reason": reason])
        case .sleepDelayReleased: record("logind", ["sleepDelay": "released"])
        case .lost(let reason): record("logind", ["state": "lost", "reason": reason])
        case .reconnected(let session):
            record("logind", ["state": "reconnected", "session": session ? "found" : "none"])
        }
    }
}

extension LogindWatcher: SleepDelayReleasing {}

extension EventLog {
    /// Records what the idle inhibitor reports: services and causes only.
    func record(_ report: IdleInhibitorReport) {
        switch report {
        case .held(let service): record("idleInhibitor", ["state": "held", "service": service])
        case .released(let service): record("idleInhibitor", ["state": "released", "service": service])
        case .releaseRefused(let service, let reason):
            record("idleInhibitor", ["state": "releaseRefused", "service": service, "reason": reason])
        case .noService(let reasons):
            record("idleInhibitor", ["state": "noService", "reason": reasons.joined(separator: "; ")])
        case .unavailable(let reason): record("idleInhibitor", ["state": "unavailable", "reason": reason])
        case .lost(let reason): record("idleInhibitor", ["state": "lost", "reason": reason])
        case .reconnected: record("idleInhibitor", ["state": "reconnected"])
        }
    }
}

extension IdleInhibitor: IdleSuspendInhibiting {}
