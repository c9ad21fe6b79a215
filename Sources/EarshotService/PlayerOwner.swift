// Starting the owner, and its inbox as the threads around it see it. The `earshot` executable makes what the owner
// hands work to (`OwnerParts`: the event log, the state writer, MPRIS, the cover pictures' store), the threads that put
// inputs in (`PlayerInbox`: the control socket, MPRIS, signals), and then runs the owner here.
import AudioPipeline
import Dispatch
import EarshotCore
import EarshotMPRIS
import SystemSupport
import TrackPaths

/// The owner's inbox: every input of the player, from every thread, in one order. Putting one in never waits.
public struct PlayerInbox: Sendable {
    /// The inputs, for the owner's loop.
    let inputs: AsyncStream<Player.Input>
    /// Where inputs are put.
    let continuation: AsyncStream<Player.Input>.Continuation

    /// An empty inbox.
    public init() {
        (inputs, continuation) = AsyncStream<Player.Input>.makeStream(bufferingPolicy: .unbounded)
    }

    /// Asks the player to answer a control request into `slot`.
    public func request(_ request: ControlRequest, replyTo slot: any ReplyReceiver<String>) {
        continuation.yield(.request(request, slot))
    }

    /// Asks the player to carry out an MPRIS request and answer into `slot`.
    public func mpris(_ command: MPRISCommand, replyTo slot: any ReplyReceiver<MPRISReply>) {
        continuation.yield(.mpris(command, slot))
    }

    /// Hands the player what the session did, as logind's adapter translated it (rule 19).
    public func session(_ event: Event) {
        continuation.yield(.session(event))
    }

    /// Hands the player the music library's latest state (a scan's progress, its counts), for `status`.
    public func library(_ status: LibraryStatus) {
        continuation.yield(.library(status))
    }

    /// Asks the player to stop, for `signal` (SIGINT or SIGTERM).
    public func shutdown(signal: Int32) {
        continuation.yield(.shutdown(signal: signal))
    }
}

/// What the owner hands work to, each through an interface it defines (OwnerInterfaces.swift); every hand-over returns
/// at once.
public struct OwnerParts: Sendable {
    /// Makes the store of cover pictures, given where it reports each outcome (into the inbox).
    public typealias CoverStoreMaker = @Sendable (
        _ report: @escaping @Sendable (CoverArtJob, CoverArtOutcome) -> Void
    ) -> any CoverArtStoring

    /// The event log.
    public var log: any EventRecording
    /// Saves the state; nil when nothing is saved (`earshot play`).
    public var stateSaver: (any StateSaving)?
    /// The MPRIS object, when the session bus took it.
    public var mpris: (any MPRISPublishing)?
    /// The position MPRIS reads without asking the owner.
    public var positionCell: PositionCell
    /// Makes the store of cover pictures.
    public var makeCoverStore: CoverStoreMaker
    /// Releases logind's delay lock for a sleep; nil when the player follows no session (`earshot play`).
    public var sleepDelay: (any SleepDelayReleasing)?
    /// Holds the desktop's idle suspend off while playing (rule 23); nil when the player does not ask for it.
    public var idleInhibitor: (any IdleSuspendInhibiting)?
    /// What the music library knows of a file (its tags, the gains it measured), asked by the decode thread at a
    /// track's start (never by the owner); nil without a library.
    public var library: (@Sendable (TrackPath) -> LibraryTrackInfo?)?

    /// The parts the owner is given.
    public init(
        log: any EventRecording, stateSaver: (any StateSaving)?, mpris: (any MPRISPublishing)?,
        positionCell: PositionCell, makeCoverStore: @escaping CoverStoreMaker,
        sleepDelay: (any SleepDelayReleasing)? = nil, idleInhibitor: (any IdleSuspendInhibiting)? = nil,
        library: (@Sendable (TrackPath) -> LibraryTrackInfo?)? = nil
    ) {
        self.library = library
        self.log = log
        self.stateSaver = stateSaver
        self.mpris = mpris
        self.positionCell = positionCell
        self.makeCoverStore = makeCoverStore
        self.sleepDelay = sleepDelay
        self.idleInhibitor = idleInhibitor
    }
}

/// Runs the owner.
public enum PlayerOwner {
    /// Makes the player and runs it on its own thread until its work is done (foreground) or a shutdown; returns the
    /// exit code. The calling thread (the service's main thread, which has nothing else to do) waits meanwhile.
    public static func run(
        configuration: PlayerConfiguration, mode: PlayerMode, inbox: PlayerInbox, parts: OwnerParts
    ) -> Int32 {
        let player = Player(configuration: configuration, mode: mode, parts: parts, inbox: inbox.continuation)
        let done = DispatchSemaphore(value: 0)
        let result = ExitCodeBox()
        // Started on the owner's thread and kept there (see `OwnerThread`): no hop through the cooperative pool.
        Task(executorPreference: player.ownerThread) {
            result.code = await player.run(inputs: inbox.inputs)
            done.signal()
        }
        // The service's main thread, never the owner: it only waits here for the owner to end.
        WaitGuard.check("PlayerOwner.run")
        done.wait()
        return result.code
    }
}

/// Carries the exit code from the player's task to the waiting thread.
private final class ExitCodeBox: @unchecked Sendable {
    // Unchecked Sendable: written once before the semaphore is signalled, read after it is waited on.
    var code: Int32 = 0
}
