// The queue as an MPD client sees it: each entry's file, position, id and change version, and the queue's version.

/// The owner's queue listing in MPD's terms.
struct MPDQueueView {
    /// Each entry's path as text.
    var paths: [String]
    /// Each entry's id (stable across edits).
    var ids: [Int]
    /// Each entry's version: the queue's version when it last changed place.
    var versions: [Int]
    /// The queue's version (MPD's `playlist`).
    var version: Int
    /// The current track's position.
    var current: Int

    /// The id of the entry at `position`.
    func id(_ position: Int) -> Int {
        ids.indices.contains(position) ? ids[position] : position + 1
    }

    /// The position of the entry with `id`, nil when none has it.
    func position(ofID id: Int) -> Int? {
        ids.firstIndex(of: id)
    }

    /// One entry as MPD lists it: its file, position and id.
    func songLines(_ position: Int) -> String {
        "file: \(paths[position])\nPos: \(position)\nId: \(id(position))\n"
    }

    /// The positions in `range` (nil: all), or nil when the range starts past the end.
    func positions(_ range: (start: Int, end: Int?)?) -> Range<Int>? {
        guard let range else { return 0..<paths.count }
        guard range.start <= paths.count else { return nil }
        return range.start..<min(range.end ?? paths.count, paths.count)
    }
}
