// What the owner hands the storage writer, and when (Player.saveState). The queue is handed over when it changed,
// under a new id; the position when it is worth a write: at once when it says something new (another track or volume,
// a seek, a pause: anything but playing on), and while playing on, every `interval`, so that a kill loses at most that
// much. Nothing here touches the disk: it only decides; the writer (StateWriter) writes. Owned by the player's actor.

/// The owner's side of saving: what it last handed over and when.
struct SaveSchedule {
    /// While playing on, the position is handed over this often: a kill loses at most this much of it.
    static let interval = Duration.seconds(2)

    /// What is due now: a new queue id when the queue is to be written under it, and the position to write.
    struct HandOver: Equatable {
        /// The queue is to be written (`state.json`) under this new id.
        var newQueueId: Int?
        /// The position to write (`position.json`), when it is due.
        var position: SavedPosition?
    }

    /// The id of the queue as handed over last; nil until it was (a first start, an unreadable or an earlier
    /// version's `state.json`), which makes the next hand-over write it.
    private(set) var queueId: Int?
    /// The queue changed since it was handed over.
    private var queueChanged = true
    /// The position handed over last.
    private var handed: SavedPosition?
    /// The player's reposition count at that hand-over: a reposition since is a seek or a skip, saved at once.
    private var handedRepositions = 0
    /// When the saved position was last brought up to date (handed over, or found unchanged).
    private(set) var lastCurrent: ContinuousClock.Instant

    /// A schedule that has handed nothing over; `now` starts the first interval.
    init(now: ContinuousClock.Instant = .now) {
        lastCurrent = now
    }

    /// The state restored at start-up is on disk already: its queue (when it has an id) and its position.
    mutating func restored(_ state: PersistedState, repositions: Int) {
        queueId = state.queueId
        guard let queueId = state.queueId else { return }
        queueChanged = false
        handed = SavedPosition(queueId: queueId, trackIndex: state.trackIndex,
                               positionMilliseconds: state.positionMilliseconds, volumePercent: state.volumePercent)
        handedRepositions = repositions
    }

    /// The queue changed (replaced, extended): the next hand-over writes it.
    mutating func queueDidChange() {
        queueChanged = true
    }

    /// What to hand over now, for the player at `trackIndex`, `positionMilliseconds` and `volumePercent` after
    /// `repositions` repositions, `playing` or not. `final` (a clean exit) hands the position over whatever it is.
    /// Nil when nothing is due.
    mutating func due(
        trackIndex: Int, positionMilliseconds: Int, volumePercent: Int, repositions: Int, playing: Bool,
        final: Bool = false, now: ContinuousClock.Instant = .now
    ) -> HandOver? {
        var handOver = HandOver()
        if queueChanged || queueId == nil {
            let id = Self.newQueueId(differentFrom: queueId)
            queueId = id
            queueChanged = false
            handOver.newQueueId = id
        }
        let position = SavedPosition(queueId: queueId ?? 0, trackIndex: trackIndex,
                                     positionMilliseconds: positionMilliseconds, volumePercent: volumePercent)
        if position == handed && !final {
            lastCurrent = now
            return handOver.newQueueId == nil ? nil : handOver
        }
        // Anything but playing on is news; playing on is written every interval.
        let playingOn = playing && !final && handOver.newQueueId == nil && repositions == handedRepositions
            && handed.map { $0.queueId == position.queueId && $0.trackIndex == trackIndex
                && $0.volumePercent == volumePercent } == true
        if playingOn && now - lastCurrent < Self.interval { return nil }
        handed = position
        handedRepositions = repositions
        lastCurrent = now
        handOver.position = position
        return handOver
    }

    /// A random id for a queue, other than `previous`: positive and below 2^53, so any JSON reader keeps it exact.
    private static func newQueueId(differentFrom previous: Int?) -> Int {
        while true {
            let id = Int.random(in: 1...(1 << 53) - 1)
            if id != previous { return id }
        }
    }
}
