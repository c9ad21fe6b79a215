// Internet radio from a real Icecast2 (issue 40, "Tests with a real server"): Debian's icecast2 on the loopback, fed by
// GStreamer's shout2send with a 128 kbit/s MP3 of the position sweep (IcecastServer.swift). `earshot serve` plays the
// mount and the sweep is heard on the monitor, advancing as the show does; the station's name and titles reach status
// and MPRIS as the station's admin changes them; the source leaving ends the stream and the queue goes on; a mount
// that does not exist and a gigabyte ICY metadata claim are each a track given up with its reason while the service
// plays on; the server killed mid-show is reconnected to, quiet with its reason once the buffer ran dry, and given up
// when it stays away (`reconnects`, with an MP3 and an Ogg Vorbis mount: back, the show resumes by itself, the Ogg
// stream's decoder opened afresh on the new connection's stream); a station with no burst on connecting plays
// from the live edge, also when started over a playing file (its prebuffer is no stall). A page
// instead of audio and a server that sends nothing are RadioTests'.
// Only loopback addresses; each wait is bounded.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Icecast", .serialized)
struct IcecastTests {
    /// The show's length: the longest position sweep, longer than any test here listens.
    static let showSeconds = Fixtures.longestPositionTrack
    /// The station's name, as the source sends it (icy-name).
    static let station = "Earshot Loopback Icecast"

    /// Stops `recorder` once it has recorded the present, and checks that the show heard 2 s and 1 s before now moved
    /// on by one second; returns those two positions (nil, recorded as an issue, when the sweep was not heard).
    private static func expectShowAdvancing(_ recorder: MonitorRecorder, _ label: String) async throws
        -> (Double, Double)?
    {
        let heardUntil = ContinuousClock.now
        try await recorder.waitUntilRecorded(past: heardUntil)
        let recording = try await recorder.stop()
        let end = recording.time(of: heardUntil)
        let positions = [end - 2.0, end - 1.0].map { recording.trackPosition(atTime: $0, window: 0.05) }
        print("[icecast] show positions heard 2 s and 1 s before now, \(label): \(positions)")
        guard let first = positions[0], let second = positions[1] else {
            Issue.record("the sweep was not heard on the monitor, \(label): \(positions)")
            return nil
        }
        #expect(abs(second - first - 1.0) < 0.1, "the show did not advance 1 s in 1 s, \(label): \(positions)")
        return (first, second)
    }

    @Test("an Icecast mount is heard, its name and titles reach status and MPRIS, and the source leaving moves on")
    func playsMount() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        try await ServiceHarness.run { harness in
            let show = try IcecastServer.positionShow(seconds: Self.showSeconds)
            let source = try await icecast.feed("/show.mp3", from: show, name: Self.station, artist: "Loopback",
                                                title: "Show One")
            defer { source.kill() }
            let after = try Fixtures.tone(.mp3, frequency: 660, seconds: 30)
            let service = try await harness.startService(waitForMPRIS: true)
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            let url = icecast.baseURL + "/show.mp3"
            try harness.earshotChecked(["add", url, after.path])
            try harness.earshotChecked(["play"])
            let playing = try await harness.waitForStatus(of: service, "3 s of the mount heard") {
                $0.trackIndex == 0 && $0.playback == "playing" && $0.positionMs >= 3000
            }
            #expect(playing.lastError == nil && playing.station == Self.station, "\(playing)")
            try await waitUntil("MPRIS shows the source's first title", timeout: .seconds(20)) {
                (try? harness.playerctlEarshot(["metadata", "title"])) == "Loopback - Show One"
            }
            #expect(try harness.playerctlEarshot(["metadata", "album"]) == Self.station)
            #expect(try harness.playerctlEarshot(["metadata", "xesam:url"]) == url)
            // The station's playout changes the title: icecast2 sends it in the next ICY block.
            try icecast.setTitle("Loopback - Show Two", of: "/show.mp3")
            try await waitUntil("MPRIS follows the title update", timeout: .seconds(20)) {
                (try? harness.playerctlEarshot(["metadata", "title"])) == "Loopback - Show Two"
            }
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("station: \(Self.station)") && text.contains("now: Loopback - Show Two"), "\(text)")

            // What was heard is the show: the sweep, moving on at one second a second.
            if let (first, second) = try await Self.expectShowAdvancing(recorder, "before the title check") {
                #expect(first > 0 && second < Self.showSeconds, "\(first), \(second)")
            }

