// Hostile playlists given to `earshot add` (issue 24): one that names itself, one of a million lines, and names with
// every byte value, each with a clear result and bounded memory. QueueInput reads the real files here.
import Foundation
import Testing
@testable import EarshotStorage
import TrackPaths

@Suite("Hostile playlists")
struct PlaylistInputTests {
    /// A fresh folder for one test, removed by the caller.
    private static func folder(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-\(name)-\(getpid())")
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a playlist that names itself, or another playlist, queues its other entries and says so")
    func selfReference() throws {
        let folder = try Self.folder("self-playlist")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([1]).write(to: folder.appendingPathComponent("a.mp3"))
        try Data("b.mp3\n".utf8).write(to: folder.appendingPathComponent("other.m3u"))
        let list = folder.appendingPathComponent("loop.m3u")
        try Data("a.mp3\nloop.m3u\n\(list.path)\nfile://\(list.path)\nother.m3u\n".utf8).write(to: list)
        let expansion = QueueInput.expand([TrackPath(list.path)])
        #expect(expansion.paths == [TrackPath(folder.path + "/a.mp3")])
        #expect(expansion.problems == Array(repeating: "loop.m3u names itself: that entry is skipped", count: 3)
            + ["other.m3u (in loop.m3u): a playlist inside a playlist is not followed"])
    }

