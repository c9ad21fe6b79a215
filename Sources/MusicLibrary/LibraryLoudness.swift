// LibraryLoudness: the ReplayGain the library measures (EBU R128, LoudnessMeter) for its tracks whose tags carry no
// gain, kept in the database (columns track_gain, track_peak, album_gain, album_peak; `loudness` 0 to measure,
// 1 measured, 2 not measurable) and never written into the files. An album is the tracks of one folder with one
// album tag: they are measured together, so a track added to it measures the album again. A track without an album
// tag gets a track gain only. A file read again by a scan is a new row, measured again.
import AudioPipeline
import TrackPaths

/// What a measuring pass did.
public struct LoudnessCounts: Equatable, Sendable {
    /// Tracks measured, and tracks that could not be (no audio decoded, silence).
    public var measured = 0
    public var failed = 0
    /// Tracks in the library with measured gains, and tracks still to measure, after the pass.
    public var withMeasuredGain = 0
    public var toMeasure = 0

    /// Empty counts.
    public init() {}
}

extension LibraryDatabase {
    /// The kinds of file measured.
    private static let audioKinds = "kind IN ('mp3', 'flac', 'vorbis', 'opus')"

    /// One track to measure.
    struct LoudnessItem {
        var id: Int
        var path: TrackPath
    }

    /// The next group to measure: an album (the untagged tracks of one folder with one album tag) with a track not yet
    /// measured, or one such track without an album; nil when nothing is left.
    func nextLoudnessGroup() throws(SQLiteError) -> [LoudnessItem]? {
        let first = try connection.statement("""
            SELECT root, folder, album FROM files
            WHERE loudness = 0 AND tagged_gain = 0 AND \(Self.audioKinds) LIMIT 1
            """)
        defer { first.reset() }
        guard try first.step() else { return nil }
        let root = first.integer(0)
        let folder = first.blob(1)
        let album = first.text(2)
        let roots = try roots()
        guard let rootPath = roots[root] else { return nil }
        let select = try connection.statement("""
            SELECT id, path FROM files WHERE root = ? AND folder = ? AND album IS ? AND tagged_gain = 0
                AND \(Self.audioKinds) AND (? OR loudness = 0) ORDER BY path
            """).bind([.integer(root), .blob(folder), .optional(album), .integer(album == nil ? 0 : 1)])
        defer { select.reset() }
        var items: [LoudnessItem] = []
        while try select.step() {
            let entry = LibraryEntry(root: rootPath, relativePath: select.blob(1), kind: .failed, size: 0,
                                     modificationTime: 0)
            items.append(LoudnessItem(id: select.integer(0), path: entry.absolute))
            // Without an album, one track at a time.
            if album == nil { break }
        }
        return items
    }

    /// Records what was measured of `id`: its gains (nil: not measurable).
    func storeLoudness(_ id: Int, _ gains: ReplayGainTags?) throws(SQLiteError) {
        try connection.statement("""
            UPDATE files SET loudness = ?, track_gain = ?, track_peak = ?, album_gain = ?, album_peak = ? WHERE id = ?
            """).bind([
                .integer(gains == nil ? 2 : 1), Self.real(gains?.trackGain), Self.real(gains?.trackPeak),
                Self.real(gains?.albumGain), Self.real(gains?.albumPeak), .integer(id),
            ]).run()
    }

    /// How many tracks have measured gains, and how many are still to measure.
    func loudnessCounts() throws(SQLiteError) -> (measured: Int, toMeasure: Int) {
        let select = try connection.statement("""
            SELECT sum(loudness = 1), sum(loudness = 0) FROM files WHERE tagged_gain = 0 AND \(Self.audioKinds)
            """)
        defer { select.reset() }
        guard try select.step() else { return (0, 0) }
        return (select.isNull(0) ? 0 : select.integer(0), select.isNull(1) ? 0 : select.integer(1))
    }

