// `earshot serve` as a desktop service (issue 5), end to end: driven by the real playerctl over a private
// session bus, restarted with its state, killed at random moments, refused on a bad configuration or a second
// instance, and never writing the user's titles or file names to its log.
//
// Each test starts its own dbus-daemon, control socket, state and configuration folders and service
// (ServiceHarness). They fail, never skip, when the sound server, dbus-daemon or playerctl is missing.
// Waits for readiness are generous (a shared two-core machine); the outcomes are checked strictly.

import EarshotTestSupport
import Foundation
import SystemSupport
import Testing

@Suite("earshot serve", .serialized)
struct ServiceTests {
    /// The ID3 title of the first track of the playerctl session; it must never reach the log.
    static let firstTitle = "Secret Title Zebra"
    /// The ID3 title of the second track of the playerctl session.
    static let secondTitle = "Secret Title Narwhal"
    /// The artist of both titled tracks.
    static let artist = "Artist Okapi"
    /// The file name the first track is queued under; it must never reach the log.
    static let firstFileName = "private-name-quokka.mp3"
    /// The file name the second track is queued under.
    static let secondFileName = "private-name-numbat.mp3"

    @Test("playerctl lists, toggles, pauses idempotently, skips, reads title and position, and sets the volume")
    func playerctlDrivesEarshot() async throws {
        let seen = try await PlayerctlSession.observations()
        #expect(seen.listedPlayers.contains("earshot"), "playerctl -l listed \(seen.listedPlayers)")
        #expect(seen.statusAfterAdd == "Stopped")
        #expect(seen.statusAfterFirstPlayPause == "Playing")
        #expect(seen.firstTitle == Self.firstTitle)
        #expect(seen.statusAfterSecondPlayPause == "Paused")
        #expect(seen.statusesAfterPauses == ["Paused", "Paused"], "pause must never toggle")
        #expect(seen.serviceStatusAfterPauses == "paused")
        #expect(seen.statusAfterPlay == "Playing")
        #expect(seen.titleAfterNext == Self.secondTitle)
        #expect(seen.statusAfterNext == "Playing")
        let playing = seen.positionsWhilePlaying[1] - seen.positionsWhilePlaying[0]
        // At least a quarter of real time: a loaded machine may stall the start briefly; a paused player moves 0.
        #expect(playing >= 0.25 && playing <= seen.playingInterval + 0.3,
                "position while playing went \(seen.positionsWhilePlaying) over \(seen.playingInterval) s")
        let paused = seen.positionsWhilePaused[1] - seen.positionsWhilePaused[0]
        #expect(abs(paused) <= 0.05, "position while paused went \(seen.positionsWhilePaused)")
        #expect(seen.streamVolumePercents == [50], "our sink-inputs' volumes after `volume 0.5`")
        #expect(seen.statusVolume == 50)
        #expect(seen.exitStatus == 0, "earshot serve after SIGTERM")
        print("playerctl session: the second track was heard \(seen.secondsUntilHeardAfterNext) s after `next`")
    }

    @Test("the service's log over the playerctl session names no title and no file")
    func logKeepsUserContentPrivate() async throws {
        let seen = try await PlayerctlSession.observations()
        let log = seen.serviceStandardError
        // The log exists (so an empty capture cannot pass for a private one).
        #expect(log.contains("event "), "service stderr: \(log)")
        for secret in [Self.firstTitle, Self.secondTitle, Self.artist, "quokka", "numbat", seen.musicFolder] {
            #expect(!log.contains(secret), "the service's stderr contains \"\(secret)\":\n\(log)")
        }
    }

    @Test("a restart restores the queue paused at the saved position, and resume continues there")
    func restartKeepsState() async throws {
        try await ServiceHarness.run { harness in
            let track = try Fixtures.positionTrack(seconds: Fixtures.longestPositionTrack)
            let other = try Fixtures.titledTrack(title: "Second", artist: "Queue", seconds: 3)
            var service = try await harness.startService()
            try harness.earshotChecked(["play", track.path])
            try harness.earshotChecked(["add", other.path])
            let queueBefore = try harness.earshotChecked(["queue"]).standardOutput
            try harness.earshotChecked(["seek", "30"])
            var heard: EarshotStatus?
            try await waitUntil("the position is about 30 s while playing", timeout: .seconds(15)) {
                let status = try harness.status()
                heard = status
                return status.playback == "playing" && (30_000..<31_000).contains(status.positionMs)
            }
            let exitStatus = await harness.stopService(service)
            #expect(exitStatus == 0, "earshot serve after SIGTERM: \(service.standardError())")
            let lastHeard = try #require(heard)

            service = try await harness.startService()
            let restored = try harness.status()
            #expect(restored.playback == "paused", "after restart: \(restored)")
            #expect(restored.pauseReason == "restored", "after restart: \(restored)")
            #expect(restored.trackIndex == lastHeard.trackIndex)
            #expect(restored.trackCount == 2)
            #expect(abs(restored.positionMs - 30_000) <= 1_000, "restored at \(restored.positionMs) ms")
            #expect(try harness.earshotChecked(["queue"]).standardOutput == queueBefore)
            // Restored, the service holds no stream until a play asks for one (rule 12; the decoder starting the
            // restored track used to open one on its own).
            for _ in 0..<10 {
                #expect(try !harness.status().streamOpen, "a stream the rules never asked for")
                try await Task.sleep(for: .milliseconds(100))
            }

            let resumed = ContinuousClock.now
            try harness.earshotChecked(["resume"])
            #expect(try await harness.settle("playing") { try harness.status().playback } == "playing")
            // It continues from the restored position: once it has played half a second, it is that far past it,
            // never back at 0 and never further than the time since the resume. How soon it starts depends on the
            // machine's load, so that is waited for generously.
            var continued = restored
            try await waitUntil(
                "the position moves on from the restored one", timeout: .seconds(15), interval: .milliseconds(50)
            ) {
                continued = try harness.status()
                return continued.positionMs >= restored.positionMs + 500 || continued.trackIndex != restored.trackIndex
            }
            let elapsed = Int((ContinuousClock.now - resumed).seconds * 1000)
            #expect(continued.trackIndex == restored.trackIndex)
            #expect(continued.playback == "playing")
            #expect(continued.positionMs <= restored.positionMs + elapsed + 300,
                    "position went from \(restored.positionMs) to \(continued.positionMs) ms in \(elapsed) ms")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("kill -9 at 100 random moments while playing, seeking and adding: the state file always reads, little lost")
    func killNineKeepsStateReadable() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let extra = try Fixtures.titledTrack(title: "Extra", artist: "Queue", seconds: 3)
            // The headphones are recorded throughout: what was heard at each kill is read from the sweep.
            let recorder = try await MonitorRecorder.start(sink: TestEnvironment.headphones)
            var kills: [KillRound] = []
            let started = ContinuousClock.now
            do {
                for round in 1...Self.killRounds {
                    kills.append(try await Self.killRound(round, harness: harness, track: track, extra: extra))
                }
            } catch {
                _ = try? await recorder.stop()
                throw error
            }
            let recording = try await recorder.stop()
            let elapsed = ContinuousClock.now - started

            // A hundred killed clients left nothing behind on the server.
            try await waitUntil("the killed services' streams are gone", timeout: .seconds(15)) {
                try ServerControl.sinkInputs().isEmpty
            }

            // One more start: the state of the last kill loads, without being set aside.
            let last = try await harness.startService()
            #expect(try harness.status().pauseReason == "restored")
            #expect(await harness.stopService(last) == 0)
            #expect(!last.standardError().contains("could not be read"), "\(last.standardError())")
            try Self.checkStateFolder(harness, round: Self.killRounds + 1, delay: 0)

            // What each kill lost: the position heard on the headphones at the kill (while the track played
            // steadily: not just after a seek, and heard at all) against the position saved.
            var losses: [(round: Int, milliseconds: Int)] = []
            for kill in kills where kill.steady && kill.saved.trackIndex == 0 {
                let time = recording.time(of: kill.instant) - 0.015
                guard time > 0.1, time < recording.duration - 0.1,
                      let heard = recording.sweepPosition(atTime: time, positions: 0.3...Fixtures.longestPositionTrack)
                else { continue }
                let lost = Int((heard * 1000).rounded()) - kill.saved.positionMs
                losses.append((kill.round, lost))
                // Saved is what was heard, never ahead of it; and it is at most one save interval behind.
                #expect(lost >= -Self.positionTolerance,
                        "round \(kill.round): saved \(kill.saved.positionMs) ms, heard \(Int(heard * 1000)) ms")
                #expect(lost <= Self.saveInterval + Self.positionTolerance,
                        "round \(kill.round) (quiet \(kill.quietMilliseconds) ms): lost \(lost) ms")
            }
            let quietest = kills.map(\.quietMilliseconds).max() ?? 0
            #expect(losses.count >= Self.killRounds / 4, "only \(losses.count) kills could be measured: \(kills)")
            #expect(quietest > Self.saveInterval, "no kill came more than a save interval after the last request")
            let worst = losses.max { $0.milliseconds < $1.milliseconds }
            // The kills after a quiet stretch near or past a save interval: round, ms quiet, ms lost.
            let long = kills.filter { $0.quietMilliseconds > Self.saveInterval - 500 }.map { kill in
                let lost = losses.first { $0.round == kill.round }.map { "\($0.milliseconds)" } ?? "-"
                return "#\(kill.round) \(kill.quietMilliseconds)/\(lost)"
            }
            let phaseTotals = kills.reduce([Duration](repeating: .zero, count: 4)) { totals, kill in
                zip(totals, kill.phases).map { $0 + $1 }
            }
            let most = worst.map { "\($0.milliseconds) ms (round \($0.round))" } ?? "none"
            print("kill -9: \(kills.count) kills in \(String(format: "%.1f", elapsed.seconds)) s; loss measured at "
                + "\(losses.count), the most \(most); quiet/lost ms after long quiet stretches: \(long); "
                + "time spent starting, sending requests, quiet, exiting (s): "
                + "\(phaseTotals.map { String(format: "%.1f", $0.seconds) })")
            report("kill -9 x\(kills.count)", elapsed.seconds * 1000)
        }
    }

    /// How many times the kill test kills the service.
    private static let killRounds = 100
    /// How often a playing service saves its position, in milliseconds (Player: "a kill loses at most 2 s").
    private static let saveInterval = 2_000
    /// How far the heard position read off the recording may be from the truth: the monitor's timing, the
    /// analysis window, and a late tick on a loaded machine.
    private static let positionTolerance = 250

    /// One kill of the kill test: when, after how long a quiet stretch, and what the state file held afterwards.
    struct KillRound: CustomStringConvertible {
        /// The round's number.
        let round: Int
        /// When SIGKILL was sent.
        let instant: ContinuousClock.Instant
        /// From the resume to the kill, in milliseconds.
        let delayMilliseconds: Int
        /// From the last request answered to the kill, in milliseconds.
        let quietMilliseconds: Int
        /// Whether the track had been playing on without a seek for a while at the kill.
        let steady: Bool
        /// What the state file held after the kill.
        let saved: (trackIndex: Int, positionMs: Int)
        /// How long the round's phases took: start and resume, requests, quiet, the kill until the exit.
        let phases: [Duration]

        /// For failure messages.
        var description: String {
            "#\(round) after \(delayMilliseconds) ms (quiet \(quietMilliseconds)): track \(saved.trackIndex) at "
                + "\(saved.positionMs) ms\(steady ? "" : ", seeking")"
        }
    }

    /// One round: starts the service (which restores the last round's state), resumes, sends seeks, adds and
    /// volume changes on the socket for a random while, stays quiet for a random while (now and then longer than
    /// a save interval), then kills it with SIGKILL and checks the state folder.
    private static func killRound(
        _ round: Int, harness: ServiceHarness, track: URL, extra: URL
    ) async throws -> KillRound {
        let queuedBefore = try savedQueueCount(harness)
        let starting = ContinuousClock.now
        let service = try await harness.startService()
        if round == 1 {
            try harness.requestChecked(["command": "load", "paths": [track.path], "play": true])
        } else {
            let restored = try harness.socketStatus()
            #expect(restored.playback == "paused" && restored.pauseReason == "restored",
                    "round \(round) after kill -9: \(restored); log:\n\(service.standardError())")
            #expect(restored.trackCount == queuedBefore, "round \(round): restored \(restored)")
            // Far into the track, seek back, so that it never runs out into the extra tracks.
            if restored.trackIndex == 0 && restored.positionMs > 40_000 {
                try harness.requestChecked(["command": "seek", "seconds": Double.random(in: 1..<30)])
            }
            try harness.requestChecked(["command": "play"])
        }
        let resumed = ContinuousClock.now
        // Requests keep the service saving while it may be killed. Volumes stay loud enough to read the sweep.
        var lastSeek = resumed - .seconds(10)
        // One add at most per round keeps the queue (and so each save) small.
        var added = false
        let storm = ContinuousClock.now + .milliseconds(Int.random(in: 0...250))
        while ContinuousClock.now < storm {
            switch Int.random(in: 0..<8) {
            case 0..<4:
                try harness.requestChecked(["command": "seek", "seconds": Double.random(in: 1..<40)])
                lastSeek = .now
            case 4 where !added:
                try harness.requestChecked(["command": "add", "paths": [extra.path]])
                added = true
            default: try harness.requestChecked(["command": "volume", "percent": Int.random(in: 75...100)])
            }
        }
        let quietFrom = ContinuousClock.now
        // One round in sixteen stays quiet for about a save interval, so that the kill finds what the periodic
        // save wrote (or, were it missing, a loss of more than the interval).
        let quiet = round % 16 == 8 ? Int.random(in: 1_800...2_800) : Int.random(in: 0...250)
        try await Task.sleep(for: .milliseconds(quiet))
        let instant = ContinuousClock.now
        service.kill()
        #expect(await service.exit(within: .seconds(10)), "round \(round): earshot serve survived SIGKILL")
        let phases = [resumed - starting, quietFrom - resumed, instant - quietFrom, ContinuousClock.now - instant]
        let delay = Int((instant - resumed).seconds * 1000)
        #expect(!service.standardError().contains("could not be read"),
                "round \(round): the service found a corrupt state file: \(service.standardError())")
        try checkStateFolder(harness, round: round, delay: delay)
        return KillRound(
            round: round, instant: instant, delayMilliseconds: delay,
            quietMilliseconds: Int((instant - quietFrom).seconds * 1000),
            steady: instant - lastSeek >= .milliseconds(150), saved: try savedPosition(harness), phases: phases)
    }

    @Test("a configuration file with an unknown key or a wrong type stops the service with exit 78, naming the key")
    func configurationErrorsRefuseToStart() async throws {
        try await ServiceHarness.run { harness in
            let cases = [
                ("{\"resumeAfterInterruption\": true, \"shuffleEverything\": 1}", "shuffleEverything"),
                ("{\"resumeAfterInterruption\": \"yes\"}", "resumeAfterInterruption"),
                ("{\"fadeMs\": 5000}", "fadeMs"),
                ("{\"duckLevel\": 6}", "duckLevel"),
            ]
            for (contents, key) in cases {
                try harness.writeConfiguration(contents)
                let service = try harness.spawnService()
                let exited = await service.exit(within: .seconds(20))
                if !exited { service.kill() }
                #expect(exited, "earshot serve started with the configuration \(contents)")
                let errors = service.standardError()
                #expect(service.exitStatus == 78,
                        "config \(contents): exit \(service.exitStatus ?? -1), stderr \(errors)")
                #expect(errors.contains("\"\(key)\""), "config \(contents): stderr does not name the key: \(errors)")
                #expect(errors.contains(harness.configFile.path),
                        "config \(contents): stderr does not name the file: \(errors)")
            }
        }
    }

    @Test("a second earshot serve on the same socket is refused with a clear message")
    func secondInstanceIsRefused() async throws {
        try await ServiceHarness.run { harness in
            let first = try await harness.startService()
            let second = try harness.spawnService()
            let exited = await second.exit(within: .seconds(20))
            if !exited { second.kill() }
            #expect(exited, "the second earshot serve kept running")
            #expect((second.exitStatus ?? 0) != 0, "the second earshot serve exited with \(second.exitStatus ?? 0)")
            #expect(second.standardError().contains("already running"), "stderr: \(second.standardError())")
            // The first one is untouched.
            #expect(first.isRunning)
            #expect(try harness.status().playback == "stopped")
            #expect(await harness.stopService(first) == 0)
        }
    }

    // MARK: Helpers

    /// How many tracks the saved state holds (0 when there is no state file yet).
    private static func savedQueueCount(_ harness: ServiceHarness) throws -> Int {
        guard FileManager.default.fileExists(atPath: harness.stateFile.path) else { return 0 }
        let object = try JSONSerialization.jsonObject(with: try Data(contentsOf: harness.stateFile)) as? [String: Any]
        return (object?["queue"] as? [Any])?.count ?? 0
    }

    /// The track and position a start would restore, read as the service reads them: `position.json`'s when its
    /// queue id is `state.json`'s, else `state.json`'s own.
    private static func savedPosition(_ harness: ServiceHarness) throws -> (trackIndex: Int, positionMs: Int) {
        let state = try JSONSerialization.jsonObject(with: try Data(contentsOf: harness.stateFile)) as? [String: Any]
        var saved = state
        if let data = try? Data(contentsOf: harness.positionFile),
           let position = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           let id = position["queueId"] as? Int, id == state?["queueId"] as? Int {
            saved = position
        }
        return (saved?["trackIndex"] as? Int ?? -1, saved?["positionMilliseconds"] as? Int ?? -1)
    }

    /// Checks that the state folder holds `state.json`, that it parses with every expected key and a
    /// consistent track index, that `position.json`, when there is one, is one whole record, and that anything else
    /// in the folder is an interrupted save's temporary file.
    private static func checkStateFolder(_ harness: ServiceHarness, round: Int, delay: Int) throws {
        let context = "round \(round) (killed after \(delay) ms)"
        let names = try FileManager.default.contentsOfDirectory(atPath: harness.stateDirectory.path)
        #expect(names.contains("state.json"), "\(context): no state.json among \(names)")
        if names.contains("position.json") {
            let data = try Data(contentsOf: harness.positionFile)
            let position = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect(data.count == 256 && position?.count == 5 && position?["queueId"] is Int,
                    "\(context): position.json is not one record: \(String(decoding: data, as: UTF8.self))")
        }
        let strays = names.filter {
            $0 != "state.json" && $0 != "position.json" && !$0.hasPrefix("state.json.tmp-")
        }
        #expect(strays.isEmpty, "\(context): unexpected files in the state folder: \(strays)")
        let data = try Data(contentsOf: harness.stateFile)
        let parsed = try? JSONSerialization.jsonObject(with: data)
        let text = String(decoding: data, as: UTF8.self)
        let object = try #require(parsed as? [String: Any], "\(context): state.json is not a JSON object: \(text)")
        let queue = object["queue"] as? [String]
        let trackIndex = object["trackIndex"] as? Int
        #expect(queue != nil, "\(context): queue is not an array of strings")
        #expect(object["positionMilliseconds"] is Int, "\(context): positionMilliseconds missing")
        #expect(object["volumePercent"] is Int, "\(context): volumePercent missing")
        #expect(object["version"] as? Int == 1, "\(context): version is not 1")
        if let queue, let trackIndex {
            #expect(queue.isEmpty ? trackIndex == 0 : queue.indices.contains(trackIndex),
                    "\(context): track index \(trackIndex) outside a queue of \(queue.count)")
        } else {
            Issue.record("\(context): trackIndex missing")
        }
    }
}

