// Issue 36's bad input and faults, each a test: a file vanishing mid-scan, a symlink loop (a link to itself and a
// link back up the tree), a name that is not UTF-8, the database deleted while the service runs, the database on a
// disk that is read-only or full (tmpfs mounts, so the disk really refuses). Each is counted or reported by kind, and
// nothing else stops working.
import AudioPipeline
import EarshotTestSupport
import Foundation
import Glibc
import SystemSupport
import Testing
@testable import MusicLibrary
import TrackPaths

@Suite("Music library: bad input and faults", .serialized)
struct LibraryFaultTests {
    /// A scratch folder with the generated collection in `music/`.
    static func collection() throws -> (scratch: URL, root: URL) {
        let scratch = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("faults-\(UUID().uuidString)", isDirectory: true)
        let root = try LibraryFixtures.make(in: scratch.appendingPathComponent("music", isDirectory: true))
        return (scratch, root)
    }

    /// A FLAC track of the collection.
    static func someFLAC(in root: URL) throws -> URL {
        let track = try #require(LibraryFixtures.tracksInOrder.first { $0.path.hasSuffix(".flac") })
        return root.appendingPathComponent(track.path)
    }

    /// Mounts a tmpfs of `kilobytes` at a new folder (root can; the test fails loudly when it cannot) and unmounts it
    /// after `body`.
    static func withTmpfs<T>(kilobytes: Int, _ body: (URL) throws -> T) throws -> T {
        let point = TestEnvironment.processTemporaryDirectory
            .appendingPathComponent("tmpfs-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: point, withIntermediateDirectories: true)
        try ProcessRunner.runChecked("mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", point.path])
        defer { _ = try? ProcessRunner.run("umount", ["-l", point.path]) }
        return try body(point)
    }

