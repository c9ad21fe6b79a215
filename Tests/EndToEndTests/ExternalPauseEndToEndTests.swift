// RULES.md rule 21 end to end: MPRIS `Pause` from the session manager (WirePlumber) or a phone bridge (KDE Connect)
// is told apart from the user's by the sending process, and neither overwrites an output loss nor cancels the
// resume after a call; KDE's power daemon's Pause is rule 19's sleep. The senders are real D-Bus clients whose
// processes the kernel names `wireplumber`, `kdeconnectd` and `org_kde_powerde` (copies of busctl named as the
// programs, `NamedBusClient`); the user is playerctl. Status, MPRIS and the event log are read
// after each request returns: the player answers only once the rules have decided and MPRIS has been told.
import EarshotTestSupport
import Foundation
import Testing

@Suite("External pauses (rule 21), end to end", .serialized)
struct ExternalPauseEndToEndTests {
    /// The length of the phone call, in seconds.
    static let callSeconds = 4.0

    /// Runs `body` with a harness, its service playing the position track on the headphones, and the senders.
    private func playing(
        _ body: (ServiceHarness, ChildProcess, Senders) async throws -> Void
    ) async throws {
        try await ServiceHarness.run { harness in
            let track = try harness.privatePositionTrack()
            let service = try await harness.startService(waitForMPRIS: true)
            let senders = try Senders(harness: harness)
            try harness.earshotChecked(["play", track.path])
            try await harness.waitForStatus(of: service, "playing on the headphones") {
                $0.playback == "playing" && $0.streamOpen && $0.sink == TestEnvironment.headphones
            }
            try await body(harness, service, senders)
            // The log names senders by kind only, never by process.
            let log = service.standardError()
            #expect(!log.contains("wireplumber") && !log.contains("kdeconnectd") && !log.contains("powerdevil"),
                    "\(log)")
            #expect(await harness.stopService(service) == 0)
        }
    }

    @Test("WirePlumber's Pause after an unplug leaves the reason outputLost: status, MPRIS and the log agree")
    func sessionManagerPauseAfterUnplug() async throws {
        try await playing { harness, service, senders in
            try ServerControl.unplug(sink: TestEnvironment.headphones)
            try await harness.waitForStatus(of: service, "paused for the unplug") { $0.pauseReason == "outputLost" }
            try senders.call(senders.wirePlumber, "Pause")
            let status = try harness.status()
            #expect(status.playback == "paused" && status.pauseReason == "outputLost"
                        && status.outputLostReason == "deviceRemoved", "\(status)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            let log = service.standardError()
            #expect(log.contains("event kind=externalPause(sessionManager) playback=paused(outputLost) commands=none"),
                    "\(log)")
            #expect(!log.contains("playback=paused(user)"), "\(log)")
        }
    }

    @Test("WirePlumber's Pause before the unplug's notice: the unplug's reason replaces it")
    func sessionManagerPauseBeforeUnplug() async throws {
        try await playing { harness, service, senders in
            try senders.call(senders.wirePlumber, "Pause")
            let paused = try harness.status()
            #expect(paused.playback == "paused" && paused.pauseReason == "external", "\(paused)")
            try ServerControl.unplug(sink: TestEnvironment.headphones)
            let lost = try await harness.waitForStatus(of: service, "paused for the unplug") {
                $0.pauseReason == "outputLost"
            }
            #expect(lost.outputLostReason == "deviceRemoved", "\(lost)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            let log = service.standardError()
            #expect(log.contains("event kind=externalPause(sessionManager) playback=paused(external) commands=cork"),
                    "\(log)")
        }
    }

    @Test("WirePlumber's Pause during a phone call does not cancel the resume after it")
    func sessionManagerPauseDuringCall() async throws {
        try await playing { harness, service, senders in
            let call = try ServerControl.startPhoneCall(
                wav: try Fixtures.phoneCall(seconds: Self.callSeconds), sink: TestEnvironment.speakers,
                bufferSeconds: Self.callSeconds + 1)
            defer { call.kill() }
            try await harness.waitForStatus(of: service, "paused for the call") { $0.pauseReason == "interruption" }
            try senders.call(senders.wirePlumber, "Pause")
            let held = try harness.status()
            #expect(held.playback == "paused" && held.pauseReason == "interruption"
                        && !held.activeInterruptions.isEmpty, "\(held)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            let resumed = try await harness.waitForStatus(of: service, "playing again after the call") {
                $0.playback == "playing" && $0.activeInterruptions.isEmpty
            }
            #expect(resumed.sink == TestEnvironment.headphones, "\(resumed)")
            #expect(try harness.playerctlEarshot(["status"]) == "Playing")
            let log = service.standardError()
            #expect(log.contains(
                "event kind=externalPause(sessionManager) playback=paused(interruption) commands=none"), "\(log)")
        }
    }

    @Test("KDE Connect's Pause then PlayPause resumes; its PlayPause after the user restarted the music does not pause")
    func phoneBridgePauseAndPlayPause() async throws {
        try await playing { harness, service, senders in
            try senders.call(senders.kdeConnect, "Pause")
            let paused = try harness.status()
            #expect(paused.playback == "paused" && paused.pauseReason == "external", "\(paused)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            try senders.call(senders.kdeConnect, "PlayPause")
            #expect(try harness.status().playback == "playing")
            #expect(try harness.playerctlEarshot(["status"]) == "Playing")

            // The phone rings again; the user restarts the music before the call ends.
            try senders.call(senders.kdeConnect, "Pause")
            #expect(try harness.status().pauseReason == "external")
            try harness.playerctlEarshot(["play"])
            #expect(try harness.status().playback == "playing")
            try await harness.waitForStatus(of: service, "playing, the uncork acknowledged") {
                $0.playback == "playing" && !$0.corked
            }
            try senders.call(senders.kdeConnect, "PlayPause")
            // Never a toggle: the music goes on, and stays on.
            for _ in 0..<4 {
                let status = try harness.status()
                #expect(status.playback == "playing" && !status.corked, "\(status)")
                try await Task.sleep(for: .milliseconds(150))
            }
            #expect(try harness.playerctlEarshot(["status"]) == "Playing")
            let log = service.standardError()
            // A phone bridge pauses for a ringing phone: a call's pause, which fades out.
            #expect(log.contains(
                "event kind=externalPause(phoneBridge) playback=paused(external) commands=fadeOutAndCork"),
                    "\(log)")
            #expect(log.contains("event kind=externalPlayPause(phoneBridge) playback=playing commands=uncork"),
                    "\(log)")
            #expect(log.contains("event kind=externalPlayPause(phoneBridge) playback=playing commands=none"), "\(log)")
        }
    }

    @Test("KDE's power daemon's Pause before sleep: paused (sessionLeft), corked at once; KDE Connect cannot resume it")
    func powerManagerPauseIsTheSleep() async throws {
        try await playing { harness, service, senders in
            try senders.call(senders.powerDevil, "Pause")
            let paused = try harness.status()
            #expect(paused.playback == "paused" && paused.pauseReason == "sessionLeft", "\(paused)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            try await harness.waitForStatus(of: service, "corked for the sleep") { $0.corked }
            // The phone rings after the wake: KDE Connect's Pause finds the music paused, and its PlayPause after the
            // call starts nothing (rule 21: it resumes only what it paused).
            try senders.call(senders.kdeConnect, "Pause")
            try senders.call(senders.kdeConnect, "PlayPause")
            for _ in 0..<4 {
                let status = try harness.status()
                #expect(status.playback == "paused" && status.pauseReason == "sessionLeft" && status.corked,
                        "\(status)")
                try await Task.sleep(for: .milliseconds(150))
            }
            let log = service.standardError()
            // No fade: a sleep corks at once.
            #expect(log.contains("event kind=sessionLeft(sleep) playback=paused(sessionLeft) commands=cork"), "\(log)")
            #expect(log.contains(
                "event kind=externalPlayPause(phoneBridge) playback=paused(sessionLeft) commands=none"), "\(log)")
            #expect(!log.contains("playback=paused(user)"), "\(log)")
        }
    }

    @Test("playerctl's Pause is the user's: paused (user), and a phone bridge's PlayPause does not undo it")
    func userPauseStaysTheUsers() async throws {
        try await playing { harness, service, senders in
            try senders.call(senders.kdeConnect, "Pause")
            try harness.playerctlEarshot(["pause"])
            let paused = try harness.status()
            #expect(paused.playback == "paused" && paused.pauseReason == "user", "\(paused)")
            try senders.call(senders.kdeConnect, "PlayPause")
            let after = try harness.status()
            #expect(after.playback == "paused" && after.pauseReason == "user", "\(after)")
            #expect(try harness.playerctlEarshot(["status"]) == "Paused")
            let log = service.standardError()
            #expect(log.contains("event kind=userPause playback=paused(user) commands=none"), "\(log)")
            #expect(log.contains("event kind=externalPlayPause(phoneBridge) playback=paused(user) commands=none"),
                    "\(log)")
        }
    }
}

/// The outside senders of a harness, on its bus: `wireplumber`, `kdeconnectd` and `org_kde_powerdevil`.
private struct Senders {
    /// The session manager's stand-in.
    let wirePlumber: NamedBusClient
    /// The phone bridge's stand-in.
    let kdeConnect: NamedBusClient
    /// KDE's power daemon's stand-in.
    let powerDevil: NamedBusClient
    /// The harness's bus address.
    let address: String

    init(harness: ServiceHarness) throws {
        address = harness.environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        let folder = harness.root.appendingPathComponent("clients", isDirectory: true)
        wirePlumber = try NamedBusClient(processName: "wireplumber", in: folder, checkingOn: address)
        kdeConnect = try NamedBusClient(processName: "kdeconnectd", in: folder, checkingOn: address)
        powerDevil = try NamedBusClient(processName: "org_kde_powerdevil", in: folder, checkingOn: address)
    }

    /// Calls `method` on Earshot's player interface as `client`, and throws unless the reply says it succeeded.
    func call(_ client: NamedBusClient, _ method: String) throws {
        try client.callPlayer(method, address: address).requireSuccess()
    }
}
