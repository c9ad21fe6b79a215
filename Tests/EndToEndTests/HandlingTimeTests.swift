// How long the player's serial owner takes to handle one input (issue 21), end to end, when the decoder is slow. The
// owner hands the decoder its new work and returns: neither a decoder stuck opening a file nor one whose track carries
// an 8 MiB cover picture may show in the answers to `next`, `seek` and `status`, nor in `slowestHandlingMicros`.
//
// The slow input is real: a write lease on the next track (`FileLease`) makes the decoder's open(2) block in the
// kernel until the test lets go, as a network share that hangs would. Before the decoder stopped being waited for, the
// owner sat in `DecodeWorker.pauseProduction` for the whole of it: `next` was answered only when the lease went
// (after 6 s here) and `slowestHandlingMicros` said as much.
//
// The bounds: a handling slower than 1 s fails. The owner's own work for one input is well under a millisecond (the
// values are reported), but on a two-core machine loaded fifteen deep one handling of a seek was seen to take 77 ms
// (its thread, nice -15, kept off the CPU), so the bound is set by what it must catch, not by what is usual: waiting
// for the decoder took 5.6 s (a stuck open) and 3.9 s (storing an 8 MiB picture, 1.5 s of it hashing in a debug
// build) on the old code. A request's whole round trip (a client connecting, the
// control server's thread, the reply) may take 2 s before it fails.
//
// The state files go to the real disk: the owner hands them to the storage writer's thread, which does every write and
// fsync, so a slow disk does not show here either.

import Foundation
import Testing
import EarshotTestSupport

@Suite("earshot serve: the owner never waits for the decoder", .serialized)
struct HandlingTimeTests {
    /// The slowest handling of one input allowed, in microseconds.
    static let handlingBound = 1_000_000
    /// The longest round trip allowed for one control request.
    static let roundTripBound = Duration.seconds(2)

    @Test("a decoder stuck opening the next track holds up neither next, seek nor status; then it plays the seek")
    func stuckDecoderHoldsUpNothing() async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let held = try Fixtures.copy(try Fixtures.tone(seconds: 5), to: harness.root, named: "held.mp3")
            // Started first, so that the 6 s below are all the test's: a loaded machine may take seconds to start it.
            let service = try await harness.startService()
            let lease = try FileLease(path: held.path)
            let leaseTaken = ContinuousClock.now
            // Let go after 6 s whatever happens, so that a player that waits for its decoder is held up, not hung.
            let safety = Task.detached {
                try? await Task.sleep(for: .seconds(6))
                lease.release()
            }
            defer {
                lease.release()
                safety.cancel()
            }
            try harness.earshotChecked(["play", held.path, track.path])
            // The decoder opens the held track at once and stays in open(2) until the lease goes.
            try await Task.sleep(for: .milliseconds(300))

            var roundTrips: [(String, Duration)] = []
            func timed(_ fields: [String: Any]) throws -> [String: Any] {
                let started = ContinuousClock.now
                let reply = try harness.request(fields, timeout: .seconds(20))
                roundTrips.append(("\(fields["command"] ?? "")", ContinuousClock.now - started))
                #expect(reply["ok"] as? Bool == true, "\(fields): \(reply)")
                return reply
            }
            for _ in 0..<3 { _ = try timed(["command": "status"]) }
            _ = try timed(["command": "next"])
            _ = try timed(["command": "status"])
            _ = try timed(["command": "seek", "seconds": 20.0])
            for _ in 0..<3 { _ = try timed(["command": "status"]) }
            let whileStuck = try harness.socketStatus()
            // Still within the lease, and nothing decoded yet: no stream could be opened without a format.
            let decoderWasStuck = ContinuousClock.now - leaseTaken < .seconds(6) && whileStuck.trackIndex == 1
                && !whileStuck.streamOpen