    @Test("a file that vanishes mid-scan is counted as vanished and forgotten; the rest are read")
    func vanishesMidScan() throws {
        let (scratch, root) = try Self.collection()
        let database = try LibraryDatabase(path: scratch.appendingPathComponent("library.sqlite").path)
        let scanner = LibraryScanner(roots: [TrackPath(root.path)])
        let paths = LibraryFixtures.tracksInOrder.map(\.path).sorted()
        // A new library: the last file read goes once the reading has begun.
        let last = root.appendingPathComponent(paths.last!)
        let first = try scanner.scan(into: database, progress: { done, _ in
            if done == 1 { try? FileManager.default.removeItem(at: last) }
        })
        #expect(first.skipped["vanished"] == 1, "\(first.skipped)")
        #expect(first.read == LibraryFixtures.tracks.count - 1, "\(first)")
        #expect(try database.counts().failed == 1, "only the fixtures' broken file is kept as unreadable")
        // A known file changed (so read again), gone before it is read: its old row goes too.
        let known = root.appendingPathComponent(paths.first!)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)],
                                              ofItemAtPath: known.path)
        let second = try scanner.scan(into: database, progress: { done, _ in
            if done == 0 { try? FileManager.default.removeItem(at: known) }
        })
        #expect(second.skipped["vanished"] == 1 && second.removed == 1, "\(second)")
        #expect(try database.counts().tracks == LibraryFixtures.tracks.count - 2)
    }

    @Test("a link to itself and a link back up are counted, never entered; a non-UTF-8 name is a track like any other")
    func loopsAndNames() throws {
        let (scratch, root) = try Self.collection()
        let folder = root.appendingPathComponent("Miles Davis")
        #expect(symlink("self", folder.appendingPathComponent("self").path) == 0)
        #expect(symlink("..", folder.appendingPathComponent("up").path) == 0)
        // "caf\xE9.flac": Latin-1, not UTF-8.
        let source = try Self.someFLAC(in: root)
        let bytes = Array(folder.path.utf8) + Array("/caf".utf8) + [0xE9] + Array(".flac".utf8)
        let data = try Data(contentsOf: source)
        let descriptor = (bytes.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
            open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        #expect(descriptor >= 0)
        _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        let database = try LibraryDatabase(path: scratch.appendingPathComponent("library.sqlite").path)
        let counts = try LibraryScanner(roots: [TrackPath(root.path)]).scan(into: database)
        #expect(counts.read == LibraryFixtures.tracks.count + 1, "\(counts)")
        #expect(counts.skipped["brokenLink"] == 1, "self: \(counts.skipped)")
        #expect(counts.skipped["loop"] == 3, "the fixtures' two and up: \(counts.skipped)")
        let odd = try database.tracks(.find([])).filter { $0.relativePath.contains(0xE9) }
        #expect(odd.count == 1)
        #expect(odd.first?.relativePath == Array("Miles Davis/caf".utf8) + [0xE9] + Array(".flac".utf8))
        // Found by its tags, and known to the decode thread by its raw bytes.
        #expect(try database.trackInfo(for: try #require(odd.first).absolute)?.tags != nil)
    }

    @Test("the database deleted while the service runs is made again and filled; queries answer from the new one")
    func databaseDeleted() throws {
        let (scratch, root) = try Self.collection()
        let path = scratch.appendingPathComponent("cache/library.sqlite").path
        let reports = LibraryReports()
        let service = MusicLibraryService(databasePath: path, roots: [TrackPath(root.path)],
                                          report: { reports.append($0) })
        service.start()
        defer { service.stop() }
        try reports.wait("the first scan") { if case .scanned = $0 { return true } else { return false } }
        #expect(try service.tracks(.find([])).count == LibraryFixtures.tracks.count)
        reports.clear()
        for ending in ["", "-wal", "-shm"] { _ = unlink(path + ending) }
        // A query meanwhile says why, and does not crash.
        #expect(throws: MusicLibraryService.QueryError.self) { try service.tracks(.find([])) }
        service.requestScan()
        try reports.wait("the database made again") { $0 == .opened(.created) }
        try reports.wait("the new one filled") { if case .scanned = $0 { return true } else { return false } }
        #expect(try service.tracks(.find([])).count == LibraryFixtures.tracks.count)
    }

    @Test("a database on a read-only disk: reported unavailable with SQLite's reason; queries refuse with a reason")
    func readOnlyDisk() throws {
        let (_, root) = try Self.collection()
        try Self.withTmpfs(kilobytes: 1024) { disk in
            try ProcessRunner.runChecked("mount", ["-o", "remount,ro", disk.path])
            let reports = LibraryReports()
            let service = MusicLibraryService(databasePath: disk.appendingPathComponent("earshot/library.sqlite").path,
                                              roots: [TrackPath(root.path)], report: { reports.append($0) })
            service.start()
            defer { service.stop() }
            try reports.wait("unavailable") { if case .unavailable = $0 { return true } else { return false } }
            print("read-only disk: \(reports.list)")
            #expect(throws: MusicLibraryService.QueryError.self) { try service.tracks(.find([])) }
            #expect(service.trackInfo(for: TrackPath(root.path + "/x.flac")) == nil)
        }
    }

    @Test("a database on a full disk: the scan fails with SQLite's reason, what was written stays readable")
    func fullDisk() throws {
        let (_, root) = try Self.collection()
        // Many more files than fit: 600 copies of a small track, their rows and search entries.
        let many = root.appendingPathComponent("Many", isDirectory: true)
        try FileManager.default.createDirectory(at: many, withIntermediateDirectories: true)
        let source = try Self.someFLAC(in: root)
        for index in 0..<600 {
            let name = String(repeating: "long name to fill the disk ", count: 4) + "\(index).flac"
            try FileManager.default.copyItem(at: source, to: many.appendingPathComponent(name))
        }
        try Self.withTmpfs(kilobytes: 192) { disk in
            let reports = LibraryReports()
            let service = MusicLibraryService(databasePath: disk.appendingPathComponent("library.sqlite").path,
                                              roots: [TrackPath(root.path)], report: { reports.append($0) })
            service.start()
            defer { service.stop() }
            try reports.wait("the scan failing") { if case .scanFailed = $0 { return true } else { return false } }
            let failure = reports.list.compactMap { if case .scanFailed(let reason) = $0 { reason } else { nil } }
            print("full disk: \(failure)")
            #expect(failure.first?.contains("full") == true, "\(failure)")
            // Earlier batches were committed: the library answers with what it has.
            let tracks = try service.tracks(.find([]))
            #expect(tracks.count < LibraryFixtures.tracks.count + 600, "\(tracks.count) tracks")
        }
    }
}
