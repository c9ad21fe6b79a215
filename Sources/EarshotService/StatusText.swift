// Renders a status reply for people: `earshot status` without --json.

/// Formats the status object of a reply.
public enum StatusText {
    /// For example "replaygain auto: -6.5 dB from the album tag" or "replaygain track: 0.0 dB, no value in the file".
    private static func replayGainLine(mode: String, _ gain: [String: Any]) -> String {
        let decibels = (gain["gainDb"] as? Double) ?? Double(gain["gainDb"] as? Int ?? 0)
        let amount = String(Int((decibels * 10).rounded())).paddedTenths
        let limited = gain["limitedByPeak"] as? Bool == true ? ", limited by its peak" : ""
        switch gain["source"] as? String {
        case "trackTag": return "replaygain \(mode): \(amount) dB from the track tag\(limited)"
        case "albumTag": return "replaygain \(mode): \(amount) dB from the album tag\(limited)"
        case "trackMeasured": return "replaygain \(mode): \(amount) dB, the track as the library measured it\(limited)"
        case "albumMeasured": return "replaygain \(mode): \(amount) dB, the album as the library measured it\(limited)"
        case "fallback": return "replaygain \(mode): \(amount) dB, no value in the file\(limited)"
        default: return "replaygain \(mode): none applied"
        }
    }

    /// A station's lost connection in words (rows 38-41), by the status field `liveNetwork`.
    static let networkWords = [
        "reconnecting": "connection lost, reconnecting", "waiting": "connection lost, trying again shortly",
        "gaveUp": "connection lost, gave up (play tries again)", "ended": "the station ended the stream",
    ]

