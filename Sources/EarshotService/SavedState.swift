// What the owner hands the storage to save, and what it takes back at start-up: values only. Their files (`state.json`,
// `position.json`), and the thread that writes them, are EarshotStorage's (StateStore, StateWriter); the owner hands
// them over through `StateSaving` (OwnerInterfaces.swift) and never touches the disk.
import TrackPaths

/// What Earshot saves between runs.
public struct PersistedState: Codable, Equatable, Sendable {
    /// The format version this build writes and reads.
    public static let currentVersion = 1

    /// The format version of the file.
    public var version: Int
    /// The queue, as file paths (written as an array of paths).
    public var queue: TrackList
    /// The index of the current track in `queue` (0 when the queue is empty).
    public var trackIndex: Int
    /// How far into the current track the listener was, in milliseconds.
    public var positionMilliseconds: Int
    /// The stream volume, in percent (0...150).
    public var volumePercent: Int
    /// Names this queue for `position.json` (`SavedPosition.queueId`); a new one with every queue written. Nil in a
    /// file of an earlier version, which had no position file.
    public var queueId: Int?
    /// Repeat and shuffle (SavedPlayModes.swift); off in a file of an earlier version.
    public var playModes: SavedPlayModes = .off

    /// The keys JSONEncoder knows: the play modes are written by hand (SavedPlayModes), and only when not off.
    private enum CodingKeys: String, CodingKey {
        case version, queue, trackIndex, positionMilliseconds, volumePercent, queueId
    }

    /// A state in the current format.
    public init(
        queue: TrackList, trackIndex: Int, positionMilliseconds: Int, volumePercent: Int, queueId: Int? = nil,
        version: Int = PersistedState.currentVersion
    ) {
        self.version = version
        self.queue = queue
        self.trackIndex = trackIndex
        self.positionMilliseconds = positionMilliseconds
        self.volumePercent = volumePercent
        self.queueId = queueId
    }

    /// This state with the track, position and volume of `position`, when it was saved for this queue and fits it;
    /// otherwise why it does not, for the log.
    public func taking(_ position: SavedPosition) -> (state: PersistedState, problem: PositionFileProblem?) {
        guard let queueId, position.queueId == queueId else { return (self, .otherQueue) }
        var taken = self
        taken.trackIndex = position.trackIndex
        taken.positionMilliseconds = position.positionMilliseconds
        taken.volumePercent = position.volumePercent
        if taken.inconsistency != nil { return (self, .unusable("does not fit the queue")) }
        return (taken, nil)
    }

    /// Why this state cannot be used, or nil when it can. Never quotes the values themselves.
    public var inconsistency: String? {
        if version != Self.currentVersion { return "unsupported format version" }
        if queue.isEmpty ? trackIndex != 0 : !queue.indices.contains(trackIndex) {
            return "track index outside the queue"
        }
        if positionMilliseconds < 0 { return "negative position" }
        if !(0...150).contains(volumePercent) { return "volume outside 0...150" }
        return nil
    }
}

/// What `StateStore.load()` found.
public enum StateLoadResult: Equatable, Sendable {
    /// No state file: a first start.
    case empty
    /// The saved state, its track, position and volume from `position.json` unless `positionFile` says why not.
    case restored(PersistedState, positionFile: PositionFileProblem?)
    /// The file could not be used; it was moved to `keptAs` (a full path). `reason` never quotes its content.
    case corrupt(reason: String, keptAs: String)
}

/// Why `position.json` was not used for a restored state: `state.json`'s own track, position and volume were.
public enum PositionFileProblem: Equatable, Sendable {
    /// There is none (a first save, or a state written by an earlier version).
    case absent
    /// It was saved for another queue: the queue changed and no position was saved for the new one before the end.
    case otherQueue
    /// It cannot be read, decoded or trusted; the reason never quotes its content.
    case unusable(String)

    /// One word for the log.
    public var kind: String {
        switch self {
        case .absent: return "absent"
        case .otherQueue: return "otherQueue"
        case .unusable: return "unusable"
        }
    }
}

/// The track, position and volume saved for one queue (`PersistedState.queueId`).
public struct SavedPosition: Equatable, Sendable {
    /// The format version this build writes and reads.
    public static let currentVersion = 1

    /// The format version of the record.
    public var version: Int
    /// The queue this position is in: `PersistedState.queueId` of the `state.json` it belongs to.
    public var queueId: Int
    /// The index of the current track in that queue.
    public var trackIndex: Int
    /// How far into the current track the listener was, in milliseconds.
    public var positionMilliseconds: Int
    /// The stream volume, in percent (0...150).
    public var volumePercent: Int

    /// A position in the current format.
    public init(
        queueId: Int, trackIndex: Int, positionMilliseconds: Int, volumePercent: Int,
        version: Int = SavedPosition.currentVersion
    ) {
        self.version = version
        self.queueId = queueId
        self.trackIndex = trackIndex
        self.positionMilliseconds = positionMilliseconds
        self.volumePercent = volumePercent
    }
}