            for (command, took) in roundTrips {
                #expect(took < Self.roundTripBound, "`\(command)` took \(took) while the decoder was stuck")
            }
            #expect(decoderWasStuck, "the decoder was not stuck on the held track: \(whileStuck)")
            #expect(whileStuck.slowestHandlingMicros < Self.handlingBound,
                    "slowestHandlingMicros \(whileStuck.slowestHandlingMicros) while the decoder was stuck")

            // Let go: the decoder abandons the held track and plays the second one from the seek.
            lease.release()
            let playing = try await harness.waitForStatus(of: service, "the second track heard past 20.5 s") {
                $0.playback == "playing" && $0.trackIndex == 1 && $0.positionMs >= 20_500
            }
            #expect(playing.positionMs < 28_000, "\(playing)")
            #expect(playing.slowestHandlingMicros < Self.handlingBound, "\(playing)")
            let slowestTrip = roundTrips.map(\.1).max() ?? .zero
            report("slowest request round trip, decoder stuck in open(2)", slowestTrip / .milliseconds(1))
            report("slowest handling of one input, decoder stuck", Double(whileStuck.slowestHandlingMicros) / 1000)
            report("slowest handling of one input, after it played on", Double(playing.slowestHandlingMicros) / 1000)
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("seeks in a track with an 8 MiB cover picture: every one answered at once, the owner never slow")
    func seeksWithALargeCover() async throws {
        try await ServiceHarness.run { harness in
            // Just under the 8 MiB a picture may have (CoverPicture.maximumBytes), so it is read, hashed and stored.
            let picture = Fixtures.fakePicture(count: (8 << 20) - 4_096, seed: 0xB16C)
            let track = try Fixtures.coverTagged(.flac, picture: picture, name: "large-cover.flac",
                                                 title: "Large Cover", albumArtist: "Band", trackNumber: "1",
                                                 seconds: 30)
            let service = try await harness.startService()
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "playing") { $0.playback == "playing" }

            var slowestTrip = Duration.zero
            for second in [12.0, 3.0, 20.0, 7.5, 25.0, 1.0, 15.0, 9.0, 18.0, 5.0] {
                let started = ContinuousClock.now
                let reply = try harness.request(["command": "seek", "seconds": second], timeout: .seconds(20))
                let took = ContinuousClock.now - started
                slowestTrip = max(slowestTrip, took)
                #expect(reply["ok"] as? Bool == true, "seek \(second): \(reply)")
                #expect(took < Self.roundTripBound, "seek \(second) took \(took)")
                try await Task.sleep(for: .milliseconds(150))
            }
            let afterSeeks = try harness.socketStatus()
            #expect(afterSeeks.slowestHandlingMicros < Self.handlingBound,
                    "slowestHandlingMicros \(afterSeeks.slowestHandlingMicros) after the seeks")
            // Which input took it is named, and is one of the kinds recorded: the seeks and the status asked for.
            let kinds = afterSeeks.slowestHandlingByKind
            let named = "slowest \(afterSeeks.slowestHandlingMicros) µs, a \(afterSeeks.slowestHandlingKind ?? "none")"
            #expect(afterSeeks.slowestHandlingKind.map { kinds[$0] == afterSeeks.slowestHandlingMicros } == true,
                    "\(named); by kind \(kinds)")
            #expect(kinds["request seek"] != nil && kinds["request status"] != nil, "by kind \(kinds)")
            // The last seek is played: the decoder went on while the picture was being stored.
            try await harness.waitForStatus(of: service, "heard past 5.5 s after the last seek") {
                $0.playback == "playing" && $0.positionMs >= 5_500 && $0.positionMs < 12_000
            }
            // The picture is stored by a worker that runs only when nothing else wants the CPU: on a busy machine it
            // may still be at it, so its outcome is reported, not required (CoverArtTests checks the stored file).
            let art = harness.cacheHome.appendingPathComponent("earshot/art")
            let stored = (try? FileManager.default.contentsOfDirectory(atPath: art.path))?.contains { name in
                let size = (try? FileManager.default.attributesOfItem(atPath: art.appendingPathComponent(name).path))?[
                    .size] as? Int
                return size == picture.count
            } ?? false
            print("[handling time] the 8 MiB picture was \(stored ? "stored" : "not stored yet") after the seeks")
            report("slowest seek round trip, 8 MiB cover", slowestTrip / .milliseconds(1))
            report("slowest handling of one input, 8 MiB cover", Double(afterSeeks.slowestHandlingMicros) / 1000)
            print("[handling time] the slowest input was a \(afterSeeks.slowestHandlingKind ?? "none")")
            #expect(await harness.stopService(service) == 0)
        }
    }
}
