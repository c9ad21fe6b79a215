// The event log: one line per event with its kind, cause, the resulting playback state and the commands.
// It records kinds and states only: never a path, a title or other user content, at any level.
//
// Recording a line never waits for a follower (`earshot events`): the owner records decisions on its own thread,
// ahead of the cork an unplug needs, so a follower that stops reading (a pager, a stopped terminal) must cost it
// nothing. Each follower has a bounded `FollowerQueue` that `record` fills under a short mutex (appends only: no
// system call, no I/O under it); one writer thread (EventLog+Followers) drains every queue with non-blocking sends.
// Standard error is no different: its echo of each line goes through a bounded queue of its own, written by a thread
// of its own (StandardStreamWriter), so a standard error nobody reads costs the owner nothing either; and standard
// output, where the foreground player draws its progress line, goes through another of the same.
import EarshotService
import Glibc
import SystemSupport

/// Writes event-log lines to standard error and to every follower (`earshot events`).
public final class EventLog: EventRecording, Sendable {
    /// The most followers at once: each may hold a full queue (see `FollowerQueue.defaultCapacity`).
    public static let followerLimit = 128

    /// The followers, their queues and their writer thread (see EventLog+Followers).
    let followers = FollowerTable()
    /// Whether lines also go to standard error.
    private let echoToStandardError: Bool
    /// Standard error's queue and writer: the echo of lines, and the messages for the user.
    let standardError: StandardStreamWriter
    /// Standard output's queue and writer: the progress line.
    let standardOutput: StandardStreamWriter
    /// The capacity of each follower's queue.
    let followerCapacity: Int
    /// How long a follower may leave a full queue untouched before it is disconnected.
    let stuckLimit: Duration

    /// A log that echoes to standard error when `echoToStandardError` is true. Tests shrink `followerCapacity` and
    /// `stuckLimit`, and hand in their own `standardError` and `standardOutput`.
    public convenience init(
        echoToStandardError: Bool = true, followerCapacity: Int = FollowerQueue.defaultCapacity,
        stuckLimit: Duration = FollowerQueue.stuckLimit
    ) {
        self.init(echoToStandardError: echoToStandardError, followerCapacity: followerCapacity, stuckLimit: stuckLimit,
                  standardError: .standardError(), standardOutput: .standardOutput())
    }

    /// A log echoing to `standardError`, its progress line on `standardOutput`.
    init(
        echoToStandardError: Bool, followerCapacity: Int, stuckLimit: Duration, standardError: StandardStreamWriter,
        standardOutput: StandardStreamWriter = .standardOutput()
    ) {
        self.echoToStandardError = echoToStandardError
        self.standardError = standardError
        self.standardOutput = standardOutput
        self.followerCapacity = followerCapacity
        self.stuckLimit = stuckLimit
    }

    /// Records one line: `time kind key=value ...`. Callers pass only kinds, causes and states. Never waits for a
    /// follower or for standard error: one whose queue is full loses the line.
    public func record(_ kind: String, _ fields: KeyValuePairs<String, String> = [:]) {
        var line = "\(Self.timestamp()) \(kind)"
        for (key, value) in fields { line += " \(key)=\(value)" }
        line += "\n"
        let bytes = Array(line.utf8)
        if echoToStandardError { standardError.append(bytes) }
        queueForFollowers(bytes)
    }

    /// Queues `message` (a whole line, with its newline) for the user on standard error, whether lines are echoed or
    /// not, in order with them; never waits.
    public func tellUser(_ message: String) {
        standardError.append(Array(message.utf8))
    }

    /// Queues `text` (a progress line drawn over the last, or the newline that ends it) for standard output;
    /// never waits.
    public func showProgress(_ text: String) {
        standardOutput.append(Array(text.utf8))
    }

    /// Waits up to `timeout` for each stream until everything queued for standard output and standard error is
    /// written: the last progress line and log lines of a stopping service. Never call it on the owner.
    public func flushStandardStreams(timeout: Duration = .seconds(2)) {
        standardOutput.drain(timeout: timeout)
        standardError.drain(timeout: timeout)
    }

    /// UTC time with milliseconds, e.g. `2026-11-30T07:50:00.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let milliseconds = now.tv_nsec / 1_000_000
        return formatted(
            "%04ld-%02ld-%02ldT%02ld:%02ld:%02ld.%03ldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds))
    }
}
