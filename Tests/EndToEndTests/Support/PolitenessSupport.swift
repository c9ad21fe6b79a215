// Shared by PlaybackTests and PolitenessTests: `earshot play` as a child process with a control socket of its
// own, its `status --json`, raw exchanges on the control socket, and the measurements those tests make on
// recordings of the position sweep: where the music stopped and started again, and which moment of the track
// was heard at each edge, also while a phone call plays on the same sink.
//
// Edges are found in two steps. A coarse scan (10 ms steps, 20 ms windows) finds where the sweep is heard at
// all; then, around each edge, the sweep's amplitude at the frequency the track must have there (extrapolated
// from a reading well inside the music) is followed in 0.5 ms steps with a 10 ms window, and the edge is where
// it crosses half its level inside the music: for a hard start or stop that is the edge itself, to about 1 ms.
// A dial tone (350 + 440 Hz) on the same sink does not disturb this: the sweep is read at 700 Hz or more.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

/// `earshot play FILE...` running as a child of the test, with its own control socket in a scratch folder.
final class EarshotPlayer: Sendable {
    /// The running `earshot play`; its standard error is the event log plus error lines.
    let process: ChildProcess
    /// Variables every earshot process of this player gets: its control socket, and empty config/state folders.
    let environment: [String: String]
    /// Standard error goes to a file that can be read at any time (not to a FIFO the test reads itself).
    private let standardErrorIsFile: Bool

    /// Starts `earshot play OPTIONS FILES` with a control socket in `scratch`; does not wait for anything.
    ///
    /// - Parameters:
    ///   - launcher: a command that runs earshot for us (`setpriv ... --`), or empty to start it directly.
    ///   - extraEnvironment: variables earshot gets on top of the player's own.
    ///   - standardError: where its standard error goes instead of a file (a FIFO whose reader is open); then
    ///     `standardError` must not be read (it would wait for the FIFO).
    init(
        playing files: [URL], options: [String] = [], in scratch: URL, launcher: [String] = [],
        extraEnvironment: [String: String] = [:], standardError: URL? = nil
    ) throws {
        let socket = scratch.appendingPathComponent("control.sock").path
        // A Unix socket path is limited to 108 bytes.
        guard socket.utf8.count < 100 else {
            throw ToolkitError("the control socket path is too long for a Unix socket: \(socket)")
        }
        environment = [
            "EARSHOT_SOCKET": socket,
            "XDG_CONFIG_HOME": scratch.appendingPathComponent("config").path,
            "XDG_STATE_HOME": scratch.appendingPathComponent("state").path,
            // The default log level: what a user's journal would hold.
            "EARSHOT_LOG": "",
        ].merging(extraEnvironment) { _, extra in extra }
        let arguments = ["play"] + options + files.map(\.path)
        standardErrorIsFile = standardError == nil
        if let program = launcher.first {
            process = try ChildProcess(program, Array(launcher.dropFirst()) + [try TestEnvironment.earshotBinary.path]
                                           + arguments, environment: environment)
        } else if let standardError {
            process = try ChildProcess(try TestEnvironment.earshotBinary.path, arguments, environment: environment,
                                       standardError: standardError)
        } else {
            process = try TestEnvironment.launchEarshot(arguments, environment: environment)
        }
    }

    /// Kills the player at once (for cleanup; tests that check the exit use `process.terminate`).
    func kill() {
        process.kill()
        _ = process.waitForExit(timeout: .seconds(5))
    }

    /// The player's standard error so far (unless it goes to a FIFO: reading that would wait for the player's end).
    var standardError: String {
        standardErrorIsFile ? process.standardError() : "(standard error goes to a FIFO the test reads)"
    }

    /// Runs `earshot ARGUMENTS` against this player's socket (a non-zero exit is not thrown).
    @discardableResult
    func earshot(_ arguments: [String]) throws -> CommandResult {
        try ProcessRunner.run(
            try TestEnvironment.earshotBinary.path, arguments, environment: environment, timeout: .seconds(20))
    }

    /// Runs `earshot ARGUMENTS` against this player's socket and throws unless it succeeds.
    @discardableResult
    func control(_ arguments: [String]) throws -> CommandResult {
        try earshot(arguments).requireSuccess()
    }

    /// `earshot status --json`, decoded.
    func status() throws -> EarshotStatus {
        try EarshotStatus(printedBy: control(["status", "--json"]))
    }

