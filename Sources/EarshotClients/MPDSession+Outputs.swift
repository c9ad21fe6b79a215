// MPD's outputs, ReplayGain and password in Earshot's terms.
//
// Outputs: Earshot has one, its stream on the sound server (id 0). Disabling it is the user's pause (rule 7), and
// the output shows as disabled until the next play; enabling it starts nothing, as an output appearing never does
// (rule 12). No MPD client can make a sound by switching outputs.
// ReplayGain: `replay_gain_mode` is `earshot replaygain` (off, track, album, auto), from the next track;
// `replay_gain_status` names the mode.
// Password (configuration `mpdPassword`): with one set, a connection may only `password`, `ping`, `close`,
// `commands`, `notcommands` and `binarylimit` until it sends the right password, as MPD's default permissions are
// none when a password is configured; anything else is MPD's permission error.
import AudioPipeline
import EarshotService
import MPDProtocol
import SystemSupport

/// Whether Earshot's one output is switched off by an MPD client (shared by every connection).
public final class MPDOutputSwitch: Sendable {
    /// True from a `disableoutput` until the next play.
    let disabled = LockedValue(false)

    /// A switch, on.
    public init() {}
}

extension MPDSession {
    /// The commands a connection may send before its password.
    static let allowedWithoutPassword: Set<String> = [
        "password", "ping", "close", "commands", "notcommands", "binarylimit",
    ]

    /// MPD's permission error when this connection may not run `name` yet; nil when it may.
    public func refusal(of name: String) -> MPDError? {
        guard !authorized, !Self.allowedWithoutPassword.contains(name) else { return nil }
        return MPDError(.permission, command: name, "you don't have permission for \"\(name)\"")
    }

    /// The reply to an output, ReplayGain or password command, or nil when `command` is not one.
    mutating func outputReply(_ command: MPDCommand, name: String) -> Result<String, MPDError>? {
        switch command {
        case .password(let given):
            guard let password, given == password else {
                return .failure(MPDError(.password, command: name, "incorrect password"))
            }
            authorized = true
            return .success("")
        case .outputs:
            return status().map { status in
                let playing = status["playback"] as? String == "playing"
                let enabled = outputSwitch.disabled.withLock { disabled in
                    // A play since the output was disabled switched it on again.
                    if playing { disabled = false }
                    return !disabled
                }
                return "outputid: 0\noutputname: Earshot\nplugin: pulse\noutputenabled: \(enabled ? 1 : 0)\n"
            }
        case .enableoutput(let id), .disableoutput(let id), .toggleoutput(let id):
            guard id == 0 else { return .failure(MPDError(.noExist, command: name, "No such audio output")) }
            let disable: Bool
            switch command {
            case .enableoutput: disable = false
            case .disableoutput: disable = true
            default:
                let playing = (try? status().get())?["playback"] as? String == "playing"
                disable = playing || !outputSwitch.disabled.withLock { $0 }
            }
            let changed = outputSwitch.disabled.withLock { disabled in
                defer { disabled = disable }
                return disabled != disable
            }
            if changed { self.changed.insert(.output) }
            // Disabled: the user's pause (rule 7). Enabled: nothing starts (rule 12).
            return disable ? perform(.pause, name) : .success("")
        case .replayGainMode(let text):
            guard let mode = ReplayGainMode(rawValue: text) else {
                return .failure(MPDError(.argument, command: name, "Unrecognized replay gain mode"))
            }
            return perform(.replayGain(mode), name).map { reply in
                self.changed.insert(.options)
                return reply
            }
        case .replayGainStatus:
            return status().map { status in
                let mode = (status["replayGain"] as? [String: Any])?["mode"] as? String ?? "off"
                return "replay_gain_mode: \(mode)\n"
            }
        default: return nil
        }
    }
}
