// Who sent an MPRIS request (RULES.md rule 21): the adapter tells WirePlumber and the phone bridges apart from the
// user by the sending process's kernel name. Proven with real clients on a private bus: copies of busctl named as
// those programs are, and playerctl for the user.
import Foundation
import Testing

import EarshotTestSupport
@testable import EarshotMPRIS

@Suite("MPRIS senders told apart by their process", .serialized)
struct MPRISSenderTests {
    @Test("process names: WirePlumber, KDE Connect, Valent, GSConnect's gjs daemon, PowerDevil; the rest is the user")
    func classification() {
        let gsconnect = ["gjs", "/usr/share/gnome-shell/extensions/gsconnect@andyholmes.github.io/service/daemon.js"]
        let rows: [(String, [String], MPRISSender)] = [
            ("wireplumber", [], .sessionManager),
            ("kdeconnectd", [], .phoneBridge),
            ("valent", [], .phoneBridge),
            ("gjs", gsconnect, .phoneBridge),
            ("gjs", ["/usr/bin/gjs", "-m", "/home/u/.local/share/gnome-shell/extensions/"
                        + "gsconnect@andyholmes.github.io/service/daemon.js"], .phoneBridge),
            // Other gjs programs (GNOME's own apps are gjs scripts too) are the user's.
            ("gjs", ["gjs", "/usr/share/org.gnome.Weather/org.gnome.Weather"], .user),
            // KDE's power daemon: the kernel keeps 15 bytes of its name, the command line has the rest.
            ("org_kde_powerde", ["/usr/lib/x86_64-linux-gnu/libexec/org_kde_powerdevil"], .powerManager),
            ("org_kde_powerdevil", ["org_kde_powerdevil"], .powerManager),
            ("org_kde_powerde", ["/usr/bin/org_kde_powerdevil_helper"], .user),
            ("playerctl", [], .user),
            ("gnome-shell", [], .user),
            ("gsd-media-keys", [], .user),
            // Only the exact names count: a name that merely contains one is the user.
            ("wireplumber-ct", [], .user),
            ("", [], .user),
        ]
        for (name, commandLine, expected) in rows {
            var asked = false
            let kind = MPRISSender.classify(processName: name) {
                asked = true
                return commandLine
            }
            #expect(kind == expected, "\(name) \(commandLine)")
            // The command line is read only for gjs and PowerDevil's name.
            #expect(asked == (name == "gjs" || name.hasPrefix("org_kde_powerde")), "\(name)")
        }
    }

    @Test("Pause, PlayPause, Play and Rate 0 reach the player with the kind of process that sent them")
    func sendersReachThePlayer() throws {
        let bus = try PrivateSessionBus()
        let player = FakePlayer(MPRISSnapshot(playbackStatus: .playing, canPlay: true, canPause: true))
        let server = MPRISServer(busAddress: bus.address, handler: player.handle)
        player.attach(server)
        try server.start()
        defer { server.stop() }
        let folder = bus.directory.appendingPathComponent("clients", isDirectory: true)
        let wirePlumber = try NamedBusClient(processName: "wireplumber", in: folder, checkingOn: bus.address)
        let kdeConnect = try NamedBusClient(processName: "kdeconnectd", in: folder, checkingOn: bus.address)
        let gsConnect = try NamedBusClient(processName: "gjs", in: folder,
                                           subfolder: "gsconnect@andyholmes.github.io", checkingOn: bus.address)
        let otherGjs = try NamedBusClient(processName: "gjs", in: folder, checkingOn: bus.address)
        let powerDevil = try NamedBusClient(processName: "org_kde_powerdevil", in: folder, checkingOn: bus.address)

        for (client, method) in [(wirePlumber, "Pause"), (kdeConnect, "Pause"), (kdeConnect, "PlayPause"),
                                 (gsConnect, "Pause"), (gsConnect, "Play"), (otherGjs, "Pause"),
                                 (powerDevil, "Pause")] {
            let result = try client.callPlayer(method, address: bus.address)
            #expect(result.succeeded, "\(client.processName) \(method): \(result.standardError)")
        }
        let playerctl = try ProcessRunner.requireTool("playerctl", package: "playerctl")
        #expect(try bus.run(playerctl, ["-p", "earshot", "pause"]).succeeded)
        // The MPRIS rule: writing Rate 0.0 acts as Pause, from whoever writes it.
        let rate = try ProcessRunner.run(wirePlumber.executable, [
            "--address=\(bus.address)", "--", "set-property", MPRISServer.busName, MPRISServer.objectPath,
            MPRISServer.playerInterface, "Rate", "d", "0",
        ], inheritsEnvironment: false)
        #expect(rate.succeeded, "\(rate.standardError)")

        #expect(player.received == [
            .pause(.sessionManager), .pause(.phoneBridge), .playPause(.phoneBridge), .pause(.phoneBridge),
            .play(.phoneBridge), .pause(.user), .pause(.powerManager), .pause(.user), .pause(.sessionManager),
        ])
    }
}
