// EarshotService: the owner.
//
// A note on threading
// -------------------
// This target is the serial owner of the player's state: one actor (`Player`, in Player*.swift) on one thread of its
// own, "earshot-owner" (`OwnerThread`), which takes every input from one ordered inbox and handles it to the end before
// the next. That thread waits on nothing but its inbox and its next timer's deadline: not on a client, not on the disk,
// not on the sound server, not on the decoder. Whatever may wait lives in other targets, on threads of their own:
// - EarshotClients: the control socket's threads, the replies they wait for, the event log and its followers' writer,
//   the standard-error echo of the log, the progress line on standard output;
// - EarshotStorage: the state writer, the cover pictures' worker, the files the command line reads;
// - PulseOutput, AudioPipeline, EarshotMPRIS: the adapters' mainloop, decode and bus threads.
// This target imports neither EarshotClients nor EarshotStorage (LayeringTests checks the sources and Package.swift):
// it defines the small interfaces below, each a hand-over that returns at once, and the `earshot` executable wires in
// what implements them. Values cross by copy (`Sendable`), never a lock held across a system call.
import AudioPipeline
import SystemSupport
import TrackPaths

/// Where the owner records its event-log lines (EarshotClients' `EventLog`): kinds, causes and states, never a path
/// or a title. A call only queues the line and returns: it never waits for a reader, nor for standard error.
public protocol EventRecording: Sendable {
    /// Records one line: `kind` and its fields.
    func record(_ kind: String, _ fields: KeyValuePairs<String, String>)
    /// Queues `message` (a whole line, with its newline) for the user on standard error; returns at once.
    func tellUser(_ message: String)
    /// Queues `text` for the user's terminal on standard output: the foreground player's progress line (drawn over
    /// the last with a carriage return) or the newline that ends it; returns at once, even on a stopped terminal.
    func showProgress(_ text: String)
}

extension EventRecording {
    /// Records a line that is its kind alone.
    public func record(_ kind: String) {
        record(kind, [:])
    }
}

/// Where the owner hands over what is to be saved (EarshotStorage's `StateWriter`), and takes the state read before it
/// started. Both return at once: the disk is written, and was read, on other threads.
public protocol StateSaving: Sendable {
    /// Hands over a state (the queue changed) and a position to be saved, the position flushed to disk when `durable`;
    /// either may be nil.
    func save(state: PersistedState?, position: SavedPosition?, durable: Bool)
    /// The state read at start-up, once; nil when none was read (or it was taken already).
    func takeLoadedState() -> StateLoadResult?
}

/// One cover picture to store: that of track `index` of the queue as it was at `queueGeneration` (so the owner can
/// tell an outcome for a queue since replaced).
public struct CoverArtJob: Sendable {
    /// The track's index in its queue.
    public let index: Int
    /// The owner's queue generation when the track started.
    public let queueGeneration: Int
    /// Where the picture's bytes are.
    public let picture: CoverPicture

    /// A job for track `index` of the queue of `queueGeneration`.
    public init(index: Int, queueGeneration: Int, picture: CoverPicture) {
        self.index = index
        self.queueGeneration = queueGeneration
        self.picture = picture
    }
}

/// What became of a track's cover picture.
public enum CoverArtOutcome: Equatable, Sendable {
    /// Stored (or found stored) at this path.
    case stored(TrackPath)
    /// Not stored, for this reason (no path, no tag text): too large, malformed, unreadable, or the cache failed.
    case skipped(String)
}

/// Where the owner hands cover pictures to be stored (EarshotStorage's `CoverArtWorker`); each outcome comes back
/// through the inbox.
public protocol CoverArtStoring: Sendable {
    /// Hands `job` over and returns at once; false when the store is that far behind (the job is dropped).
    @discardableResult
    func submit(_ job: CoverArtJob) -> Bool
}

/// What closes the delay lock logind gave for a sleep (EarshotLogind's `LogindWatcher`), when the rules say the
/// player is quiet (rule 19). Closing it happens on the adapter's thread; this returns at once.
public protocol SleepDelayReleasing: Sendable {
    /// Asks for the sleep's delay lock to be released.
    func releaseSleepDelay()
}

/// What holds the desktop's idle suspend off while the rules say playing (EarshotIdleInhibitor's `IdleInhibitor`,
/// rule 23). Asking happens on the adapter's thread; every call returns at once.
public protocol IdleSuspendInhibiting: Sendable {
    /// Asks for the idle suspend to be held off (`holdIdleInhibitor`).
    func hold()
    /// Gives it back (`releaseIdleInhibitor`).
    func release()
    /// The service that holds it off for Earshot now, or nil when none does (read under the adapter's lock).
    var heldThrough: String? { get }
}

/// Where the owner puts its answer to a client's request (EarshotClients' `ReplySlot`, which a client's thread waits
/// on). Filling it never waits.
public protocol ReplyReceiver<Reply>: Sendable {
    /// The answer's type.
    associatedtype Reply: Sendable
    /// Hands `reply` over; false, and `reply` dropped, when the client gave up waiting.
    @discardableResult
    func fulfil(_ reply: Reply) -> Bool
}

/// The position MPRIS `Position` reads on the D-Bus thread without hopping to the actor: the position heard at a
/// moment and whether it advances from there (playing). The reader carries it forward to now, so nothing has to
/// refresh it while the position only runs on.
public final class PositionCell: @unchecked Sendable {
    // Unchecked Sendable: `anchor` is only read or written with `lock` held. A lock, not atomics: the three parts
    // must be read together. Never on the real-time path.
    private let lock = Lock()
    private var anchor = (microseconds: Int64(0), at: ContinuousClock.now, advancing: false, limit: Int64?.none)

    /// A cell at position 0, not advancing.
    public init() {}

    /// Records the position heard now, in microseconds; `advancing` while playing, up to `limit` (the track's end).
    func store(microseconds: Int64, advancing: Bool, limit: Int64?) {
        let now = ContinuousClock.now
        lock.withLock { anchor = (microseconds, now, advancing, limit) }
    }

    /// The position now, in microseconds.
    public func load() -> Int64 {
        let anchor = lock.withLock { self.anchor }
        guard anchor.advancing else { return anchor.microseconds }
        let elapsed = (ContinuousClock.now - anchor.at).components
        let position = anchor.microseconds + elapsed.seconds * 1_000_000 + elapsed.attoseconds / 1_000_000_000_000
        return min(position, anchor.limit ?? Int64.max)
    }
}