    @Test("M3U, M3U8 and PLS: relative entries from the playlist's folder, absolute ones as written, missing reported")
    func everyKind() throws {
        let folder = try Self.folder("kinds-playlist")
        defer { try? FileManager.default.removeItem(at: folder) }
        let music = folder.appendingPathComponent("music", isDirectory: true)
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        for name in ["a.mp3", "b.flac"] { try Data([1]).write(to: music.appendingPathComponent(name)) }
        let lists = folder.appendingPathComponent("lists", isDirectory: true)
        try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
        let absolute = music.path + "/b.flac"
        let contents = [
            "one.m3u": "#EXTM3U\n../music/a.mp3\n\(absolute)\nmissing.mp3\n",
            "two.m3u8": "#EXTM3U\n#EXTINF:1,A\nfile://\(music.path)/a.mp3\n../music/b.flac\n",
            "three.pls": "[playlist]\nFile1=../music/a.mp3\nTitle1=A\nFile2=\(absolute)\nFile3=three.pls\n"
                + "File4=one.m3u\nNumberOfEntries=4\nVersion=2\n",
        ]
        for (name, text) in contents { try Data(text.utf8).write(to: lists.appendingPathComponent(name)) }
        let a = TrackPath(music.path + "/a.mp3"), b = TrackPath(absolute)

        let m3u = QueueInput.expand([TrackPath(lists.path + "/one.m3u")])
        #expect(m3u.paths == [a, b])
        #expect(m3u.problems == ["missing.mp3 (in one.m3u): no such file"])
        #expect(QueueInput.expand([TrackPath(lists.path + "/two.m3u8")]) == .init(paths: [a, b], problems: []))
        let pls = QueueInput.expand([TrackPath(lists.path + "/three.pls")])
        #expect(pls.paths == [a, b])
        #expect(pls.problems == ["three.pls names itself: that entry is skipped",
                                 "one.m3u (in three.pls): a playlist inside a playlist is not followed"])
        // A name relative to the working directory (here `lists`) reaches the same files.
        #expect(QueueInput.expand(["three.pls"], relativeTo: TrackPath(lists.path)).paths == [a, b])
    }

    @Test("expandPlaylists: playlists become their tracks, every other name stays as given, made absolute")
    func onlyPlaylistsExpand() throws {
        let folder = try Self.folder("only-playlists")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([1]).write(to: folder.appendingPathComponent("a.mp3"))
        try Data("[playlist]\nFile1=a.mp3\n".utf8).write(to: folder.appendingPathComponent("p.pls"))
        try Data("".utf8).write(to: folder.appendingPathComponent("empty.m3u"))
        let base = TrackPath(folder.path)
        let expansion = QueueInput.expandPlaylists(["p.pls", "gone.mp3", "a.mp3", "empty.m3u"], relativeTo: base)
        let a = TrackPath(folder.path + "/a.mp3")
        // A missing file is the player's to report; an empty playlist adds nothing.
        #expect(expansion == .init(paths: [a, TrackPath(folder.path + "/gone.mp3"), a], problems: []))
    }

    @Test("a playlist of 1 000 000 lines queues its first entries, counts the rest, and keeps bounded memory")
    func millionLines() throws {
        let folder = try Self.folder("million-playlist")
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([1]).write(to: folder.appendingPathComponent("a.mp3"))
        // Every tenth line names a missing file; the rest the one that exists.
        var text = [UInt8]()
        text.reserveCapacity(7_000_000)
        for line in 0..<1_000_000 { text += Array((line % 10 == 9 ? "b.mp3\n" : "a.mp3\n").utf8) }
        let list = folder.appendingPathComponent("million.m3u")
        try Data(text).write(to: list)
        // CPU time of this thread (the expansion runs on it): what the work costs, whatever the machine's load.
        let started = Self.threadCPUSeconds(), wallStarted = ContinuousClock.now
        let expansion = QueueInput.expand([TrackPath(list.path)])
        let elapsed = Self.threadCPUSeconds() - started, wall = ContinuousClock.now - wallStarted
        let kept = QueueInput.maximumPlaylistEntries
        #expect(expansion.paths.count == kept)
        #expect(expansion.paths.allSatisfy { $0 == TrackPath(folder.path + "/a.mp3") })
        // What is kept is bounded: the entries up to the limit, the first problems and two summary lines.
        #expect(expansion.problems.count == QueueInput.maximumPlaylistProblems + 2, "\(expansion.problems.suffix(2))")
        #expect(expansion.problems.first == "b.mp3 (in million.m3u): no such file")
        // 111 111 lines hold the first 100 000 names that exist and 11 111 that do not; the rest are only counted.
        let missing = kept / 9
        #expect(expansion.problems.suffix(2) == [
            "\(missing - QueueInput.maximumPlaylistProblems) more problems in million.m3u",
            "million.m3u: only its first \(kept) entries are queued, \(1_000_000 - kept - missing) more are left out",
        ])
        print("a 1 000 000-line playlist expanded in \(elapsed) s of CPU (\(wall) on the clock)")
        #expect(elapsed < 5 * Self.sanitizerSlowdown, "expanding took \(elapsed) s of CPU")
    }

    /// How many times slower this process runs its code: scripts/ci-checks runs this suite under ThreadSanitizer and
    /// AddressSanitizer, whose runtimes are found by their entry points (RTLD_DEFAULT: every loaded object).
    private static let sanitizerSlowdown: Double =
        dlsym(nil, "__tsan_init") != nil ? 15 : dlsym(nil, "__asan_init") != nil ? 4 : 1

    /// The CPU time this thread has used, in seconds.
    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    @Test("names with every byte value but NUL and '/' are queued with their bytes, bare and as file:// URIs")
    func everyByteValue() throws {
        let folder = try Self.folder("bytes-playlist")
        defer { try? FileManager.default.removeItem(at: folder) }
        let folderPath = TrackPath(folder.path)
        var bare: [UInt8] = [], uris: [UInt8] = [], expectedBare: [TrackPath] = [], expectedURIs: [TrackPath] = []
        for value in UInt8(1)...255 where value != UInt8(ascii: "/") {
            let path = TrackPath(bytes: folderPath.bytes + Array("/x".utf8) + [value] + Array(".mp3".utf8))!
            let descriptor = path.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
            #expect(descriptor >= 0, "creating the file with byte \(value)")
            close(descriptor)
            uris += Array(path.fileURI.utf8) + [UInt8(ascii: "\n")]
            expectedURIs.append(path)
            // A line break ends a bare line; a blank at the end is trimmed; both travel as file:// URIs.
            if ![UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains(value) {
                bare += path.bytes + [UInt8(ascii: "\n")]
                expectedBare.append(path)
            }
        }
        // Every byte value outside a file name is refused with a reason: a NUL, raw or escaped.
        bare += Array("/x".utf8) + [0] + Array(".mp3\n".utf8)
        uris += Array("file:///x%00.mp3\n".utf8)
        for (name, contents, expected) in [("bare.m3u", bare, expectedBare), ("uris.m3u8", uris, expectedURIs)] {
            let list = folder.appendingPathComponent(name)
            try Data(contents).write(to: list)
            let expansion = QueueInput.expand([TrackPath(list.path)])
            #expect(expansion.paths == expected, "\(name)")
            #expect(expansion.problems == ["an entry in \(name) holds a NUL byte, which no file name can"], "\(name)")
        }
    }
}