/// What one playerctl session against a private service observed, for the playerctl and the privacy tests.
struct PlayerctlObservations: Sendable {
    /// The lines of `playerctl -l`.
    var listedPlayers: [String] = []
    /// `playerctl status` after `earshot add` of the two tracks.
    var statusAfterAdd = ""
    /// `status` after the first `play-pause`.
    var statusAfterFirstPlayPause = ""
    /// `metadata title` while the first track plays.
    var firstTitle = ""
    /// `status` after the second `play-pause`.
    var statusAfterSecondPlayPause = ""
    /// `status` after each of two `pause` commands.
    var statusesAfterPauses: [String] = []
    /// `earshot status --json`'s playback after the two pauses.
    var serviceStatusAfterPauses = ""
    /// `status` after `play`.
    var statusAfterPlay = ""
    /// `metadata title` after `next`.
    var titleAfterNext = ""
    /// `status` after `next`.
    var statusAfterNext = ""
    /// Two `position` readings while playing.
    var positionsWhilePlaying: [Double] = [0, 0]
    /// The seconds between the two readings while playing.
    var playingInterval = 0.0
    /// The seconds from `next` until the position began to advance (only reported: it depends on the load).
    var secondsUntilHeardAfterNext = 0.0
    /// Two `position` readings about a second apart while paused.
    var positionsWhilePaused: [Double] = [0, 0]
    /// The volumes, in percent, of the service's sink-inputs after `volume 0.5`.
    var streamVolumePercents: [Int] = []
    /// `earshot status --json`'s volume after `volume 0.5`.
    var statusVolume = -1
    /// The service's exit status after SIGTERM.
    var exitStatus: Int32 = -1
    /// Everything the service wrote to standard error, from start to exit.
    var serviceStandardError = ""
    /// The folder holding the distinctively named files.
    var musicFolder = ""
}

