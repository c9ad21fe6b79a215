// Issue 36's faults of things changing under the library: a file replaced or truncated and a folder removed while a
// scan reads; two services started on one database; a music folder that goes away while watched (a bind mount
// unmounted and mounted again, a folder deleted and made again). Each is counted or reported by kind, the library
// comes back in line with the disk, and nothing else stops working.
import EarshotTestSupport
import Foundation
import Glibc
import SystemSupport
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: changes under a scan, two services, a music folder gone", .serialized)
struct LibraryChangeFaultTests {
    typealias Reports = LibraryReports

    static func isScanned(_ report: MusicLibraryService.Report) -> Bool {
        if case .scanned = report { true } else { false }
    }

    /// The scanned reports so far: their counts and track totals.
    static func scans(_ reports: Reports) -> [(counts: ScanCounts, tracks: Int)] {
        reports.list.compactMap { if case .scanned(let counts, let tracks, _) = $0 { (counts, tracks) } else { nil } }
    }

    @Test("a file replaced, a file truncated and a folder removed while the scan reads: counted, then in line")
    func changesMidScan() throws {
        let (scratch, root) = try LibraryFaultTests.collection()
        let database = try LibraryDatabase(path: scratch.appendingPathComponent("library.sqlite").path)
        let scanner = LibraryScanner(roots: [TrackPath(root.path)])
        let replaced = root.appendingPathComponent("Miles Davis/1959 Kind of Blue/02 Freddie Freeloader.flac")
        let truncated = root.appendingPathComponent("Sigur Rós/Ágætis byrjun/01 Svefn-g-englar.flac")
        let removed = root.appendingPathComponent("Miles Davis/1970 Bitches Brew", isDirectory: true)
        let first = try scanner.scan(into: database, progress: { done, _ in
            guard done == 1 else { return }
            // Replaced as an editor saves (a new file renamed over it), with another track's tags.
            let fresh = scratch.appendingPathComponent("fresh.flac")
            try? FileManager.default.copyItem(at: truncated, to: fresh)
            _ = rename(fresh.path, replaced.path)
            _ = truncate(truncated.path, off_t(((try? Data(contentsOf: truncated).count) ?? 0) / 2))
            try? FileManager.default.removeItem(at: removed)
        })
        print("changed mid-scan: \(first)")
        #expect(first.skipped["vanished"] == 2, "the removed folder's two tracks: \(first.skipped)")
        #expect(try database.tracks(.find([.init(.file, "Miles Davis/1959 Kind of Blue/02 Freddie Freeloader.flac")]))
            .first?.tags.title == "Svefn-g-englar", "the replaced file is read as it is now")
        // The truncated file is a track (its header is whole) or counted by kind, and the scan went on.
        let others = first.skippedTotal - first.skipped["vanished", default: 0] - first.skipped["loop", default: 0]
        #expect(first.read + others == 4, "So What, the replaced, the truncated and the broken file: \(first)")
        // The next scans bring the library in line with the disk: each file as it is now, then nothing to read.
        _ = try scanner.scan(into: database)
        for file in [replaced, truncated] {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
            let relative = String(file.path.dropFirst(root.path.count + 1))
            let known = try database.knownFiles(root: database.rootID(TrackPath(root.path)))
            #expect(known.first { $0.path == Array(relative.utf8) }?.size == size,
                    "\(relative) recorded at its size now")
        }
        let third = try scanner.scan(into: database)
        #expect(third.read == 0 && third.removed == 0 && third.skipped["vanished"] == nil, "\(third)")
    }

    @Test("two services on one database: the second reports and waits, queries share it, then it takes over")
    func twoServices() throws {
        let (scratch, root) = try LibraryFaultTests.collection()
        let path = scratch.appendingPathComponent("cache/library.sqlite").path
        let firstReports = Reports()
        let first = MusicLibraryService(databasePath: path, roots: [TrackPath(root.path)],
                                        report: { firstReports.append($0) })
        first.start()
        var firstStopped = false
        defer { if !firstStopped { first.stop() } }
        try firstReports.wait("the first service's scan", Self.isScanned)
        let secondReports = Reports()
        let second = MusicLibraryService(databasePath: path, roots: [TrackPath(root.path)],
                                         report: { secondReports.append($0) })
        second.start()
        defer { second.stop() }
        try secondReports.wait("the second service waiting") {
            if case .unavailable(let reason) = $0 { reason.contains("another") } else { false }
        }
        print("second service: \(secondReports.list)")
        // The second shares the library for queries, and the first goes on writing as before.
        #expect(try second.tracks(.find([])).count == LibraryFixtures.tracks.count)
        second.requestScan(rescan: true)
        firstReports.clear()
        first.requestScan(rescan: true)
        try firstReports.wait("the first service's rescan", Self.isScanned)
        #expect(Self.scans(firstReports).first?.tracks == LibraryFixtures.tracks.count)
        #expect(!secondReports.list.contains { if case .opened = $0 { true } else { false } }, "it never opened")
        let check = try LibraryDatabase(path: path)
        #expect(check.opening == .current)
        #expect(try check.connection.oneOffStatement("PRAGMA integrity_check").textRow() == "ok")
        // Once the first stops, the second takes the library over and scans (what it was asked meanwhile).
        first.stop()
        firstStopped = true
        try secondReports.wait("the second service opening") { $0 == .opened(.current) }
        try secondReports.wait("the second service's scan", Self.isScanned)
        #expect(Self.scans(secondReports).last?.tracks == LibraryFixtures.tracks.count)
    }

    @Test("a music folder that goes away while watched: its tracks are kept and counted; back, it is scanned again")
    func musicFolderGone() throws {
        let (scratch, store) = try LibraryFaultTests.collection()
        // Music folder A is a bind mount of the collection; B a plain folder holding one more copy of it.
        let mounted = scratch.appendingPathComponent("A", isDirectory: true)
        let plain = scratch.appendingPathComponent("B", isDirectory: true)
        try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
        try ProcessRunner.runChecked("mount", ["--bind", store.path, mounted.path])
        defer { _ = try? ProcessRunner.run("umount", ["-l", mounted.path]) }
        _ = try LibraryFixtures.make(in: plain)
        let count = LibraryFixtures.tracks.count
        let reports = Reports()
        let service = MusicLibraryService(
            databasePath: scratch.appendingPathComponent("library.sqlite").path,
            roots: [TrackPath(mounted.path), TrackPath(plain.path)], report: { reports.append($0) })
        service.start()
        defer { service.stop() }
        try reports.wait("the first scan") {
            if case .scanned(_, let tracks, _) = $0 { tracks == 2 * count } else { false }
        }
        try reports.wait("watching") { $0 == .watching(true, reason: nil) }
        // The disk goes: no file events, but the watcher sees the folder change; the tracks stay, counted. Lazily, as
        // a disk pulled out: the library may be reading a file there (measuring its loudness), which a plain umount
        // refuses as busy.
        reports.clear()
        try ProcessRunner.runChecked("umount", ["-l", mounted.path])
        try reports.wait("a scan that finds the folder gone") {
            if case .scanned(let counts, _, _) = $0 { counts.skipped["musicFolderGone"] == 1 } else { false }
        }
        print("unmounted: \(Self.scans(reports))")
        #expect(Self.scans(reports).last?.tracks == 2 * count, "kept while the disk is away")
        #expect(try service.tracks(.find([])).count == 2 * count, "queries answer")
        // Back: scanned again without an update, nothing to read (the files are as they were).
        reports.clear()
        try ProcessRunner.runChecked("mount", ["--bind", store.path, mounted.path])
        try reports.wait("a scan that finds it back") {
            if case .scanned(let counts, _, _) = $0 { counts.skipped["musicFolderGone"] == nil } else { false }
        }
        let back = try #require(Self.scans(reports).last)
        #expect(back.tracks == 2 * count && back.counts.read == 0, "\(back)")
        // Folder B deleted: its tracks go as its files are deleted; the folder is counted; A is untouched.
        reports.clear()
        try FileManager.default.removeItem(at: plain)
        try reports.wait("a scan that finds B gone") {
            if case .scanned(let counts, _, _) = $0 { counts.skipped["musicFolderGone"] == 1 } else { false }
        }
        #expect(try service.tracks(.find([])).count >= count)
        // Made again, it is seen without an update.
        reports.clear()
        _ = try LibraryFixtures.make(in: plain)
        try reports.wait("B back") { if case .scanned(_, let tracks, _) = $0 { tracks == 2 * count } else { false } }
    }
}
