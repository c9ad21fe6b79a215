// ncmpcpp in tmux drives Earshot end to end (issue 37): its playlist screen shows the queue Earshot holds, Enter on a
// track plays it (MPD's `playid`, the rules' chosen track) and its pause key pauses (the user's pause), each checked on
// Earshot's own status and on the screen tmux captures. A missing ncmpcpp or tmux is a failure (scripts/test installs
// them).
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

    @Test("ncmpcpp's playlist shows the queue; Enter plays the chosen track, its pause key pauses, as Earshot says")
    func ncmpcppDrivesEarshot() async throws {
        _ = try ProcessRunner.requireTool("ncmpcpp", package: "ncmpcpp")
        _ = try ProcessRunner.requireTool("tmux", package: "tmux")
        try await MPDClientTests.withPlayingService { harness, service, port, _ in
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
        }
    }
}
