// Rule 23 end to end (issue 39): while Earshot plays, and only then, the desktop's idle suspend is held off through
// the session bus's service: the XDG desktop portal where it answers, else GNOME's session manager, else the
// freedesktop power management (KDE). The services are python3-dbusmock fakes on the harness's private session bus
// (`FakeInhibitor`), which count the inhibitors handed out and not given back. Each wait is one generous timeout; the
// times from the command to the service's count are printed as `[measure]` lines (the rule's bound is a second).
import EarshotTestSupport
import Foundation
import Testing

@Suite("The idle suspend held off while playing (rule 23), end to end", .serialized)
struct IdleInhibitorTests {
    /// The generous wait for one change to reach the fake service.
    static let wait = Duration.seconds(10)

    /// Starts `kinds` on the harness's bus, then `earshot serve`.
    private func start(_ harness: ServiceHarness, _ kinds: [FakeInhibitor.Kind]) async throws
        -> ([FakeInhibitor], ChildProcess) {
        let fakes = try kinds.map {
            try FakeInhibitor($0, busAddress: harness.bus.address, home: harness.bus.directory)
        }
        let service = try await harness.startService()
        return (fakes, service)
    }

    /// Waits until `fake` holds `count` inhibitors and returns how long that took.
    @discardableResult
    private func waitUntilHeld(_ fake: FakeInhibitor, _ count: Int, _ what: String) async throws -> Double {
        let took = try await waitUntil("\(fake.kind) holds \(count) inhibitor(s) after \(what)", timeout: Self.wait) {
            try fake.held() == count
        }
        report("idle inhibitor (\(fake.kind)): \(what) to \(count == 0 ? "released" : "held")", took.seconds * 1000)
        return took.seconds
    }

    @Test("The portal: held on play, released on pause, a call, an unplug and stop; flag 4 only; gone with the process")
    func portalFollowsThePlayback() async throws {
        try await ServiceHarness.run { harness in
            let (fakes, service) = try await start(harness, [.portal])
            defer { fakes.forEach { $0.stop() } }
            let portal = fakes[0]
            let track = try harness.privatePositionTrack()
            #expect(try portal.held() == 0, "held before any play")

            try harness.earshotChecked(["play", track.path])
            try await waitUntilHeld(portal, 1, "play")
            let playing = try await harness.waitForStatus(of: service, "status names the portal") {
                $0.playback == "playing" && $0.idleInhibitorHeldBy == "portal"
            }
            #expect(playing.idleInhibitorWanted, "\(playing)")
            try harness.earshotChecked(["pause"])
            try await waitUntilHeld(portal, 0, "pause")
            let paused = try harness.status()
            #expect(!paused.idleInhibitorWanted && paused.idleInhibitorHeldBy == nil, "\(paused)")

            // A call: released while it lasts, held again when the music resumes after it.
            try harness.earshotChecked(["play"])
            try await waitUntilHeld(portal, 1, "play")
            let call = try ServerControl.startPhoneCall(wav: try Fixtures.phoneCall(seconds: 2), bufferSeconds: 3)
            defer { call.kill() }
            try await harness.waitForStatus(of: service, "paused for the call") { $0.pauseReason == "interruption" }
            try await waitUntilHeld(portal, 0, "a call")
            try await harness.waitForStatus(of: service, "resumed after the call") { $0.playback == "playing" }
            try await waitUntilHeld(portal, 1, "the call's end")

            try ServerControl.unplug(sink: TestEnvironment.headphones)
            try await harness.waitForStatus(of: service, "paused for the unplug") { $0.pauseReason == "outputLost" }
            try await waitUntilHeld(portal, 0, "an unplug")
            try ServerControl.restoreStandardLayout()

            try harness.earshotChecked(["play"])
            try await waitUntilHeld(portal, 1, "play")
            try harness.earshotChecked(["stop"])
            try await waitUntilHeld(portal, 0, "stop")
            // Only the suspend flag, never idle (8): the screen may still blank and lock.
            let flags = try portal.requestedFlags()
            #expect(flags.count == 4 && flags.allSatisfy { $0 == 4 }, "flags asked: \(flags)")

            // Killed while holding one: its connection, which the real services watch, leaves the bus with it.
            try harness.earshotChecked(["play"])
            try await waitUntilHeld(portal, 1, "play")
            let pid = service.processIdentifier
            #expect(try Self.busPeers(harness).contains(pid), "earshot is not on the bus")
            service.kill()
            _ = service.waitForExit(timeout: .seconds(10))
            try await waitUntil("earshot's connection leaves the bus", timeout: Self.wait) {
                try !Self.busPeers(harness).contains(pid)
            }
            let log = service.standardError()
            #expect(log.contains("idleInhibitor") && log.contains("service=portal"), "\(log)")
        }
    }

