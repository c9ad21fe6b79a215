// Starting the player: the control socket, MPRIS, signals, and the run loop (the player arms its own timer).
import AudioPipeline
import Dispatch
import EarshotLogind
import EarshotMPRIS
import Glibc
import SystemSupport
import TrackPaths

/// Entry points of the service for the `earshot` executable.
public enum PlayerService {
    /// Plays `files` in the foreground until the queue ends or SIGINT/SIGTERM; returns the exit code.
    public static func runForeground(files: [TrackPath], configuration: PlayerConfiguration) -> Int32 {
        run(mode: .foreground(files: files), configuration: configuration, saving: false, withMPRIS: false)
    }

    /// Runs the long-lived service (`earshot serve`): restores the saved queue paused, answers the control
    /// socket and MPRIS, and runs until SIGTERM/SIGINT or MPRIS Quit. Returns the exit code.
    public static func serve(configuration: PlayerConfiguration) -> Int32 {
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
        let (inputs, inbox) = AsyncStream<Player.Input>.makeStream(bufferingPolicy: .unbounded)

        let server: ControlServer
        do {
            server = try ControlServer(path: configuration.socketPath, log: log) { request in
                let slot = ReplySlot(timeoutReply: ControlReply.failure("the player did not answer in time"))
                inbox.yield(.request(request, slot))
                return slot.wait(timeout: .seconds(10))
            }
        } catch {
            StandardStream.writeError("earshot: \(error.description)\n")
            return 1
        }

        let positionCell = PositionCell()
        var mpris: MPRISServer?
        if withMPRIS {
            let candidate = MPRISServer(
                supportedMimeTypes: AudioFileKind.mimeTypes, connectionChanged: { change in log.record(change) }, positionProvider: { positionCell.load() }
            ) { command in
                let slot = ReplySlot(timeoutReply: MPRISReply.refused("the player did not answer in time"))
                inbox.yield(.mpris(command, slot))
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
            report: { report in log.record(report) }, emit: { event in inbox.yield(.session(event)) }) : nil
        logind?.start()
        let player = Player(
            configuration: configuration, mode: mode, log: log, stateWriter: stateWriter, mpris: mpris,
            logind: logind, positionCell: positionCell, inbox: inbox)
        if case .service = mode { log.record("service", ["state": "started"]) }
        let done = DispatchSemaphore(value: 0)
        let result = ExitCodeBox()
        // Started on the owner's thread and kept there (see `OwnerThread`): no hop through the cooperative pool.
        Task(executorPreference: player.ownerThread) {
            result.code = await player.run(inputs: inputs)
            done.signal()
        }
        done.wait()
        // The owner handed its last state over (`shutdown`): on disk before the process ends.
        stateWriter?.finish()
        logind?.stop()
        server.shutdown()
        log.record("service", ["state": "stopped", "exit": "\(result.code)"])
        return result.code
    }
}

extension PlayerService {
    /// Starts the thread that waits for `signals` (blocked in every thread) and puts a shutdown into the inbox for each.
    /// A thread parked in sigwait costs nothing until a signal comes; a dispatch signal source would need a global
    /// queue, whose worker pool's monitor wakes the process every second for good (see TickTimer.swift).
    private static func awaitStopSignals(_ signals: sigset_t, inbox: AsyncStream<Player.Input>.Continuation) {
        SystemThread.start(named: "earshot-signals") {
            var waitedFor = signals
            while true {
                var number: Int32 = 0
                guard sigwait(&waitedFor, &number) == 0 else { continue }
                inbox.yield(.shutdown(signal: number))
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
        }
    }
}

/// Carries the exit code from the player's task to the main thread.
private final class ExitCodeBox: @unchecked Sendable {
    // Unchecked Sendable: written once before the semaphore is signalled, read after it is waited on.
    var code: Int32 = 0
}
