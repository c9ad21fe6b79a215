// The two state files (StateStore.swift, SavedPosition.swift): the position file wins for its own queue and only
// then, is one fixed-size record rewritten in place, and an earlier version's single `state.json` still restores; and
// the owner's schedule of what to hand over when (SaveSchedule).
import Foundation
import Testing

import TrackPaths
@testable import EarshotService
@testable import EarshotStorage

@Suite("State files and their schedule")
struct StateFilesTests {
    private let state = PersistedState(
        queue: ["/music/a.mp3", "/music/b.mp3", "/music/c.mp3"], trackIndex: 0, positionMilliseconds: 1_000,
        volumePercent: 100, queueId: 7)

    private func inode(of path: String) -> ino_t {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        return status.st_ino
    }

    // MARK: Files

    @Test("the position file's track, position and volume win when it belongs to the state's queue")
    func positionFileWins() throws {
        let store = try freshStore()
        try store.save(state)
        try store.savePosition(
            SavedPosition(queueId: 7, trackIndex: 2, positionMilliseconds: 61_500, volumePercent: 80), durable: false)
        var expected = state
        expected.trackIndex = 2
        expected.positionMilliseconds = 61_500
        expected.volumePercent = 80
        #expect(store.load() == .restored(expected, positionFile: nil))
    }

    @Test("a position of another queue, or one that does not fit the queue, leaves the state file's own")
    func foreignPositionIgnored() throws {
        let store = try freshStore()
        try store.save(state)
        try store.savePosition(
            SavedPosition(queueId: 8, trackIndex: 1, positionMilliseconds: 5, volumePercent: 80), durable: false)
        #expect(store.load() == .restored(state, positionFile: .otherQueue))
        try store.savePosition(
            SavedPosition(queueId: 7, trackIndex: 3, positionMilliseconds: 5, volumePercent: 80), durable: false)
        #expect(store.load() == .restored(state, positionFile: .unusable("does not fit the queue")))
        // A state file of an earlier version has no queue id: no position file can be its.
        var old = state
        old.queueId = nil
        try store.save(old)
        #expect(store.load() == .restored(old, positionFile: .otherQueue))
    }

    @Test("a damaged position file is ignored, never moved aside, and the next save rewrites it whole")
    func damagedPositionFile() throws {
        let store = try freshStore()
        try store.save(state)
        // Cut short (a power cut between writebacks may leave anything), or longer than any record.
        try Data(#"{"positionMilliseconds":12,"queueId":7,"trackInd"#.utf8)
            .write(to: URL(fileURLWithPath: store.positionPath))
        #expect(store.load() == .restored(state, positionFile: .unusable("not valid JSON")))
        try Data(repeating: UInt8(ascii: " "), count: 700).write(to: URL(fileURLWithPath: store.positionPath))
        #expect(store.load() == .restored(state, positionFile: .unusable("larger than 256 bytes")))
        let wrongType = #"{"positionMilliseconds":"12","queueId":7,"trackIndex":0,"version":1,"volumePercent":100}"#
        try Data(wrongType.utf8).write(to: URL(fileURLWithPath: store.positionPath))
        #expect(store.load()
                    == .restored(state, positionFile: .unusable(#"wrong type for field "positionMilliseconds""#)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
                    == ["position.json", "state.json"])
        // A fresh store (the next start) opens the file, cuts it to one record, and writes it.
        let next = StateStore(directory: store.directory)
        let position = SavedPosition(queueId: 7, trackIndex: 1, positionMilliseconds: 2_000, volumePercent: 90)
        try next.savePosition(position, durable: false)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.positionPath))
        #expect(bytes.count == SavedPosition.fileBytes)
        guard case .restored(let loaded, nil) = next.load() else {
            Issue.record("the rewritten position was not used: \(next.load())")
            return
        }
        #expect(loaded.trackIndex == 1 && loaded.positionMilliseconds == 2_000 && loaded.volumePercent == 90)
    }

    @Test("the position file is one padded JSON record of fixed size, rewritten in place, private")
    func positionRecordInPlace() throws {
        let store = try freshStore()
        try store.savePosition(
            SavedPosition(queueId: 9_007_199_254_740_991, trackIndex: 12_345, positionMilliseconds: 3_600_000,
                          volumePercent: 150), durable: true)
        let first = inode(of: store.positionPath)
        try store.savePosition(SavedPosition(queueId: 3, trackIndex: 0, positionMilliseconds: 0, volumePercent: 0),
                               durable: false)
        #expect(inode(of: store.positionPath) == first, "a save made a new file")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.positionPath))
        #expect(bytes.count == SavedPosition.fileBytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let record = #"{"positionMilliseconds":0,"queueId":3,"trackIndex":0,"version":1,"volumePercent":0}"#
        #expect(text == record + String(repeating: " ", count: SavedPosition.fileBytes - 1 - record.utf8.count) + "\n")
        // Any JSON reader takes it (trailing white space is allowed).
        let parsed = try JSONSerialization.jsonObject(with: bytes) as? [String: Any]
        #expect(parsed?["queueId"] as? Int == 3)
        var status = stat()
        stat(store.positionPath, &status)
        #expect(status.st_mode & 0o777 == 0o600)
        // The longest record there can be still fits.
        let longest = SavedPosition(queueId: Int.min, trackIndex: Int.min, positionMilliseconds: Int.min,
                                    volumePercent: Int.min, version: Int.min)
        #expect(longest.fileBytes().count == SavedPosition.fileBytes)
    }