            // The source leaves: icecast2 closes the mount, the buffered rest plays, and the next track follows.
            _ = await source.terminate()
            let next = try await harness.waitForStatus(of: service, "the next track after the source left",
                                                       timeout: .seconds(30)) {
                $0.trackIndex == 1 && $0.playback == "playing"
            }
            #expect(next.lastError == nil && next.station == nil && next.streamTitle == nil, "\(next)")
            // The log names kinds, never the station's titles or address.
            let log = service.standardError()
            #expect(!log.contains("Show One") && !log.contains("Show Two") && !log.contains(Self.station)
                        && !log.contains("127.0.0.1:\(icecast.port)"), "\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("a missing mount and a gigabyte ICY claim are skipped with a reason; a server kept away is given up")
    func refusalsAndFaults() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        try await ServiceHarness.run { harness in
            let after = try Fixtures.tone(.mp3, frequency: 660, seconds: 30)
            try harness.writeConfiguration(#"{"radioReconnectMinutes": 0.25}"#)
            let service = try await harness.startService()

            // A mount nobody feeds: icecast2 answers 404.
            try harness.earshotChecked(["play", icecast.baseURL + "/nobody.mp3", after.path])
            let missing = try await harness.waitForStatus(of: service, "the missing mount skipped") {
                $0.trackIndex == 1 && $0.playback == "playing" && $0.lastError?.trackIndex == 0
            }
            #expect(missing.lastError?.kind != nil, "\(missing)")
            #expect(service.standardError().contains("HTTP status 404"),
                    "icecast2 running: \(icecast.process.isRunning), its log: \(icecast.errorLog())")

            // The server killed while the show plays, and kept away (rows 38-41): the rules reconnect with their
            // backoff, the buffer plays out, the player goes quiet with the reason, and past `radioReconnectMinutes`
            // (0.25 here: 15 s) it gives up and says so. Nothing is skipped: the station stays the current track.
            let show = try IcecastServer.positionShow(seconds: Self.showSeconds)
            let source = try await icecast.feed("/show.mp3", from: show, name: Self.station, artist: "Loopback",
                                                title: "Show One")
            defer { source.kill() }
            try harness.earshotChecked(["play", icecast.baseURL + "/show.mp3", after.path])
            let beforeKill = try await harness.waitForStatus(of: service, "2 s of the mount heard") {
                $0.trackIndex == 0 && $0.playback == "playing" && $0.positionMs >= 2000
            }
            icecast.process.kill()
            var furthest = beforeKill.positionMs
            var quiet: EarshotStatus?
            let gaveUp = try await harness.waitForStatus(of: service, "the reconnection given up",
                                                         timeout: .seconds(60)) {
                if $0.trackIndex == 0 && $0.playback == "playing" { furthest = max(furthest, $0.positionMs) }
                if $0.pauseReason == "networkLost" && quiet == nil { quiet = $0 }
                return $0.liveNetwork == "gaveUp" || $0.trackIndex != 0
            }
            print("[icecast] killed at \(beforeKill.positionMs) ms into the show, heard until \(furthest) ms; "
                  + "quiet: \(quiet.map(String.init(describing:)) ?? "never"); then \(gaveUp)")
            #expect(gaveUp.trackIndex == 0 && gaveUp.playback == "paused" && gaveUp.pauseReason == "networkLost"
                        && gaveUp.corked, "\(gaveUp)")
            #expect(quiet?.liveNetwork != nil, "quiet with the network lost: \(String(describing: quiet))")
            // The buffer played on after the kill (icecast2's burst on connecting is 4 s ahead of playback).
            #expect(furthest >= beforeKill.positionMs + 1000,
                    "killed at \(beforeKill.positionMs) ms, heard until \(furthest) ms")
            // No new failure: the 404's is still the last, and it is the only skip so far.
            #expect(gaveUp.lastError == missing.lastError, "\(gaveUp)")
            #expect(service.standardError().components(separatedBy: "skipped: ").count == 2,
                    "\(service.standardError())")
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("paused (networkLost)") && text.contains("gave up"), "\(text)")

            // A server that claims a gigabyte of audio between titles, then sends audio: refused at its first bytes.
            let mp3 = try [UInt8](Data(contentsOf: after))
            let claim = try LoopbackHTTPServer { connection in
                connection.send("ICY 200 OK\r\nContent-Type: audio/mpeg\r\nicy-metaint: 1073741824\r\n\r\n")
                connection.send(Array(mp3.prefix(16_384)))
                connection.holdSilently()
            }
            defer { claim.stop() }
            try harness.earshotChecked(["play", claim.baseURL + "/claim", after.path])
            try await waitUntil("the gigabyte claim refused", timeout: .seconds(20)) {
                service.standardError().contains("ICY metadata interval out of range")
            }
            let claimed = try await harness.waitForStatus(of: service, "the next track after the claim") {
                $0.trackIndex == 1 && $0.playback == "playing"
            }
            #expect(claimed.lastError?.trackIndex == 0 && claimed.lastError?.kind != nil, "\(claimed)")

            #expect(service.isRunning)
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("the server killed and back a few seconds later: quiet with the reason, then the show resumes by itself",
          arguments: [Fixtures.Format.mp3, .vorbis])
    func reconnects(format: Fixtures.Format) async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        try await ServiceHarness.run { harness in
            // The restarted source sends the show from its start: in Ogg, a new stream with its own headers, which
            // the decoder opens afresh where the new connection's bytes begin.
            let show = try IcecastServer.positionShow(seconds: Self.showSeconds, format: format)
            let mount = "/show." + format.fileExtension
            var source = try await icecast.feed(mount, from: show, name: Self.station, artist: "Loopback",
                                                title: "Show One")
            defer { source.kill() }
            let service = try await harness.startService()
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            try harness.earshotChecked(["play", icecast.baseURL + mount])
            try await harness.waitForStatus(of: service, "2 s of the mount heard") {
                $0.trackIndex == 0 && $0.playback == "playing" && $0.positionMs >= 2000
            }
            icecast.process.kill()
            source.kill()
            // The buffer plays out, then the player is quiet, corked, with its reason, while the rules try again.
            let quiet = try await harness.waitForStatus(of: service, "quiet for the network", timeout: .seconds(60)) {
                $0.pauseReason == "networkLost" && $0.corked || $0.trackIndex != 0
            }
            #expect(quiet.trackIndex == 0 && quiet.playback == "paused" && quiet.liveNetwork != nil, "\(quiet)")
            let text = try harness.earshotChecked(["status"]).standardOutput
            #expect(text.contains("paused (networkLost)") && text.contains("network: connection lost"), "\(text)")
            // The server comes back and its source with it: the next attempt (at most 30 s later) finds the show.
            try await icecast.restart()
            source = try await icecast.feed(mount, from: show, name: Self.station, artist: "Loopback",
                                            title: "Show One")
            let resumed = try await harness.waitForStatus(of: service, "the show resumed by itself",
                                                          timeout: .seconds(90)) {
                $0.playback == "playing" && !$0.corked && $0.liveNetwork == nil
                    && $0.positionMs >= quiet.positionMs + 2000
                    || $0.trackIndex != 0
            }
            #expect(resumed.trackIndex == 0 && resumed.lastError == nil, "\(resumed)")
            // What is heard after the resume is the new connection's show, moving on at one second a second.
            try await harness.waitForStatus(of: service, "2.5 s more of the show") {
                $0.positionMs >= resumed.positionMs + 2500 || $0.playback != "playing"
            }
            _ = try await Self.expectShowAdvancing(recorder, "\(format) after the resume")
            let log = service.standardError()
            #expect(log.contains("connection=lost") && log.contains("connection=reconnected"), "\(log)")
            #expect(!log.contains("127.0.0.1:\(icecast.port)"), "\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("a station with no burst on connecting plays from the live edge, also started over a playing file")
    func liveEdgeStation() async throws {
        // icecast2's burst turned off, as some stations have it: the listener gets the show at its own pace only.
        let icecast = try await IcecastServer.start(burstBytes: 0)
        defer { icecast.stop() }
        try await ServiceHarness.run { harness in
            let show = try IcecastServer.positionShow(seconds: Self.showSeconds, bitRate: 64)
            let source = try await icecast.feed("/edge.mp3", from: show, name: Self.station, artist: "Loopback",
                                                title: "Edge")
            defer { source.kill() }
            let file = try Fixtures.tone(.mp3, frequency: 660, seconds: 30)
            let url = icecast.baseURL + "/edge.mp3"
            let service = try await harness.startService()
            // From stopped: the output opens once the decoder's prebuffer (48 KiB, 6 s at 64 kbit/s) is in.
            try harness.earshotChecked(["play", url])
            let heard = try await harness.waitForStatus(of: service, "5 s of the live edge heard",
                                                        timeout: .seconds(30)) {
                $0.trackIndex == 0 && $0.positionMs >= 5000 || $0.playback != "playing"
            }
            #expect(heard.playback == "playing" && heard.positionMs >= 5000 && heard.lastError == nil, "\(heard)")
            // From a file that plays: the output is running while the station's prebuffer comes in.
            try harness.earshotChecked(["play", file.path])
            try await harness.waitForStatus(of: service, "the file heard") {
                $0.playback == "playing" && $0.positionMs >= 1000
            }
            try harness.earshotChecked(["play", url])
            // The output hears nothing for the 6 s of the prebuffer: the flushed stream waits for its refill, and
            // the stall watchdog counts the server's silence only from there (it used to count it from the request
            // left unanswered at the flush, and paused the station as `outputLost (stalled)`).
            let switched = try await harness.waitForStatus(of: service, "5 s of the station after the file",
                                                           timeout: .seconds(30)) {
                $0.trackIndex == 0 && $0.positionMs >= 5000 || $0.playback != "playing"
            }
            #expect(switched.playback == "playing" && switched.positionMs >= 5000 && switched.lastError == nil,
                    "\(switched)")
            #expect(!service.standardError().contains("watchdog=stalled"), "\(service.standardError())")
            #expect(service.isRunning)
            #expect(await harness.stopService(service) == 0)
        }
    }
}
