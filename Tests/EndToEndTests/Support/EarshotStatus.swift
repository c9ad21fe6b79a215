// The status every end-to-end test reads: the object `earshot status --json` prints (the control socket's reply
// carries it as `status`), the same for `earshot play` and `earshot serve` (one Player answers both).

import EarshotTestSupport
import Foundation

/// The fields of `earshot status --json` the end-to-end tests read.
struct EarshotStatus: Decodable, Sendable, CustomStringConvertible {
    /// `playing`, `paused` or `stopped`.
    let playback: String
    /// `user`, `interruption`, `resumeDeclined`, `outputLost`, `restored`, ..., or `nil` unless paused.
    let pauseReason: String?
    /// `deviceRemoved`, `portUnplugged`, `serverLost`, `streamFailed` or `stalled` when paused for a lost output.
    let outputLostReason: String?
    /// The user asked to play during an interruption: playback starts when it ends.
    let waitingForInterruptionEnd: Bool
    /// The interruption sources active now (`server`, `stream#N`).
    let activeInterruptions: [String]
    /// The last position heard in the current track, in milliseconds.
    let positionMs: Int
    /// The current track's index in the queue.
    let trackIndex: Int
    /// How many tracks the queue holds.
    let trackCount: Int
    /// A live stream's station name (its `icy-name`), nil for files.
    let station: String?
    /// A live stream's current ICY title, nil for files.
    let streamTitle: String?
    /// A live stream's bytes received and not decoded yet (RULES.md row 24), nil for files.
    let liveBufferBytes: Int?
    /// How far behind live the oldest of them is, in milliseconds, nil for files.
    let liveBufferMs: Int?
    /// Why the player last rejoined a live stream's live edge (`bufferOverflowed`, `userAsked`; rows 32 and 33).
    let liveRejoined: String?
    /// A live stream's lost connection (rows 38-41): `reconnecting`, `waiting`, `gaveUp` or `ended`; nil while
    /// connected.
    let liveNetwork: String?
    /// The stream volume in percent.
    let volume: Int
    /// Rule 23: the rules want the desktop's idle suspend held off (playing, `inhibitIdleSuspend` on).
    let idleInhibitorWanted: Bool
    /// The service that holds it off for Earshot (`portal`, `gnomeSessionManager`, `powerManagement`), nil: none.
    let idleInhibitorHeldBy: String?
    /// The last track that failed, and the kind of failure (never more), or `nil`.
    let lastError: TrackError?
    /// The sound server's name while connected, `nil` while there is none.
    let server: String?
    /// The sink our stream is on, if there is a stream.
    let sink: String?
    /// Whether the stream is really corked (acknowledged by the server).
    let corked: Bool
    /// Whether there is a stream.
    let streamOpen: Bool
    /// Write callbacks that found the ring short (padded with silence).
    let underruns: Int
    /// Times the server ran out of our data while we meant to play.
    let serverUnderflows: Int
    /// How the thread that feeds the server is scheduled (`SCHED_FIFO 10`, `rtkit SCHED_RR N`, `none (reason)`).
    let realtime: String
    /// That thread's kernel thread id, when known.
    let realtimeThread: Int?
    /// The longest the player took to handle one input since it started, in microseconds.
    let slowestHandlingMicros: Int
    /// The kind of input that took it (`request seek`, `decode trackStarted`), nil before any input.
    let slowestHandlingKind: String?
    /// The longest input of each kind seen, in microseconds.
    let slowestHandlingByKind: [String: Int]

    /// `lastError`: a queue index and an error kind.
    struct TrackError: Decodable, Sendable, Equatable {
        /// The failed track's queue index.
        let trackIndex: Int
        /// The kind of failure, e.g. `unreadable`.
        let kind: String
    }

    /// One line for failure messages.
    var description: String {
        "\(playback)(\(pauseReason ?? "-")\(outputLostReason.map { "/" + $0 } ?? "")) track \(trackIndex + 1)/"
            + "\(trackCount) at \(positionMs) ms, volume \(volume)%, waiting \(waitingForInterruptionEnd), "
            + "interruptions \(activeInterruptions), sink \(sink ?? "none"), corked \(corked), stream \(streamOpen), "
            + "server \(server ?? "none"), underruns \(underruns), server underflows \(serverUnderflows)"
            + (lastError.map { ", last error \($0.kind) at track \($0.trackIndex + 1)" } ?? "")
    }
}

extension EarshotStatus {
    /// Decodes the status `earshot status --json` printed in `result`; throws, quoting the output, if it is not one.
    init(printedBy result: CommandResult) throws {
        do {
            self = try JSONDecoder().decode(EarshotStatus.self, from: Data(result.standardOutput.utf8))
        } catch {
            throw ToolkitError("unexpected `earshot status --json` output (\(error)): \(result.standardOutput)")
        }
    }
}
