// When `earshot play` decided an output loss, on the test's monotonic clock: the moment RULES.md's "within 10 ms of
// the notice" counts from. Shared by the fake card's suites and the virtual sink's: what a sink plays between a
// device's change and this moment is the notice's way through the server and the scheduler, which Earshot cannot
// shorten and which a loaded machine stretches (tests report it); what plays after it is Earshot's own part.
import EarshotTestSupport
import Foundation
import Testing

extension EarshotPlayer {
    /// The instant Earshot decided an output loss: its event log's time of `outputLost`, brought onto the monotonic
    /// clock through the two clocks read together (`sent`, `sentDate`) before the command that caused it.
    func lossDecided(sent: ContinuousClock.Instant, sentDate: Date) async throws -> ContinuousClock.Instant {
        // The status can be read before the event's line reaches the log file (seen once on 0.3.65 under load).
        var found: Substring?
        _ = try? await waitUntil("the output loss is in the log", timeout: .seconds(10)) {
            found = standardError.split(separator: "\n").first { $0.contains("event kind=outputLost(") }
            return found != nil
        }
        let line = try #require(found, "no output loss in the log:\n\(standardError)")
        let stamp = try #require(line.split(separator: " ").first)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: String(stamp)), "not a time: \(stamp)")
        return sent + .milliseconds(Int64((date.timeIntervalSince(sentDate) * 1000).rounded()))
    }
}