    @Test("GNOME's session manager or the freedesktop power management when there is no portal; the portal first")
    func fallbacksInOrder() async throws {
        for (kinds, expected) in [([FakeInhibitor.Kind.gnomeSessionManager], 0), ([.powerManagement], 0),
                                  ([.gnomeSessionManager, .portal], 1), ([.powerManagement, .gnomeSessionManager], 1)] {
            try await ServiceHarness.run { harness in
                let (fakes, service) = try await start(harness, kinds)
                defer { fakes.forEach { $0.stop() } }
                let chosen = fakes[expected]
                try harness.earshotChecked(["play", try harness.privatePositionTrack().path])
                try await waitUntilHeld(chosen, 1, "play")
                let playing = try await harness.waitForStatus(of: service, "status names \(chosen.kind)") {
                    $0.idleInhibitorHeldBy == chosen.kind.rawValue
                }
                #expect(playing.playback == "playing", "\(playing)")
                for other in fakes where other !== chosen {
                    #expect(try other.held() == 0 && other.requestedFlags().isEmpty, "\(other.kind) was asked too")
                }
                if chosen.kind == .gnomeSessionManager { #expect(try chosen.requestedFlags() == [4]) }
                try harness.earshotChecked(["pause"])
                try await waitUntilHeld(chosen, 0, "pause")
                #expect(await harness.stopService(service) == 0)
            }
        }
    }

    @Test("The session bus restarts while playing: the loss and the return said once each, held again on the new bus")
    func heldAgainAfterTheBusRestarts() async throws {
        try await ServiceHarness.run { harness in
            let (fakes, service) = try await start(harness, [.gnomeSessionManager])
            defer { fakes.forEach { $0.stop() } }
            try harness.earshotChecked(["play", try harness.privatePositionTrack().path])
            try await waitUntilHeld(fakes[0], 1, "play")
            // The daemon killed and started again at the same address; the service on it went with it.
            try harness.bus.restart()
            fakes[0].stop()
            let again = try FakeInhibitor(.gnomeSessionManager, busAddress: harness.bus.address,
                                          home: harness.bus.directory)
            defer { again.stop() }
            try await waitUntil("held again on the new bus", timeout: Self.wait) { try again.held() == 1 }
            let status = try harness.status()
            #expect(status.playback == "playing" && status.idleInhibitorHeldBy == "gnomeSessionManager", "\(status)")
            try harness.earshotChecked(["pause"])
            try await waitUntilHeld(again, 0, "pause on the new bus")
            let lines = service.standardError().components(separatedBy: "\n").filter { $0.contains("idleInhibitor") }
            #expect(lines.filter { $0.contains("state=lost") }.count == 1, "\(lines)")
            #expect(lines.filter { $0.contains("state=reconnected") }.count == 1, "\(lines)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("inhibitIdleSuspend off: nothing asked while playing")
    func keyOffAsksNothing() async throws {
        try await ServiceHarness.run { harness in
            try harness.writeConfiguration(#"{"inhibitIdleSuspend": false}"#)
            let (fakes, service) = try await start(harness, [.portal, .gnomeSessionManager, .powerManagement])
            defer { fakes.forEach { $0.stop() } }
            try harness.earshotChecked(["play", try harness.privatePositionTrack().path])
            let playing = try await harness.waitForStatus(of: service, "a second played") {
                $0.playback == "playing" && $0.positionMs >= 1000
            }
            #expect(!playing.idleInhibitorWanted && playing.idleInhibitorHeldBy == nil, "\(playing)")
            for fake in fakes {
                #expect(try fake.requestedFlags().isEmpty, "\(fake.kind) was asked")
            }
            #expect(!service.standardError().contains("idleInhibitor"), "\(service.standardError())")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("A bus with none of the three: one log line, playing goes on, status says it is not held")
    func noServiceOneLine() async throws {
        try await ServiceHarness.run { harness in
            let service = try await harness.startService()
            try harness.earshotChecked(["play", try harness.privatePositionTrack().path])
            try await waitUntil("the adapter finds no service", timeout: Self.wait) {
                service.standardError().contains("state=noService")
            }
            let playing = try harness.status()
            #expect(playing.playback == "playing" && playing.idleInhibitorWanted, "\(playing)")
            #expect(playing.idleInhibitorHeldBy == nil, "\(playing)")
            // Asked again at the next play, quietly.
            try harness.earshotChecked(["pause"])
            try harness.earshotChecked(["play"])
            try await harness.waitForStatus(of: service, "playing again") { $0.playback == "playing" }
            try harness.earshotChecked(["pause"])
            #expect(await harness.stopService(service) == 0)
            let lines = service.standardError().components(separatedBy: "\n").filter { $0.contains("idleInhibitor") }
            #expect(lines.count == 1 && lines[0].contains("state=noService"), "\(lines)")
        }
    }

    /// The process ids of the connections on the harness's bus.
    private static func busPeers(_ harness: ServiceHarness) throws -> Set<Int32> {
        let output = try harness.bus.run("busctl", ["--address=\(harness.bus.address)", "list", "--unique",
                                                   "--no-legend"]).requireSuccess().standardOutput
        return Set(output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count > 1 ? Int32(fields[1]) : nil
        })
    }
}