    /// Polls the status until `condition` holds (a generous wait) and returns that status; throws, quoting the
    /// last status and the log, when `timeout` passes or the player exits.
    @discardableResult
    func waitForStatus(
        _ description: String, timeout: Duration = .seconds(15), _ condition: (EarshotStatus) -> Bool
    ) async throws -> EarshotStatus {
        do {
            return try await pollStatus(description, timeout: timeout, until: condition) {
                guard process.isRunning else {
                    throw ToolkitError(
                        "earshot exited with \(process.exitStatus ?? -1) while waiting until \(description)")
                }
                return try? status()
            }
        } catch {
            throw ToolkitError("\(error); the server now:\n\(ServerControl.summary())\nlog:\n\(standardError)")
        }
    }

    /// Waits until the player has been heard playing for `milliseconds` of the track (the position is what the
    /// server reports as played, so this is past the null sink's late start).
    @discardableResult
    func waitUntilHeard(milliseconds: Int, timeout: Duration = .seconds(20)) async throws -> EarshotStatus {
        try await waitForStatus("earshot has played \(milliseconds) ms", timeout: timeout) {
            $0.playback == "playing" && $0.positionMs >= milliseconds
        }
    }

    /// Our playback stream on the server, if it exists.
    func stream() throws -> SinkInput? {
        try ServerControl.sinkInputs(ofProcess: process.processIdentifier).first
    }

    /// Waits until our playback stream exists and returns it.
    func waitForStream(timeout: Duration = .seconds(15)) async throws -> SinkInput {
        var found: SinkInput?
        try await waitUntil("earshot's stream exists", timeout: timeout) {
            found = try stream()
            return found != nil
        }
        return try #require(found)
    }

    /// Checks that the log (standard error) is there and names none of `secrets`.
    func expectPrivateLog(hiding secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let log = standardError
        #expect(log.contains("event "), "earshot's stderr holds no event log:\n\(log)", sourceLocation: sourceLocation)
        for secret in secrets where !secret.isEmpty {
            #expect(!log.contains(secret), "earshot's stderr contains \"\(secret)\":\n\(log)",
                    sourceLocation: sourceLocation)
        }
    }
}

extension EarshotPlayer {
    /// Has the private server to itself, starts `earshot play` on a position track of `seconds` (under a private
    /// name, in a scratch folder), waits until `heard` milliseconds of it were heard, runs `body`, then kills it.
    static func whilePlaying(
        seconds: Double, heard: Int, configuration: String? = nil, _ body: (EarshotPlayer, URL) async throws -> Void
    ) async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                if let configuration { try writeConfiguration(configuration, in: scratch) }
                let track = try Fixtures.copy(try Fixtures.positionTrack(seconds: seconds), to: scratch,
                                              named: PrivateNames.fileName)
                let player = try EarshotPlayer(playing: [track], in: scratch)
                defer { player.kill() }
                _ = try await player.waitUntilHeard(milliseconds: heard)
                try await body(player, scratch)
            }
        }
    }
}

/// Writes `text` as the configuration file of the players started in `scratch` (their XDG_CONFIG_HOME is
/// scratch/config).
func writeConfiguration(_ text: String, in scratch: URL) throws {
    let folder = scratch.appendingPathComponent("config/earshot", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try Data(text.utf8).write(to: folder.appendingPathComponent("config.json"))
}

/// Reads a status every 25 ms until `condition` holds for it (a generous wait) and returns that status; throws,
/// quoting the last status read, when `timeout` passes or `read` throws. `read` returns nil while there is no
/// answer yet.
func pollStatus<Status: CustomStringConvertible>(
    _ description: String, timeout: Duration, until condition: (Status) -> Bool, read: () throws -> Status?
) async throws -> Status {
    var last: Status?
    do {
        try await waitUntil(description, timeout: timeout, interval: .milliseconds(25)) {
            guard let status = try read() else { return false }
            last = status
            return condition(status)
        }
    } catch {
        throw ToolkitError("\(error); last status: \(last?.description ?? "none")")
    }
    return try #require(last)
}

/// Distinctive names for the tests' audio files, so that a log naming them would be caught.
enum PrivateNames {
    /// The name test tracks are played under.
    static let fileName = "Private Pangolin Track 4e1d.mp3"
    /// `fileName` with the ending of `format` (a FLAC named .mp3 would play too, but a user's files are named right).
    static func fileName(_ format: Fixtures.Format) -> String {
        "Private Pangolin Track 4e1d.\(format.fileExtension)"
    }
    /// What must never appear in a log when `fileName` plays: its name, and a distinctive part of it.
    static let secrets = [fileName, "Pangolin"]
}

/// Talks to the control socket with raw bytes, as a confused or hostile client would.
enum ControlSocketProbe {
    /// Connects to the socket at `path`, writes `payload`, and reads reply lines until `replies` have arrived.
    ///
    /// - Throws: if the socket cannot be reached, or fewer than `replies` lines arrive within `timeout`.
    static func exchange(path: String, payload: [UInt8], replies: Int, timeout: Duration = .seconds(10)) throws
        -> [String]
    {
        let descriptor = try UnixSocket.connect(path: path)
        defer { close(descriptor) }

        var written = 0
        while written < payload.count {
            let count = payload[written...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ToolkitError("writing to the control socket: errno \(errno)") }
            written += count
        }

        var received: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 4096)
        while received.filter({ $0 == UInt8(ascii: "\n") }).count < replies {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw ToolkitError(
                    "only \(String(decoding: received, as: UTF8.self).debugDescription) arrived within \(timeout)")
            }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining.seconds * 1000, 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw ToolkitError("poll(): errno \(errno)") }
            if ready == 0 { continue }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let text = String(decoding: received, as: UTF8.self).debugDescription
                throw ToolkitError("the player closed the connection after \(text)")
            }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The `ok` and `error` fields of a reply line, and its status's `playback` if it carries one.
    static func parse(_ reply: String) -> (ok: Bool?, error: String?, playback: String?) {
        let object = (try? JSONSerialization.jsonObject(with: Data(reply.utf8))) as? [String: Any]
        let status = object?["status"] as? [String: Any]
        return (object?["ok"] as? Bool, object?["error"] as? String, status?["playback"] as? String)
    }
}