    /// The gains measured for the file at `path` (absolute), if it is in the library and was measured.
    public func measuredGains(for path: TrackPath) throws(SQLiteError) -> ReplayGainTags? {
        try trackInfo(for: path)?.measuredGains
    }

    /// What the library holds of the file at `path` (absolute): its tags and the gains measured for it; nil when it is
    /// not a track of the library.
    public func trackInfo(for path: TrackPath) throws(SQLiteError) -> LibraryTrackInfo? {
        let roots = try roots()
        for (id, root) in roots {
            guard let relative = LibraryScanner.scope(of: path, in: root), !relative.isEmpty else { continue }
            let select = try connection.statement("""
                SELECT \(Self.entryColumns), loudness, track_gain, track_peak, album_gain, album_peak FROM files
                WHERE root = ? AND path = ? AND kind != 'failed' AND kind != 'playlist'
                """).bind([.integer(id), .blob(relative)])
            defer { select.reset() }
            guard try select.step(), let entry = Self.entry(from: select, roots: roots) else { continue }
            func value(_ column: Int32) -> Double? { select.isNull(column) ? nil : select.real(column) }
            var gains: ReplayGainTags?
            if select.integer(21) == 1 {
                gains = ReplayGainTags(trackGain: value(22), trackPeak: value(23), albumGain: value(24),
                                       albumPeak: value(25))
                gains?.measured = true
            }
            return LibraryTrackInfo(tags: entry.tags, measuredGains: gains)
        }
        return nil
    }

    private static func real(_ value: Double?) -> SQLiteValue { value.map { .real($0) } ?? .null }
}

extension LibraryScanner {
    /// Measures the tracks whose tags carry no gain and that are not measured yet, album by album, until none is
    /// left or `cancelled` says to stop (a scan was asked for, or the service stops: the rest waits for the next
    /// pass). Throws when the database fails.
    public static func measureLoudness(
        into database: LibraryDatabase, cancelled: () -> Bool
    ) throws(SQLiteError) -> LoudnessCounts {
        var counts = LoudnessCounts()
        while !cancelled(), let group = try database.nextLoudnessGroup() {
            var meters: [(LibraryDatabase.LoudnessItem, LoudnessMeter?)] = []
            for item in group {
                guard !cancelled() else { break }
                meters.append((item, LoudnessMeter(path: item.path, cancelled: cancelled)))
            }
            guard !cancelled() else { break }
            let measured = meters.compactMap(\.1)
            let isAlbum = try database.albumOf(group.first?.id)
            let albumGain = isAlbum && !measured.isEmpty
                ? LoudnessMeter.gain(for: LoudnessMeter.loudness(of: measured)) : nil
            let albumPeak = measured.map(\.peak).max()
            try database.inTransaction { () throws(SQLiteError) in
                for (item, meter) in meters {
                    guard let meter, let trackGain = LoudnessMeter.gain(for: meter.loudness) else {
                        try database.storeLoudness(item.id, nil)
                        counts.failed += 1
                        continue
                    }
                    var gains = ReplayGainTags(trackGain: trackGain, trackPeak: meter.peak)
                    if isAlbum {
                        gains.albumGain = albumGain
                        gains.albumPeak = albumGain == nil ? nil : albumPeak
                    }
                    try database.storeLoudness(item.id, gains)
                    counts.measured += 1
                }
            }
        }
        (counts.withMeasuredGain, counts.toMeasure) = try database.loudnessCounts()
        return counts
    }
}

extension LibraryDatabase {
    /// Whether the file `id` has an album tag (its group is an album).
    func albumOf(_ id: Int?) throws(SQLiteError) -> Bool {
        guard let id else { return false }
        let select = try connection.statement("SELECT album IS NOT NULL FROM files WHERE id = ?").bind([.integer(id)])
        defer { select.reset() }
        return try select.step() && select.integer(0) != 0
    }
}
