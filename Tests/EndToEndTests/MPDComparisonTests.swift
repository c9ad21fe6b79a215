// Earshot beside Debian's MPD 0.23 (issue 37): a private MPD started by the test on a free loopback port, with its own
// configuration, database and playlist folder, the same music folder as Earshot's and its null output, and the same
// request lines sent to both (MPDComparison.swift). A reply that differs where the table says they must agree fails
// the test; the divergences allowed are in docs/mpd.md. A missing MPD is a failure (scripts/test installs `mpd`).
import EarshotTestSupport
import Foundation
import Testing

@Suite("MPD comparison", .serialized)
struct MPDComparisonTests {
    /// Starts Debian's MPD on `port` for `music`, with everything else below `folder`, and waits until it answers
    /// with its database scanned (`tracks` songs).
    static func startMPD(port: Int, music: URL, folder: URL, tracks: Int) async throws -> ChildProcess {
        let mpd = try ProcessRunner.requireTool("mpd", package: "mpd")
        let playlists = folder.appendingPathComponent("playlists", isDirectory: true)
        try FileManager.default.createDirectory(at: playlists, withIntermediateDirectories: true)
        let configuration = folder.appendingPathComponent("mpd.conf")
        try """
            music_directory "\(music.path)"
            playlist_directory "\(playlists.path)"
            db_file "\(folder.appendingPathComponent("database").path)"
            bind_to_address "127.0.0.1"
            port "\(port)"
            auto_update "no"
            audio_output {
                type "null"
                name "null"
            }
            """.write(to: configuration, atomically: true, encoding: .utf8)
        let process = try ChildProcess(mpd, ["--no-daemon", "--stderr", configuration.path])
        try await waitUntil("MPD answers on its port", timeout: .seconds(30), interval: .milliseconds(100)) {
            (try? ProcessRunner.run("mpc", ["-p", "\(port)", "status"]))?.succeeded ?? false
        }
        _ = try ProcessRunner.run("mpc", ["-p", "\(port)", "update", "--wait"], timeout: .seconds(60)).requireSuccess()
        try await waitUntil("MPD's database holds \(tracks) songs", timeout: .seconds(60)) {
            (try? ProcessRunner.run("mpc", ["-p", "\(port)", "stats"]).standardOutput)?
                .contains("Songs:        \(tracks)") ?? false
        }
        return process
    }

    /// Three tagged FLAC files in `folder` for the filter expressions (FLAC's own tags, which both read alike), named
    /// in MPD's order of a folder's songs (album, disc, track, name), so that the paths' order is the same.
    static func writeTagged(in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let wav = try Fixtures.toneWAV(frequency: 523, seconds: 0.4)
        let miles = ["ARTIST": "Miles Davis", "ALBUM": "Kind of Blue", "GENRE": "Jazz", "DATE": "1959"]
        let tracks: [[String: String]] = [
            ["TITLE": "Svefn-g-englar", "ARTIST": "Sigur Rós", "ALBUMARTIST": "Sigur Rós", "ALBUM": "Ágætis byrjun",
             "GENRE": "Post-Rock", "DATE": "1999", "TRACKNUMBER": "1"],
            miles.merging(["TITLE": "So What", "TRACKNUMBER": "1", "COMPOSER": "Miles Davis"]) { $1 },
            miles.merging(["TITLE": "Freddie's Tune", "TRACKNUMBER": "2"]) { $1 },
        ]
        for (index, tags) in tracks.enumerated() {
            try Fixtures.encode(wav, as: .flac, into: folder.appendingPathComponent("\(index + 1).flac"), tags: tags)
        }
    }

    @Test("the same requests to Earshot and to MPD 0.23: queue edits, status, stored playlists, outputs, library")
    func sameRepliesAsMPD() async throws {
        try await MPDClientTests.withPlayingService { harness, _, port, _ in
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            let album = music.appendingPathComponent("album", isDirectory: true)
            try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
            _ = try Fixtures.copy(try Fixtures.tone(frequency: 550, seconds: 30), to: album, named: "c.mp3")
            // What listfiles shows and the library does not hold (or, the line break, what neither shows).
            for name in ["notes.txt", ".hidden", "new\nline.txt"] {
                try Data(name.utf8).write(to: album.appendingPathComponent(name))
            }
            try FileManager.default.createSymbolicLink(atPath: album.appendingPathComponent("link.txt").path,
                                                       withDestinationPath: "notes.txt")
            try Self.writeTagged(in: music.appendingPathComponent("tagged", isDirectory: true))
            try MPDClientTests.mpc("127.0.0.1", port, ["update"])
            try await LibraryTests.waitForTracks(6, harness)
            let mpdPort = try MPDClientTests.freePort()
            let mpd = try await Self.startMPD(port: mpdPort, music: music,
                                              folder: harness.root.appendingPathComponent("mpd", isDirectory: true),
                                              tracks: 6)
            defer { mpd.kill() }
            let table = harness.root.appendingPathComponent("compare.txt")
            try MPDComparison.requests.write(to: table, atomically: true, encoding: .utf8)
            let result = try ProcessRunner.run("/usr/bin/python3", [
                "-c", MPDComparison.script, "127.0.0.1:\(port)", "127.0.0.1:\(mpdPort)", table.path,
            ], timeout: .seconds(120))
            // The replies only, not the script (which the command line holds) in a failure's message.
            let output = result.standardOutput + result.standardError
            let agreed = result.succeeded && output.contains("compared ")
            #expect(agreed, "\(output)")
        }
    }
}
