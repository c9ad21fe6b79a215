// Who each queue entry is, as MPD's clients follow the queue: a song id that stays with an entry however the queue is
// edited, and the queue's version with, per entry, the version at which it last changed place (MPD's `plchanges`).
// Pure bookkeeping beside the paths: the owner updates it at every change of the queue.

/// The queue's entry ids and change versions.
struct QueueIdentities: Equatable, Sendable {
    /// Each entry's id, by queue position.
    private(set) var ids: [Int] = []
    /// Each entry's version: the queue's version when it came to its present position.
    private(set) var versions: [Int] = []
    /// The queue's version, raised by every change.
    private(set) var version = 1
    /// The id the next new entry gets.
    private var nextID = 1

    /// The queue was replaced by `count` entries.
    mutating func replace(count: Int) {
        version += 1
        ids = (0..<count).map { _ in fresh() }
        versions = Array(repeating: version, count: count)
    }

    /// `count` entries were appended.
    mutating func append(count: Int) {
        version += 1
        for _ in 0..<count {
            ids.append(fresh())
            versions.append(version)
        }
    }

    /// The queue was edited in place: `arrangement` names, at each new position, the old position of its entry (nil:
    /// a new one). An entry that kept its position keeps its version.
    mutating func rearrange(_ arrangement: [Int?]) {
        version += 1
        var newIDs: [Int] = []
        var newVersions: [Int] = []
        newIDs.reserveCapacity(arrangement.count)
        newVersions.reserveCapacity(arrangement.count)
        for (position, old) in arrangement.enumerated() {
            if let old, ids.indices.contains(old) {
                newIDs.append(ids[old])
                newVersions.append(old == position ? versions[old] : version)
            } else {
                newIDs.append(fresh())
                newVersions.append(version)
            }
        }
        ids = newIDs
        versions = newVersions
    }

    /// The position of the entry with `id`, nil when none has it.
    func position(ofID id: Int) -> Int? {
        ids.firstIndex(of: id)
    }

    private mutating func fresh() -> Int {
        defer { nextID += 1 }
        return nextID
    }
}
