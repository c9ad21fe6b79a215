// What the picture marks: the tour's own steps (marks.tsv, written by scripts/run --tour) and the playback
// state Earshot reported after each event (its event log, `earshot events`).
import FoundationEssentials
import Glibc

/// One step the tour took, at a wall-clock time.
public struct Mark: Sendable, Equatable {
    /// What kind of step: it picks the colour, and a call's start and end shade the time between them.
    public enum Kind: String, Sendable, CaseIterable {
        /// A phone stream starts on Earshot's sink.
        case callStart
        /// The phone stream ends.
        case callEnd
        /// The user pauses or resumes.
        case user
        /// A device is unplugged: its lane shows no device until it is plugged back in.
        case unplug
        /// A device is plugged back in.
        case replug
        /// Earshot's stream is moved to another device on purpose.
        case move
        /// A headphone jack is pulled: the sink stays (its speaker port now), only its headphones port goes.
        case jack
    }

    /// Seconds since the Unix epoch.
    public var time: Double
    /// The kind of step.
    public var kind: Kind
    /// The label drawn at the mark, e.g. `unplug`.
    public var label: String
    /// The sink the step concerns (the one unplugged or plugged back in), if any.
    public var sink: String?

    /// A mark at `time`.
    public init(time: Double, kind: Kind, label: String, sink: String? = nil) {
        self.time = time
        self.kind = kind
        self.label = label
        self.sink = sink
    }

    /// Parses `SECONDS<TAB>KIND<TAB>LABEL[<TAB>SINK]` lines (blank lines are ignored).
    public static func parse(_ text: String, file: String = "marks") throws -> [Mark] {
        var marks: [Mark] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.allSatisfy(\.isWhitespace) {
            let fields = line.split(separator: "\t", maxSplits: 3)
            guard fields.count >= 3, let time = Double(fields[0]), let kind = Kind(rawValue: String(fields[1])) else {
                throw TimelineError.malformed(file: file, line: number + 1)
            }
            let sink = fields.count > 3 ? String(fields[3]) : nil
            marks.append(Mark(time: time, kind: kind, label: String(fields[2]), sink: sink))
        }
        return marks.sorted { $0.time < $1.time }
    }
}

/// Earshot's playback state from one event on: `playing`, `paused(user)`, `stopped`, ...
public struct StateChange: Sendable, Equatable {
    /// Seconds since the Unix epoch.
    public var time: Double
    /// The `playback=` field of the event line.
    public var playback: String

    /// A change to `playback` at `time`.
    public init(time: Double, playback: String) {
        self.time = time
        self.playback = playback
    }

    /// The `event` lines of an Earshot event log (`2026-11-30T07:50:00.123Z event kind=... playback=X
    /// commands=...`); other lines (server, output, service) are skipped.
    public static func parse(eventLog text: String) -> [StateChange] {
        var changes: [StateChange] = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ", maxSplits: 2)
            guard words.count == 3, words[1] == "event", let time = parseTimestamp(words[0]),
                let field = line.firstRange(of: " playback=")
            else { continue }
            let playback = line[field.upperBound...].prefix { $0 != " " }
            changes.append(StateChange(time: time, playback: String(playback)))
        }
        return changes
    }

    /// Parses the event log's UTC time with milliseconds, `2026-11-30T07:50:00.123Z`, to epoch seconds.
    static func parseTimestamp(_ text: Substring) -> Double? {
        let parts = text.split(whereSeparator: { "-T:Z".contains($0) })
        guard parts.count == 6, let year = Int32(parts[0]), let month = Int32(parts[1]), let day = Int32(parts[2]),
            let hour = Int32(parts[3]), let minute = Int32(parts[4]), let second = Double(parts[5])
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        fields.tm_sec = 0
        return Double(timegm(&fields)) + second
    }
}