    /// A few lines: playback, position, output.
    public static func render(_ status: [String: Any]) -> String {
        let playback = status["playback"] as? String ?? "unknown"
        var first = playback
        if let reason = status["pauseReason"] as? String { first += " (\(reason))" }
        if status["waitingForInterruptionEnd"] as? Bool == true { first += ", waiting for the interruption to end" }
        var lines = [first]
        if let index = status["trackIndex"] as? Int, let count = status["trackCount"] as? Int, count > 0 {
            let position = clock(status["positionMs"] as? Int ?? 0)
            let length = (status["durationMs"] as? Int).map(clock) ?? "--:--"
            lines.append("track \(index + 1)/\(count)  \(position) / \(length)")
        }
        if let station = status["station"] as? String { lines.append("station: \(station)") }
        if let title = status["streamTitle"] as? String { lines.append("now: \(title)") }
        if let network = status["liveNetwork"] as? String {
            lines.append("network: \(Self.networkWords[network] ?? network)")
        }
        if let bytes = status["liveBufferBytes"] as? Int, let milliseconds = status["liveBufferMs"] as? Int {
            let rejoined = (status["liveRejoined"] as? String).map { ", rejoined live (\($0))" } ?? ""
            lines.append("live buffer: \(bytes) bytes, \(milliseconds / 1000) s behind live\(rejoined)")
        }
        let shuffle = status["shuffle"] as? Bool == true ? "on" : "off"
        var modes = "repeat \(status["repeat"] as? String ?? "off"), shuffle \(shuffle)"
        // Single and consume are named when on, so that the usual line stays as it was.
        if let single = status["single"] as? String, single != "off" { modes += ", single \(single)" }
        if status["consume"] as? Bool == true { modes += ", consume on" }
        lines.append(modes)
        if let gain = status["replayGain"] as? [String: Any], let mode = gain["mode"] as? String {
            lines.append(replayGainLine(mode: mode, gain))
        }
        let sink = status["sink"] as? String ?? "none"
        let corked = status["corked"] as? Bool == true ? "corked" : "running"
        let server = status["server"] as? String ?? "not connected"
        lines.append("output: \(sink) (\(corked)) on \(server)")
        if let realtime = status["realtime"] as? String { lines.append("realtime: \(realtime)") }
        if let holder = status["idleInhibitorHeldBy"] as? String {
            lines.append("idle suspend: held off (\(holder))")
        } else if status["idleInhibitorWanted"] as? Bool == true {
            lines.append("idle suspend: not held off (no service took it)")
        }
        if let mpd = status["mpdUnavailable"] as? [String], !mpd.isEmpty {
            lines.append("MPD's protocol: not served on \(mpd.joined(separator: "; "))")
        }
        if let mpd = status["mpd"] as? [String: Any] { lines.append(mpdLine(mpd)) }
        if let interruptions = status["activeInterruptions"] as? [String], !interruptions.isEmpty {
            lines.append("interruptions: \(byKind(interruptions))")
        }
        if let overruled = status["overruledInterruptions"] as? [String], !overruled.isEmpty {
            lines.append("overruled by play: \(byKind(overruled))")
        }
        lines.append("volume \(status["volume"] as? Int ?? 100)%, underruns \(status["underruns"] as? Int ?? 0), "
            + "server underflows \(status["serverUnderflows"] as? Int ?? 0)")
        if let failure = status["lastError"] as? [String: Any], let kind = failure["kind"] as? String {
            lines.append("last error: track \((failure["trackIndex"] as? Int ?? 0) + 1): \(kind)")
        }
        if let library = status["library"] as? [String: Any] {
            lines.append(libraryLine(library))
            // The gains the library measured for tracks without tagged ones (docs/replaygain.md).
            if let measured = library["gainsMeasured"] as? Int {
                let waiting = library["gainsToMeasure"] as? Int ?? 0
                lines.append("library gains: \(measured) measured, \(waiting) to measure")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The library's line: a scan's progress, or the tracks and what the last scan skipped.
    public static func libraryLine(_ library: [String: Any]) -> String {
        if let problem = library["problem"] as? String { return "library: \(problem)" }
        let done = library["filesDone"] as? Int ?? 0
        let toDo = library["filesToDo"] as? Int ?? 0
        if library["scanning"] as? Bool == true { return "library: scanning, \(done) of \(toDo) files read" }
        var line = "library: " + ((library["tracks"] as? Int).map { "\($0) tracks" } ?? "not scanned yet")
        let skipped = (library["skipped"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
        if !skipped.isEmpty {
            let reasons = skipped.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            line += " (skipped: \(reasons))"
        }
        return line
    }

    /// The MPD front-end's line: clients connected, and those its limits refused or closed, e.g. `MPD clients: 2
    /// connected, 1 refused (too many clients), closed: 0 line too long, 0 command list too long, 0 not reading, 0 idle
    /// timeout`.
    static func mpdLine(_ mpd: [String: Any]) -> String {
        let refused = (mpd["refused"] as? [String: Any])?["tooManyClients"] as? Int ?? 0
        let closed = mpd["closed"] as? [String: Any] ?? [:]
        let reasons = [("lineTooLong", "line too long"), ("commandListTooLong", "command list too long"),
                       ("notReading", "not reading"), ("idleTimeout", "idle timeout")]
            .compactMap { key, text in (closed[key] as? Int).map { "\($0) \(text)" } }
        return "MPD clients: \(mpd["clients"] as? Int ?? 0) connected, \(refused) refused (too many clients), closed: "
            + reasons.joined(separator: ", ")
    }

    /// Interruption sources (`microphone#5`, `stream#12`) grouped by kind for people, e.g. `call from a microphone
    /// capture (microphone#5), phone-role stream (stream#12)`.
    static func byKind(_ sources: [String]) -> String {
        let names = [
            "microphone": "call from a microphone capture", "stream": "phone-role stream",
            "profile": "headset call profile", "server": "server cork request",
        ]
        var groups: [(kind: String, members: [String])] = []
        for source in sources {
            let kind = String(source.prefix { $0 != "#" })
            if let position = groups.firstIndex(where: { $0.kind == kind }) {
                groups[position].members.append(source)
            } else {
                groups.append((kind, [source]))
            }
        }
        return groups.map { "\(names[$0.kind] ?? $0.kind) (\($0.members.joined(separator: ", ")))" }
            .joined(separator: ", ")
    }

    /// `m:ss` for a position in milliseconds.
    public static func clock(_ milliseconds: Int) -> String {
        let seconds = max(milliseconds, 0) / 1000
        let remainder = seconds % 60
        return "\(seconds / 60):\(remainder < 10 ? "0" : "")\(remainder)"
    }
}

private extension String {
    /// A whole number of tenths ("-65") as a decimal ("-6.5").
    var paddedTenths: String {
        let negative = hasPrefix("-")
        var digits = negative ? String(dropFirst()) : self
        while digits.count < 2 { digits = "0" + digits }
        return (negative ? "-" : "") + digits.dropLast() + "." + digits.suffix(1)
    }
}
