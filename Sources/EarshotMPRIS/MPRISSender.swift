// Who sent an MPRIS request. The session's sound policy manager (WirePlumber) and the phone bridges (KDE Connect,
// GSConnect) pause players for events of their own, and RULES.md rule 21 treats their pauses apart from the user's;
// KDE's power daemon pauses every player as the machine goes to sleep, which is rule 19's departure, not the user's.
// They are told apart by the sending process: the bus daemon names the connection's process id
// (`GetConnectionCredentials`, which sd-bus asks for us), and the kernel names the process (`/proc/PID/comm`).
//
// Checked in the senders' sources (2026-12-03): WirePlumber runs as `wireplumber`, KDE Connect's daemon as
// `kdeconnectd`, Valent (GNOME's KDE Connect client, whose telephony plugin pauses players too) as `valent`.
// GSConnect's daemon is `service/daemon.js` in its extension folder (`gsconnect@andyholmes.github.io`), started
// through its `#!/usr/bin/env gjs` line (newer ones `gjs -m`), so the kernel names it `gjs` and its command line
// names the script; `GLib.set_prgname("gsconnect")` changes neither.
// KDE's power daemon, PowerDevil, runs as `org_kde_powerdevil` (its executable under libexec), which the kernel cuts to
// 15 bytes, `org_kde_powerde`: its command line's first word says the rest. Before sleep (`Core::onAboutToSuspend`,
// with `pausePlayersOnSuspend`, on by default since Plasma 5.11) it calls `Pause` on every `org.mpris.MediaPlayer2.*`
// name but KDE Connect's; it sends nothing else to players (daemon/powerdevilcore.cpp, PowerDevil 6.7.80).
// Any other process (playerctl, a desktop shell, the media keys' daemon) is the user's.
import CSystemd
import Glibc

/// Who sent an MPRIS request, told apart by the sending process (RULES.md rule 21). A kind only: the adapter never
/// hands out a process name or id.
public enum MPRISSender: Hashable, Sendable, CustomStringConvertible {
    /// The user's own controls: playerctl, a desktop shell, the media keys, and any process not named below (also
    /// one that could not be identified, which is what every request was before rule 21).
    case user
    /// The session's sound policy manager, WirePlumber.
    case sessionManager
    /// A phone bridge: KDE Connect (`kdeconnectd`), Valent (`valent`) or GSConnect (a `gjs` process running
    /// GSConnect's daemon).
    case phoneBridge
    /// The session's power manager, KDE's PowerDevil (`org_kde_powerdevil`): its `Pause` announces a sleep.
    case powerManager

    /// `user`, `sessionManager` or `phoneBridge`.
    public var description: String {
        switch self {
        case .user: return "user"
        case .sessionManager: return "sessionManager"
        case .phoneBridge: return "phoneBridge"
        case .powerManager: return "powerManager"
        }
    }

    /// The kind of a process whose kernel name (`comm`, at most 15 bytes) is `processName`. `commandLine` gives its
    /// arguments (argv[0] first) and is asked only for a `gjs` process, which may be GSConnect's daemon, and for a name
    /// the kernel cut from PowerDevil's.
    static func classify(processName: String, commandLine: () -> [String]) -> MPRISSender {
        switch processName {
        case "wireplumber":
            return .sessionManager
        case "kdeconnectd", "valent":
            return .phoneBridge
        case "gjs", "gjs-console":
            // Other GNOME programs are gjs scripts too: only GSConnect's own daemon is a phone bridge.
            return commandLine().contains { $0.lowercased().contains("gsconnect") } ? .phoneBridge : .user
        case powerDevil, "org_kde_powerde":
            // The kernel keeps 15 bytes of the name: the command line's first word has all of it.
            let program = commandLine().first?.split(separator: "/").last.map(String.init)
            return program == powerDevil ? .powerManager : .user
        default:
            return .user
        }
    }

    /// PowerDevil's executable name.
    static let powerDevil = "org_kde_powerdevil"

    /// The sender of the method call `message` (an `sd_bus_message *`), on the bus thread. sd-bus asks the bus
    /// daemon for the sender's process id (one round trip, which only the bus thread waits for); the name is read
    /// from /proc. A sender that cannot be identified is the user, as every sender was before rule 21.
    static func of(message: OpaquePointer) -> MPRISSender {
        var credentials: OpaquePointer?
        guard sd_bus_query_sender_creds(message, UInt64(SD_BUS_CREDS_PID), &credentials) >= 0,
              let credentials else { return .user }
        defer { sd_bus_creds_unref(credentials) }
        var processID: pid_t = 0
        guard sd_bus_creds_get_pid(credentials, &processID) >= 0, processID > 0,
              let name = ProcessFile.contents("/proc/\(processID)/comm") else { return .user }
        // The kernel ends the name with a newline.
        let processName = String(decoding: name.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        return classify(processName: processName) {
            // The arguments are separated (and ended) by NUL bytes.
            (ProcessFile.contents("/proc/\(processID)/cmdline") ?? [])
                .split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}

/// Reading the small files of /proc.
private enum ProcessFile {
    /// The first 4 KiB of the file at `path`, or nil if it cannot be read (the process has gone).
    static func contents(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        return filled > 0 ? Array(bytes[..<filled]) : nil
    }
}