    @Test("a state file of an earlier version (one file, no queue id) restores its queue and position")
    func earlierVersionRestores() throws {
        let store = try freshStore()
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        let old = #"{"positionMilliseconds":42000,"queue":["/m/a.mp3","/m/b.mp3"],"trackIndex":1,"version":1,"#
            + #""volumePercent":70}"# + "\n"
        try Data(old.utf8).write(to: URL(fileURLWithPath: store.filePath))
        let expected = PersistedState(queue: ["/m/a.mp3", "/m/b.mp3"], trackIndex: 1, positionMilliseconds: 42_000,
                                      volumePercent: 70)
        #expect(store.load() == .restored(expected, positionFile: .absent))
        // Migrated: the schedule hands the queue over under an id at once, and the position with it.
        var schedule = SaveSchedule()
        schedule.restored(expected, repositions: 1)
        let handOver = schedule.due(
            trackIndex: 1, positionMilliseconds: 42_000, volumePercent: 70, repositions: 1, playing: false)
        let due = try #require(handOver)
        let id = try #require(due.newQueueId)
        #expect(due.position == SavedPosition(queueId: id, trackIndex: 1, positionMilliseconds: 42_000,
                                              volumePercent: 70))
        var migrated = expected
        migrated.queueId = id
        try store.save(migrated)
        try store.savePosition(try #require(due.position), durable: false)
        #expect(store.load() == .restored(migrated, positionFile: nil))
        // The new state file is still one an earlier version reads: the old line with one key more.
        let text = try String(contentsOfFile: store.filePath, encoding: .utf8)
        #expect(text == #"{"positionMilliseconds":42000,"queue":["/m/a.mp3","/m/b.mp3"],"queueId":\#(id),"#
                    + #""trackIndex":1,"version":1,"volumePercent":70}"# + "\n")
    }

    // MARK: Schedule

    @Test("the first hand-over writes the queue under a new id, with the position")
    func firstHandOver() throws {
        var schedule = SaveSchedule()
        let first = schedule.due(
            trackIndex: 0, positionMilliseconds: 0, volumePercent: 100, repositions: 0, playing: false)
        let due = try #require(first)
        let id = try #require(due.newQueueId)
        #expect(id > 0 && id < 1 << 53)
        #expect(due.position?.queueId == id)
        let unchanged = schedule.due(
            trackIndex: 0, positionMilliseconds: 0, volumePercent: 100, repositions: 0, playing: false)
        #expect(unchanged == nil, "nothing changed")
        schedule.queueDidChange()
        let changed = schedule.due(
            trackIndex: 0, positionMilliseconds: 0, volumePercent: 100, repositions: 0, playing: false)
        let next = try #require(changed)
        #expect(next.newQueueId != nil && next.newQueueId != id)
        #expect(next.position?.queueId == next.newQueueId)
    }

    @Test("playing on is handed over every interval; a track, volume, seek or pause at once; a clean exit always")
    func playingOnWaitsForTheInterval() throws {
        let start = ContinuousClock.now
        var schedule = SaveSchedule(now: start)
        _ = schedule.due(trackIndex: 0, positionMilliseconds: 0, volumePercent: 100, repositions: 0, playing: true,
                         now: start)
        func due(_ milliseconds: Int, at offset: Int, track: Int = 0, volume: Int = 100, repositions: Int = 0,
                 playing: Bool = true, final: Bool = false) -> Int? {
            schedule.due(trackIndex: track, positionMilliseconds: milliseconds, volumePercent: volume,
                         repositions: repositions, playing: playing, final: final,
                         now: start + .milliseconds(offset))?.position?.positionMilliseconds
        }
        #expect(due(1_000, at: 1_000) == nil, "playing on, within the interval")
        #expect(due(1_900, at: 1_900) == nil)
        #expect(due(2_000, at: 2_000) == 2_000, "the interval is up")
        #expect(due(3_000, at: 3_000) == nil)
        #expect(due(0, at: 3_100, track: 1) == 0, "another track")
        #expect(due(200, at: 3_300, track: 1, volume: 50) == 200, "another volume")
        #expect(due(30_000, at: 3_400, track: 1, volume: 50, repositions: 1) == 30_000, "a seek")
        #expect(due(30_100, at: 3_500, track: 1, volume: 50, repositions: 1) == nil)
        #expect(due(30_150, at: 3_550, track: 1, volume: 50, repositions: 1, playing: false) == 30_150, "a pause")
        #expect(due(30_150, at: 3_600, track: 1, volume: 50, repositions: 1, playing: false) == nil, "unchanged")
        #expect(due(30_150, at: 3_700, track: 1, volume: 50, repositions: 1, playing: false, final: true) == 30_150,
                "a clean exit hands the position over even unchanged")
        // An unchanged position brings the schedule up to date: the next interval counts from then.
        #expect(schedule.lastCurrent == start + .milliseconds(3_700))
    }

    @Test("a restored state with an id is on disk already: nothing is due until something changes")
    func restoredIsCurrent() {
        var schedule = SaveSchedule()
        schedule.restored(state, repositions: 1)
        #expect(schedule.queueId == 7)
        let unchanged = schedule.due(
            trackIndex: 0, positionMilliseconds: 1_000, volumePercent: 100, repositions: 1, playing: false)
        #expect(unchanged == nil)
        let moved = schedule.due(trackIndex: 0, positionMilliseconds: 1_500, volumePercent: 100, repositions: 2,
                                 playing: false)
        #expect(moved == SaveSchedule.HandOver(
            newQueueId: nil,
            position: SavedPosition(queueId: 7, trackIndex: 0, positionMilliseconds: 1_500, volumePercent: 100)))
    }
}
