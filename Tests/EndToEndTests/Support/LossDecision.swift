// When `earshot play` decided an output loss, a pause that corks or a duck, on the test's monotonic clock. The fake
// card's suites and the virtual sink's bound Earshot's own part from this moment: what a sink plays between a
// device's change and it is the notice's way through the server and the scheduler, which Earshot cannot shorten and
// which a loaded machine stretches (tests report it). An unplug of the test server's headphones is judged from the
// notice instead, and this moment only reported (`expectSpeakersQuietAfterUnplug`).
import EarshotTestSupport
import Foundation
import Testing

extension EarshotPlayer {
    /// The instant Earshot decided an output loss: its event log's time of `outputLost`, brought onto the monotonic
    /// clock through the two clocks read together (`sent`, `sentDate`) before the command that caused it.
    func lossDecided(sent: ContinuousClock.Instant, sentDate: Date) async throws -> ContinuousClock.Instant {
        try await decided("the output loss", sent: sent, sentDate: sentDate, matches: Self.decidesLoss)
    }

    /// Whether a log line is the rules' output-loss decision.
    static func decidesLoss(_ line: Substring) -> Bool { line.contains("event kind=outputLost(") }

    /// The instant Earshot first decided to quiet the stream after `sent`: the first event whose commands cork it (at
    /// once or after a fade), whatever the event (a profile switch, a call, an output loss).
    func quietDecided(sent: ContinuousClock.Instant, sentDate: Date) async throws -> ContinuousClock.Instant {
        try await decided("a cork", sent: sent, sentDate: sentDate, matches: Self.corks)
    }

    /// The instant Earshot decided to duck after `sent`: the first event the rules answered with `duck` (rule 20).
    func duckDecided(sent: ContinuousClock.Instant, sentDate: Date) async throws -> ContinuousClock.Instant {
        try await decided("a duck", sent: sent, sentDate: sentDate) { Self.commands(of: $0).contains("duck") }
    }

    /// Whether a log line is an event the rules answered with a cork (at once or after a fade).
    static func corks(_ line: Substring) -> Bool {
        let commands = commands(of: line)
        return commands.contains("cork") || commands.contains("fadeOutAndCork")
    }

    /// The commands of an event's log line; none for other lines. The field runs to ` signal=` or the line's end, and
    /// a command may hold a comma and a space in its parentheses (`cue(1, 0ms)`).
    static func commands(of line: Substring) -> [Substring] {
        guard line.contains("event kind="), let start = line.range(of: " commands=") else { return [] }
        var field = line[start.upperBound...]
        if let signal = field.range(of: " signal=") { field = field[..<signal.lowerBound] }
        var commands: [Substring] = []
        var depth = 0, from = field.startIndex
        for index in field.indices {
            switch field[index] {
            case "(": depth += 1
            case ")": depth -= 1
            case "," where depth == 0:
                commands.append(field[from..<index])
                from = field.index(after: index)
            default: break
            }
        }
        commands.append(field[from...])
        return commands
    }

    /// The time of the first log line at or after `sentDate` that `matches`, on the monotonic clock; an issue when
    /// there is none.
    private func decided(_ what: String, sent: ContinuousClock.Instant, sentDate: Date,
                         matches: @escaping (Substring) -> Bool) async throws -> ContinuousClock.Instant {
        let found = await logged(what, sentDate: sentDate, log: { standardError }, matches: matches)
        let tail = standardError.split(separator: "\n").suffix(40).joined(separator: "\n")
        let date = try #require(found, "no \(what) in the log; its last lines:\n\(tail)")
        return Self.instant(of: date, sent: sent, sentDate: sentDate)
    }

    /// `date` on the monotonic clock, through the two clocks read together (`sent`, `sentDate`).
    fileprivate static func instant(
        of date: Date, sent: ContinuousClock.Instant, sentDate: Date
    ) -> ContinuousClock.Instant {
        sent + .milliseconds(Int64((date.timeIntervalSince(sentDate) * 1000).rounded()))
    }

    /// The wall-clock time of the first line of `log` at or after `sentDate` that `matches`, waiting up to 10 s for it
    /// (the status can be read before the event's line reaches the log file: seen once on 0.3.65 under load).
    fileprivate func logged(_ what: String, sentDate: Date, log: () -> String,
                            matches: @escaping (Substring) -> Bool) async -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = { (line: Substring) in
            line.split(separator: " ").first.flatMap { formatter.date(from: String($0)) }
        }
        var found: Date?
        _ = try? await waitUntil("\(what) is in the log", timeout: .seconds(10)) {
            found = log().split(separator: "\n").lazy
                .filter(matches).compactMap(time).first { $0.timeIntervalSince(sentDate) >= -0.001 }
            return found != nil
        }
        return found
    }
}

extension EarshotPlayer {
    /// RULES.md's "corked within 10 ms of the notice" for an unplug of the headphones Earshot was playing on, judged
    /// on the speakers' recording; `sent` and `sentDate` are the two clocks read together before the unplug command.
    ///
    /// All of our audio the speakers played counts, from the notice's arrival to the cork's effect: an owner held by
    /// anything lets the moved stream play on there. The bound is the rule's 10 ms and one graph period
    /// (`TestEnvironment.serverPeriodSeconds`, 0 on PulseAudio): on PipeWire the sink's removal comes first and
    /// WirePlumber may relink our stream to the speakers meanwhile, and what the graph has mixed there of the current
    /// period when the cork lands plays out (22.0 ms once on PipeWire 0.3.65, in one range). How long Earshot took to
    /// decide, and what played after its decision, are only reported, when the log read has the decision (a
    /// follower's may have dropped it). `log` is where the event log is read: the player's standard error unless
    /// given (a follower's output where that is a FIFO).
    func expectSpeakersQuietAfterUnplug(
        _ speakers: Recording, sent: ContinuousClock.Instant, sentDate: Date, label: String,
        log: (() -> String)? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let leak = speakers.audibleMilliseconds
        report("\(label): leak to speakers", leak)
        let bound = 10 + (try TestEnvironment.serverPeriodSeconds()) * 1000
        let ranges = speakers.audibleRanges()
        #expect(leak <= bound, "\(leak) ms of our audio reached the speakers (bound \(bound) ms): \(ranges)",
                sourceLocation: sourceLocation)
        let found = await logged("the output loss", sentDate: sentDate, log: log ?? { self.standardError },
                                 matches: Self.decidesLoss)
        guard let found else {
            print("\(label): the log read does not show the output loss's decision")
            return
        }
        let decided = Self.instant(of: found, sent: sent, sentDate: sentDate)
        report("\(label): Earshot decided the loss after the unplug was sent", (decided - sent).seconds * 1000)
        report("\(label): leak to speakers after Earshot's decision", speakers.audibleMilliseconds(after: decided))
    }
}