/// A stretch of a recording where the position sweep was heard, with its edges and the positions at them.
struct HeardStretch: Sendable, CustomStringConvertible {
    /// The recording time at which the sweep starts being heard, in seconds (about 1 ms).
    let start: Double
    /// The recording time at which it stops being heard, in seconds (about 1 ms).
    let end: Double
    /// The track position heard at `start`, in seconds.
    let positionAtStart: Double
    /// The track position heard at `end`, in seconds.
    let positionAtEnd: Double

    /// How long it lasted, in seconds.
    var length: Double { end - start }

    /// Times and positions in milliseconds, for messages.
    var description: String {
        String(format: "[%.1f..%.1f ms: track %.1f..%.1f ms]", start * 1000, end * 1000, positionAtStart * 1000,
               positionAtEnd * 1000)
    }
}

extension Recording {
    /// The least amplitude (linear) at which the sweep counts as heard; it plays at 0.5 (-6 dBFS), so this is
    /// 14 dB below it and far above what a dial tone leaks into the sweep's band.
    static let sweepDetectionAmplitude = 0.1

    /// The position sweep's position heard at `time`, only if the sweep is really there (amplitude at least
    /// `sweepDetectionAmplitude`), not just a stronger tone outside the band leaking into it.
    func sweepPosition(atTime time: Double, window: Double = 0.020, positions: ClosedRange<Double>) -> Double? {
        guard let position = trackPosition(atTime: time, window: window, positions: positions) else { return nil }
        let frequency = Fixtures.sweepFrequency(atTrackTime: position)
        let amplitude = toneAmplitude(atFrequency: frequency, in: (time - window / 2)..<(time + window / 2))
        return amplitude >= Self.sweepDetectionAmplitude ? position : nil
    }

    /// The stretches of `range` in which the position sweep is heard, with edges to about 1 ms.
    ///
    /// - Parameters:
    ///   - positions: the track positions (seconds) that may be heard; keep the lower end at 0.8 s or more when a
    ///     phone call may play too (the sweep is then at 700 Hz or more, clear of the dial tone).
    ///   - minimumLength: shorter stretches are left out (they cannot be measured; count them as sound instead).
    func sweepStretches(
        within range: Range<Double>? = nil, positions: ClosedRange<Double>, minimumLength: Double = 0.06
    ) -> [HeardStretch] {
        let range = range ?? wholeRange
        let step = 0.010
        var runs: [(first: Double, last: Double)] = []
        for time in stride(from: max(range.lowerBound, 0.010), to: min(range.upperBound, duration - 0.010), by: step)
        where sweepPosition(atTime: time, positions: positions) != nil {
            if let run = runs.last, time - run.last <= step * 1.5 {
                runs[runs.count - 1].last = time
            } else {
                runs.append((time, time))
            }
        }
        return runs.compactMap { run -> HeardStretch? in
            // Coarse edges are within about 10 ms of the truth: read positions 25 ms further inside.
            guard run.last - run.first >= max(minimumLength - 0.02, 0.05) else { return nil }
            let insideStart = run.first + 0.025
            let insideEnd = run.last - 0.025
            guard let positionInsideStart = sweepPosition(atTime: insideStart, positions: positions),
                  let positionInsideEnd = sweepPosition(atTime: insideEnd, positions: positions)
            else { return nil }
            let start = sweepEdge(near: run.first, inside: insideStart, positionInside: positionInsideStart)
            let end = sweepEdge(near: run.last, inside: insideEnd, positionInside: positionInsideEnd)
            guard end - start >= minimumLength else { return nil }
            return HeardStretch(
                start: start, end: end, positionAtStart: positionInsideStart - (insideStart - start),
                positionAtEnd: positionInsideEnd + (end - insideEnd))
        }
    }

