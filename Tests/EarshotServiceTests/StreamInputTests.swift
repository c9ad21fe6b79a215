// Internet streams named to `earshot add`/`play` and in playlists (issue 40): queued as their URLs, never made into
// paths; files beside them as always.
import Foundation
import Testing
@testable import EarshotStorage
import TrackPaths

@Suite("Streams as queue entries")
struct StreamInputTests {
    @Test("http:// and https:// (any case) are streams; paths, file:// and other schemes are not")
    func streamURLs() {
        #expect(TrackPath("http://127.0.0.1:8000/radio").isStreamURL)
        #expect(TrackPath("HTTPS://radio.example/live.mp3").isStreamURL)
        for name in ["/music/http://x", "http:/x", "file:///a.mp3", "ftp://x/a.mp3", "https:", "radio.mp3"] {
            #expect(!TrackPath(name).isStreamURL, "\(name)")
        }
    }

    @Test("add: a URL is queued as written, between files made absolute")
    func addQueuesURLs() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-streams-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([1]).write(to: folder.appendingPathComponent("a.mp3"))
        let names: [TrackPath] = ["http://127.0.0.1:8000/radio", "a.mp3", "https://radio.example/x?y=1"]
        let expected: [TrackPath] = [names[0], TrackPath(folder.path + "/a.mp3"), names[2]]
        let added = QueueInput.expand(names, relativeTo: TrackPath(folder.path))
        #expect(added.paths == expected && added.problems.isEmpty)
        #expect(QueueInput.expandPlaylists(names, relativeTo: TrackPath(folder.path)).paths == expected)
    }

    @Test("M3U and PLS: station URLs are queued as written, beside relative files")
    func playlistsWithStations() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("earshot-stations-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data([1]).write(to: folder.appendingPathComponent("a.mp3"))
        let m3u = folder.appendingPathComponent("radio.m3u")
        try Data("#EXTM3U\n#EXTINF:-1,Loopback FM\nhttp://127.0.0.1:8000/radio\na.mp3\n".utf8).write(to: m3u)
        let pls = folder.appendingPathComponent("radio.pls")
        try Data("[playlist]\nFile1=https://radio.example/live\nTitle1=Live\nLength1=-1\nNumberOfEntries=1\n".utf8)
            .write(to: pls)
        let expansion = QueueInput.expand([TrackPath(m3u.path), TrackPath(pls.path)])
        #expect(expansion.paths == ["http://127.0.0.1:8000/radio", TrackPath(folder.path + "/a.mp3"),
                                    "https://radio.example/live"])
        #expect(expansion.problems.isEmpty, "\(expansion.problems)")
    }
}
