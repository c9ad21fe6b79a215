// The event log: one line per event with its kind, cause, the resulting playback state and the commands.
// It records kinds and states only: never a path, a title or other user content, at any level.
import Glibc
import Synchronization
import SystemSupport

/// Writes event-log lines to standard error and to every follower (`earshot events`).
public final class EventLog: Sendable {
    /// Followers' socket descriptors; guarded by the mutex, written to outside the audio path.
    private let followers = LockedValue<[Int32]>([])
    /// Whether lines also go to standard error.
    private let echoToStandardError: Bool

    /// A log that echoes to standard error when `echoToStandardError` is true.
    public init(echoToStandardError: Bool = true) {
        self.echoToStandardError = echoToStandardError
    }

    /// Records one line: `time kind key=value ...`. Callers pass only kinds, causes and states.
    public func record(_ kind: String, _ fields: KeyValuePairs<String, String> = [:]) {
        var line = "\(Self.timestamp()) \(kind)"
        for (key, value) in fields { line += " \(key)=\(value)" }
        line += "\n"
        if echoToStandardError { StandardStream.writeError(line) }
        let bytes = Array(line.utf8)
        followers.withLock { descriptors in
            descriptors.removeAll { descriptor in
                bytes.withUnsafeBytes { raw in
                    // MSG_NOSIGNAL: a follower that went away must not kill the service with SIGPIPE.
                    send(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) != raw.count
                }
            }
        }
    }

    /// Adds a follower socket. The log owns nothing: the connection's owner closes it after `unfollow`.
    public func follow(_ descriptor: Int32) {
        followers.withLock { $0.append(descriptor) }
    }

    /// Removes a follower socket.
    public func unfollow(_ descriptor: Int32) {
        followers.withLock { $0.removeAll { $0 == descriptor } }
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
