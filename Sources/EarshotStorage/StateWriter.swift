// The storage writer: the thread that saves the state, so that the owner never waits for the disk.
//
// Threading: the owner hands over what is to be saved (`save`) and returns at once: a lock taken for a few assignments
// and a condition signalled. The writer's own thread, `earshot-store`, started at the first save, takes what is
// pending and writes it through the `StateStore`; that is where the waits are (writes, fsync, rename). Hand-overs
// coalesce: the latest state and the latest position replace any that were not written yet (only the newest matters),
// so a burst of queue changes while one is being flushed costs one more write, not one each. The state goes first:
// a position always names a queue written before it (`SavedPosition.queueId`). `finish()` waits until everything
// handed over is on disk; the service calls it from its main thread after the owner has stopped. An idle writer sleeps
// on its condition: no timer, no wake-up.
import EarshotService
import SystemSupport

/// Saves states and positions on a thread of its own, the latest of each, in order.
public final class StateWriter: StateSaving, @unchecked Sendable {
    // Unchecked Sendable: every variable below is read and written with `condition` locked; `store` and `failed` are
    // immutable (and the store is thread-safe).

    /// The store written to (and read from at start-up).
    public let store: StateStore
    private let failed: @Sendable (_ file: String, _ error: StateStoreError) -> Void
    private let condition = Condition()
    private var pendingState: PersistedState?
    private var pendingPosition: SavedPosition?
    /// The pending position is to be flushed to disk (a clean exit).
    private var pendingDurable = false
    /// A state whose save failed: written again with the next hand-over (not at once: a full disk stays full).
    private var failedState: PersistedState?
    private var threadStarted = false
    private var finishing = false
    private var finished = false
    private var counts = WriteCounts()
    /// What `loadSavedState` read, until the owner takes it.
    private var loaded: StateLoadResult?

    /// How many writes the writer made: each a `state.json` (two fsyncs) or a `position.json` record.
    public struct WriteCounts: Equatable, Sendable {
        /// `state.json` written.
        public var states = 0
        /// `position.json` records written.
        public var positions = 0
        /// Of those, flushed to disk.
        public var durablePositions = 0
    }

    /// A writer to `store`; `failed` is called on the writer's thread, with the file's name ("state" or "position"),
    /// when a save fails (a failed state is written again with the next hand-over).
    public init(store: StateStore, failed: @escaping @Sendable (_ file: String, _ error: StateStoreError) -> Void) {
        self.store = store
        self.failed = failed
    }

    /// Reads the saved state through the store, on the calling thread (which may wait for the disk, and fsyncs the
    /// directory when a corrupt file is moved aside): the service calls it on its main thread before the owner starts,
    /// and the owner then takes the result with `takeLoadedState()`, reading nothing itself.
    public func loadSavedState() {
        let result = store.load()
        condition.lock()
        loaded = result
        condition.unlock()
    }

    /// The state `loadSavedState()` read, once; nil when it was not read (or was taken already).
    public func takeLoadedState() -> StateLoadResult? {
        condition.lock()
        defer {
            loaded = nil
            condition.unlock()
        }
        return loaded
    }

    /// Hands over a state (`state.json`, when the queue changed) and a position (`position.json`) to be saved, the
    /// position flushed to disk when `durable`; returns at once. Either may be nil. After `finish()`, ignored.
    public func save(state: PersistedState?, position: SavedPosition?, durable: Bool = false) {
        guard state != nil || position != nil else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !finishing else { return }
        if let state {
            pendingState = state
        } else if pendingState == nil, let failedState {
            pendingState = failedState
        }
        if let position { pendingPosition = position }
        if durable { pendingDurable = true }
        if !threadStarted {
            threadStarted = true
            SystemThread.start(named: "earshot-store") { [self] in
                SystemThread.makeBatch()
                run()
            }
        }
        condition.broadcast()
    }

    /// Waits until everything handed over is written, then lets the thread end. Never call it on the owner.
    public func finish() {
        condition.lock()
        defer { condition.unlock() }
        finishing = true
        guard threadStarted else {
            finished = true
            return
        }
        condition.broadcast()
        while !finished { condition.wait() }
    }

    /// The writes made so far.
    public var writeCounts: WriteCounts {
        condition.lock()
        defer { condition.unlock() }
        return counts
    }

    private func run() {
        while true {
            condition.lock()
            while pendingState == nil && pendingPosition == nil && !finishing { condition.wait() }
            guard pendingState != nil || pendingPosition != nil else {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let state = pendingState
            let position = pendingPosition
            let durable = pendingDurable
            pendingState = nil
            pendingPosition = nil
            pendingDurable = false
            condition.unlock()

            var written = WriteCounts()
            var unsaved: PersistedState?
            if let state {
                do {
                    try store.save(state)
                    written.states = 1
                } catch {
                    unsaved = state
                    failed("state", error)
                }
            }
            if let position {
                do {
                    try store.savePosition(position, durable: durable)
                    written.positions = 1
                    written.durablePositions = durable ? 1 : 0
                } catch {
                    failed("position", error)
                }
            }
            condition.lock()
            if state != nil { failedState = unsaved }
            counts.states += written.states
            counts.positions += written.positions
            counts.durablePositions += written.durablePositions
            condition.unlock()
        }
    }
}