/// Runs the playerctl session once per test process and shares what it observed.
enum PlayerctlSession {
    /// The one run, started by whichever test asks first.
    private static let run = LockedValue<Task<PlayerctlObservations, any Error>?>(nil)

    /// What the session observed (running it if no test has yet).
    static func observations() async throws -> PlayerctlObservations {
        let task = run.withLock { task in
            if let task { return task }
            let started = Task { try await session() }
            task = started
            return started
        }
        return try await task.value
    }

    /// Drives a private service through playerctl and records every answer; throws only when the setup fails.
    private static func session() async throws -> PlayerctlObservations {
        try await ServiceHarness.run { harness in
            var seen = PlayerctlObservations()
            let music = harness.root.appendingPathComponent("music", isDirectory: true)
            seen.musicFolder = music.path
            let first = try Fixtures.copy(
                try Fixtures.titledTrack(title: ServiceTests.firstTitle, artist: ServiceTests.artist, seconds: 20),
                to: music, named: ServiceTests.firstFileName)
            let second = try Fixtures.copy(
                try Fixtures.titledTrack(
                    title: ServiceTests.secondTitle, artist: ServiceTests.artist, seconds: 20, frequency: 550),
                to: music, named: ServiceTests.secondFileName)

            let service = try await harness.startService(waitForMPRIS: true)
            seen.listedPlayers = try harness.playerctl(["-l"]).requireSuccess().standardOutput.trimmed
                .components(separatedBy: "\n")
            func status(settlingOn expected: String) async throws -> String {
                try await harness.settle(expected) { try harness.playerctlEarshot(["status"]) }
            }

            try harness.earshotChecked(["add", first.path, second.path])
            seen.statusAfterAdd = try await status(settlingOn: "Stopped")

            try harness.playerctlEarshot(["play-pause"])
            seen.statusAfterFirstPlayPause = try await status(settlingOn: "Playing")
            // Until the decoder has opened the track there is no title yet, and playerctl fails ("No player could
            // handle this command"): that is an answer to wait past, not an error.
            seen.firstTitle = try await harness.settle(ServiceTests.firstTitle) {
                (try? harness.playerctlEarshot(["metadata", "title"])) ?? ""
            }
            try harness.playerctlEarshot(["play-pause"])
            seen.statusAfterSecondPlayPause = try await status(settlingOn: "Paused")

            for _ in 0..<2 {
                try harness.playerctlEarshot(["pause"])
                // A toggle would show up as Playing within this time; give it the chance to.
                try await Task.sleep(for: .milliseconds(300))
                seen.statusesAfterPauses.append(try harness.playerctlEarshot(["status"]))
            }
            seen.serviceStatusAfterPauses = try harness.status().playback

            try harness.playerctlEarshot(["play"])
            seen.statusAfterPlay = try await status(settlingOn: "Playing")

            try harness.playerctlEarshot(["next"])
            seen.titleAfterNext = try await harness.settle(ServiceTests.secondTitle) {
                (try? harness.playerctlEarshot(["metadata", "title"])) ?? ""
            }
            seen.statusAfterNext = try await status(settlingOn: "Playing")

            // On a loaded machine the new track may take a while to be heard: wait until it is, then sample the
            // position about a second apart.
            let skipped = ContinuousClock.now
            do {
                try await waitUntil(
                    "the position advances after `next`", timeout: .seconds(15), interval: .milliseconds(50)
                ) {
                    try position(harness) > 0.05
                }
            } catch {
                throw ToolkitError("\(error); status: \((try? harness.status()).map { "\($0)" } ?? "none"); "
                    + "service log:\n\(service.standardError())")
            }
            seen.secondsUntilHeardAfterNext = (ContinuousClock.now - skipped).seconds
            let playingStart = ContinuousClock.now
            let early = try position(harness)
            try await Task.sleep(for: .seconds(1))
            let late = try position(harness)
            seen.playingInterval = (ContinuousClock.now - playingStart).seconds
            seen.positionsWhilePlaying = [early, late]

            try harness.playerctlEarshot(["pause"])
            _ = try await status(settlingOn: "Paused")
            try await Task.sleep(for: .milliseconds(300))
            let pausedEarly = try position(harness)
            try await Task.sleep(for: .seconds(1))
            seen.positionsWhilePaused = [pausedEarly, try position(harness)]

            try harness.playerctlEarshot(["volume", "0.5"])
            let streamVolumes = {
                try ServerControl.sinkInputs(ofProcess: service.processIdentifier)
                    .filter { $0.applicationName == "Earshot" }.compactMap(\.volumePercent)
            }
            seen.streamVolumePercents = try await harness.settle([50], streamVolumes)
            seen.statusVolume = try harness.status().volume

            seen.exitStatus = await harness.stopService(service)
            seen.serviceStandardError = service.standardError()
            return seen
        }
    }

    /// `playerctl -p earshot position`, in seconds.
    private static func position(_ harness: ServiceHarness) throws -> Double {
        let text = try harness.playerctlEarshot(["position"])
        guard let seconds = Double(text) else { throw ToolkitError("playerctl position printed \(text)") }
        return seconds
    }
}
