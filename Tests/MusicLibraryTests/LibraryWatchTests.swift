// The running library (MusicLibraryService) on a generated collection: its first scan on its own, then the watcher
// (inotify) seeing a file added, a file renamed, a folder moved out and moved back in, and a file deleted, each applied
// without an `update`. Each step waits for the library's own reports with one generous timeout; how long each took
// is printed, not asserted.
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: the running service and its watcher")
struct LibraryWatchTests {
    @Test("the first scan runs by itself; added, renamed, moved and deleted files are applied without an update")
    func watcherAppliesChanges() throws {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("watch-\(UUID().uuidString)", isDirectory: true)
        let root = try LibraryFixtures.make(in: scratch.appendingPathComponent("music", isDirectory: true))
        let reports = LibraryReports()
        let service = MusicLibraryService(
            databasePath: scratch.appendingPathComponent("cache/library.sqlite").path, roots: [TrackPath(root.path)],
            report: { reports.append($0) })
        service.start()
        defer { service.stop() }
        func paths() throws -> [String] {
            try service.tracks(.find([])).map { String(decoding: $0.relativePath, as: UTF8.self) }
        }
        let all = LibraryFixtures.tracksInOrder.map(\.path)
        _ = try reports.waitUntil("the first scan has filled the library") { (try? paths()) == all }
        #expect(reports.list.contains(.opened(.created)))
        #expect(reports.list.contains(.watching(true, reason: nil)))

        let files = FileManager.default
        let added = "Sigur Rós/Ágætis byrjun/02 copy.flac"
        try files.copyItem(at: root.appendingPathComponent(all[4]), to: root.appendingPathComponent(added))
        let addSeconds = try reports.waitUntil("an added file is in") { try paths().contains(added) }

        let renamed = "Miles Davis/1959 Kind of Blue/01 So What (renamed).mp3"
        try files.moveItem(at: root.appendingPathComponent(all[0]), to: root.appendingPathComponent(renamed))
        let renameSeconds = try reports.waitUntil("a renamed file is in under its new name only") {
            let now = try paths()
            return now.contains(renamed) && !now.contains(all[0])
        }

        // A folder moved out of the music folder, then back in under another name.
        let outside = scratch.appendingPathComponent("away", isDirectory: true)
        try files.moveItem(at: root.appendingPathComponent("Miles Davis/1970 Bitches Brew"), to: outside)
        let moveOutSeconds = try reports.waitUntil("a folder moved out is gone") {
            try !paths().contains { $0.hasPrefix("Miles Davis/1970 Bitches Brew/") }
        }
        try files.moveItem(at: outside, to: root.appendingPathComponent("Sigur Rós/Brew again"))
        let moveInSeconds = try reports.waitUntil("a folder moved in is in") {
            try paths().filter { $0.hasPrefix("Sigur Rós/Brew again/") }.count == 2
        }
        // Its watch follows it: a file deleted in the moved folder is seen.
        try files.removeItem(at: root.appendingPathComponent("Sigur Rós/Brew again/2-01 Spanish Key.opus"))
        let deleteSeconds = try reports.waitUntil("a file deleted in the moved folder is gone") {
            try paths().filter { $0.hasPrefix("Sigur Rós/Brew again/") }.count == 1
        }
        print("watcher: added \(addSeconds) s, renamed \(renameSeconds) s, moved out \(moveOutSeconds) s, moved in "
            + "\(moveInSeconds) s, deleted \(deleteSeconds) s")
    }

    @Test("a thousand files copied in at once are coalesced into a few scans")
    func thousandFilesCoalesce() throws {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("flood-\(UUID().uuidString)", isDirectory: true)
        let root = try LibraryFixtures.make(in: scratch.appendingPathComponent("music", isDirectory: true))
        let reports = LibraryReports()
        let service = MusicLibraryService(
            databasePath: scratch.appendingPathComponent("cache/library.sqlite").path, roots: [TrackPath(root.path)],
            report: { reports.append($0) })
        service.start()
        defer { service.stop() }
        func count() throws -> Int { try service.tracks(.find([])).count }
        _ = try reports.waitUntil("the first scan has filled the library") { (try? count()) == 5 }
        func scans() -> Int { reports.list.filter { if case .scanned = $0 { true } else { false } }.count }
        let scansBefore = scans()
        // Made outside, then moved in folder by folder: ten folders of a hundred files arrive within a moment.
        let source = root.appendingPathComponent(LibraryFixtures.tracks[1].path)
        let staging = scratch.appendingPathComponent("staging", isDirectory: true)
        for folder in 0..<10 {
            let directory = staging.appendingPathComponent("Flood \(folder)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for index in 0..<100 {
                try FileManager.default.linkItem(at: source, to: directory.appendingPathComponent("\(index).flac"))
            }
        }
        for folder in 0..<10 {
            try FileManager.default.moveItem(at: staging.appendingPathComponent("Flood \(folder)"),
                                             to: root.appendingPathComponent("Flood \(folder)"))
        }
        let seconds = try reports.waitUntil("the thousand files are in", timeout: 300) { (try? count()) == 1_005 }
        let floodScans = scans() - scansBefore
        print("watcher: 1000 files in 10 folders in \(seconds) s, \(floodScans) scans")
        #expect(floodScans <= 10, "\(floodScans) scans for one flood")
    }

    @Test("the database deleted under the running service is made again and filled at the next scan")
    func databaseDeletedWhileRunning() throws {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("deleted-\(UUID().uuidString)", isDirectory: true)
        let root = try LibraryFixtures.make(in: scratch.appendingPathComponent("music", isDirectory: true))
        let database = scratch.appendingPathComponent("cache/library.sqlite").path
        let reports = LibraryReports()
        let service = MusicLibraryService(databasePath: database, roots: [TrackPath(root.path)],
                                          report: { reports.append($0) })
        service.start()
        defer { service.stop() }
        func count() -> Int? { try? service.tracks(.find([])).count }
        _ = try reports.waitUntil("the first scan has filled the library") { count() == 5 }
        for ending in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + ending) }
        #expect(count() == nil, "a query without the file fails rather than answering from nowhere")
        service.requestScan()
        _ = try reports.waitUntil("the library is made again and filled") { count() == 5 }
        #expect(reports.list.filter { $0 == .opened(.created) }.count == 2)
    }
}
