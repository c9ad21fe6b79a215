// ncmpcpp in tmux drives Earshot end to end (issue 37): its playlist screen shows the queue Earshot holds, Enter on a
// track plays it (MPD's `playid`, the rules' chosen track) and its pause key pauses (the user's pause); its browser
// (lsinfo), search engine (search) and media library (list and find, an empty album included) show the library, and
// Enter on a song there queues and plays it; each checked on Earshot's own status and on the screen tmux captures. A
// missing ncmpcpp or tmux is a failure (scripts/test installs them).
import EarshotTestSupport
import Foundation
import Testing

@Suite("ncmpcpp", .serialized)
struct MPDNcmpcppTests {
    /// A tmux server of this test's own (its own socket name), running one client in a 120x40 window.
    struct Terminal {
        let socketName = "earshot-test-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let environment: [String: String]

        func tmux(_ arguments: [String]) throws -> String {
            try ProcessRunner.run("tmux", ["-L", socketName, "-f", "/dev/null"] + arguments,
                                  environment: environment, timeout: .seconds(30)).requireSuccess().standardOutput
        }

        func screen() -> String { (try? tmux(["capture-pane", "-p", "-t", "client"])) ?? "" }

        func press(_ keys: String...) throws { _ = try tmux(["send-keys", "-t", "client"] + keys) }
    }

    @Test("ncmpcpp's playlist, browser, search engine and media library show Earshot's queue and library; keys play")
    func ncmpcppDrivesEarshot() async throws {
        _ = try ProcessRunner.requireTool("ncmpcpp", package: "ncmpcpp")
        _ = try ProcessRunner.requireTool("tmux", package: "tmux")
        try await MPDClientTests.withPlayingService { harness, service, port, _ in
            // A folder in the library for the browser.
            let album = harness.root.appendingPathComponent("music/album", isDirectory: true)
            try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
            _ = try Fixtures.copy(try Fixtures.titledTrack(title: "Sea Song", artist: "Wyatt", seconds: 30), to: album,
                                  named: "c.mp3")
            try MPDClientTests.mpc("127.0.0.1", port, ["update"])
            try await LibraryTests.waitForTracks(3, harness)
            try MPDClientTests.mpc("127.0.0.1", port, ["stop"])
            try await harness.waitForStatus(of: service, "stopped by mpc") { $0.playback == "stopped" }
            let home = harness.root.appendingPathComponent("ncmpcpp-home", isDirectory: true)
            let configuration = home.appendingPathComponent("config")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            try """
                ncmpcpp_directory = "\(home.path)"
                lyrics_directory = "\(home.path)/lyrics"
                mpd_host = "127.0.0.1"
                mpd_port = "\(port)"
                startup_screen = "playlist"
                """.write(to: configuration, atomically: true, encoding: .utf8)
            let terminal = Terminal(environment: ["HOME": home.path, "TERM": "xterm-256color", "LANG": "C.UTF-8"])
            _ = try terminal.tmux(["new-session", "-d", "-s", "client", "-x", "120", "-y", "40",
                                   "ncmpcpp -c \(configuration.path)"])
            defer { _ = try? terminal.tmux(["kill-server"]) }
            try await waitUntil("ncmpcpp shows the queue", timeout: .seconds(30), interval: .milliseconds(100)) {
                let screen = terminal.screen()
                return screen.contains("a.mp3") && screen.contains("b.mp3")
            }
            // The second track: down one line, Enter.
            try terminal.press("Down")
            try terminal.press("Enter")
            let playing = try await harness.waitForStatus(of: service, "playing the chosen track") {
                $0.playback == "playing" && $0.trackIndex == 1
            }
            #expect(playing.trackIndex == 1)
            try await waitUntil("ncmpcpp shows playing", timeout: .seconds(20), interval: .milliseconds(100)) {
                terminal.screen().contains("Playing")
            }
            try terminal.press("p")
            let paused = try await harness.waitForStatus(of: service, "paused by ncmpcpp") { $0.playback == "paused" }
            #expect(paused.pauseReason == "user", "\(paused)")
            try await waitUntil("ncmpcpp shows paused", timeout: .seconds(20), interval: .milliseconds(100)) {
                terminal.screen().contains("Paused")
            }
            // The browser (lsinfo): the top folder, then into album/.
            try terminal.press("2")
            try await waitUntil("ncmpcpp's browser shows the top", timeout: .seconds(20),
                                interval: .milliseconds(100)) {
                let screen = terminal.screen()
                return screen.contains("Browse: /") && screen.contains("[album]") && screen.contains("a.mp3")
            }
            try terminal.press("Enter")
            try await waitUntil("ncmpcpp's browser shows album/", timeout: .seconds(20), interval: .milliseconds(100)) {
                let screen = terminal.screen()
                return screen.contains("Browse: album") && screen.contains("Wyatt - Sea Song")
            }
            // The search engine (search): "Sea" in its Any field, then its Search button.
            try terminal.press("3")
            try await waitUntil("ncmpcpp's search engine", timeout: .seconds(20), interval: .milliseconds(100)) {
                terminal.screen().contains("Search engine")
            }
            try terminal.press("Enter")
            try terminal.press("-l", "Sea")
            try terminal.press("Enter")
            for _ in 0..<13 { try terminal.press("Down") }
            try terminal.press("Enter")
            try await waitUntil("ncmpcpp found the song", timeout: .seconds(20), interval: .milliseconds(100)) {
                let screen = terminal.screen()
                return screen.contains("Found 1 song") && screen.contains("Wyatt - Sea Song")
            }
            // The media library (list artist, list album, find): the artist, its song without an album.
            try terminal.press("4")
            try await waitUntil("ncmpcpp's media library shows the song", timeout: .seconds(20),
                                interval: .milliseconds(100)) {
                let screen = terminal.screen()
                return screen.contains("Media library") && screen.contains("Wyatt") && screen.contains("Sea Song")
            }
            // Enter on the song (the Songs column) adds it to the queue and plays it: the user's play of that track.
            try terminal.press("Right")
            try terminal.press("Right")
            try terminal.press("Enter")
            let added = try await harness.waitForStatus(of: service, "playing the song ncmpcpp added") {
                $0.trackCount == 3 && $0.trackIndex == 2 && $0.playback == "playing"
            }
            #expect(added.pauseReason == nil, "\(added)")
            try await waitUntil("ncmpcpp says it added the song", timeout: .seconds(20), interval: .milliseconds(100)) {
                terminal.screen().contains("Added to playlist: Wyatt - Sea Song")
            }
        }
    }
}