    /// The recording time of the sweep's edge near `coarse`, given a time `inside` the music (before the edge
    /// for an end, after it for a start) and the position heard there.
    ///
    /// Follows the amplitude, in a 10 ms window, at the frequency the track has at each moment if it played on
    /// from `inside`, and returns where it crosses half its level at `inside`.
    private func sweepEdge(near coarse: Double, inside: Double, positionInside: Double) -> Double {
        let window = 0.010
        func amplitude(at time: Double) -> Double {
            let frequency = Fixtures.sweepFrequency(atTrackTime: positionInside + (time - inside))
            return toneAmplitude(atFrequency: frequency, in: (time - window / 2)..<(time + window / 2))
        }
        let half = amplitude(at: inside) / 2
        let towardsEdge = coarse > inside ? 1.0 : -1.0
        // From the inside outwards: the first time the level falls below half.
        var previous = (time: inside, level: amplitude(at: inside))
        var time = inside
        let limit = abs(coarse - inside) + 0.020
        while abs(time - inside) < limit {
            time += towardsEdge * 0.0005
            let level = amplitude(at: time)
            if level < half {
                // Between the two samples, linearly.
                let fraction = (previous.level - half) / max(previous.level - level, 1e-9)
                return previous.time + towardsEdge * 0.0005 * fraction
            }
            previous = (time, level)
        }
        return time
    }

    /// How many milliseconds of `range` carry the position sweep, judged every 10 ms with a 20 ms window (so a
    /// blip of a few milliseconds counts as 10 ms). A phone call's dial tone alone does not count.
    func sweepMilliseconds(within range: Range<Double>, positions: ClosedRange<Double>) -> Double {
        guard range.upperBound > range.lowerBound else { return 0 }
        let heard = stride(from: range.lowerBound, to: range.upperBound, by: 0.010).filter {
            sweepPosition(atTime: $0, positions: positions) != nil
        }
        return Double(heard.count) * 10
    }

    /// The stretches of `range` in which the phone call's dial tone is heard (either of its frequencies), merged.
    ///
    /// Found in 10 ms windows (edges to about 10 ms). The sweep itself reads as a dial tone while it is below about
    /// 650 Hz (track positions before 0.6 s): look only where the music is past that.
    func dialToneRanges(within range: Range<Double>) -> [Range<Double>] {
        let all = Fixtures.phoneCallFrequencies.flatMap { toneRanges(atFrequency: $0, amplitude: 0.05, within: range) }
            .sorted { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Double>] = []
        for part in all {
            if let last = merged.last, part.lowerBound <= last.upperBound + 0.015 {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, part.upperBound)
            } else {
                merged.append(part)
            }
        }
        return merged
    }
}

/// Runs `body` with recorders on `sinks`' monitors, started (and receiving data) before it; stops any recorder
/// `body` left running when it throws.
func withMonitorRecorders<Result>(
    _ sinks: [String] = [TestEnvironment.headphones, TestEnvironment.speakers],
    _ body: ([MonitorRecorder]) async throws -> Result
) async throws -> Result {
    let recorders = try await MonitorRecorder.start(sinks: sinks)
    do {
        return try await body(recorders)
    } catch {
        for recorder in recorders where recorder.isRecording {
            _ = try? await recorder.stop()
        }
        throw error
    }
}

/// Stops `recorders` in order and returns their recordings.
func stopRecorders(_ recorders: [MonitorRecorder]) async throws -> [Recording] {
    var recordings: [Recording] = []
    for recorder in recorders {
        recordings.append(try await recorder.stop())
    }
    return recordings
}

/// Prints a measurement in a form that is easy to collect from test logs: `[measure] name: value`.
func report(_ name: String, _ value: Double, unit: String = "ms") {
    print(String(format: "[measure] %@: %.1f %@", name, value, unit))
}
