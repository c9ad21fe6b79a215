// Where the tests find the private sound server and room for files.
//
// scripts/test starts a private sound server, PulseAudio or PipeWire (scripts/lib/soundserver.sh), and
// exports PULSE_SERVER and XDG_RUNTIME_DIR before `swift test`. Without it the tests that need it fail
// loudly: a skipped test reads as a pass, and a test that fell back to the user's real server would
// play through real speakers.

import Foundation
import Glibc
import SystemSupport

/// The environment the tests run in: sound server, temporary folders, exclusive access.
public enum TestEnvironment {
    /// `PULSE_SERVER`, the private server's address, as exported by scripts/test.
    public static var pulseServer: String? { ProcessInfo.processInfo.environment["PULSE_SERVER"] }

    /// `XDG_RUNTIME_DIR`, the private server's runtime folder, as exported by scripts/test.
    public static var runtimeDirectory: String? { ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] }

    /// The sink standing in for the user's headphones: the default sink, "unplugged" by unloading its module.
    public static let headphones = "headphones"

    /// The sink standing in for the built-in speakers: what remains after an unplug.
    public static let speakers = "speakers"

    /// A folder private to this test process (fixtures, captured output, scratch folders); removed at exit.
    public static var processTemporaryDirectory: URL { processTemporaryDirectoryURL }

    /// Throws unless the private sound server answers `pactl info`.
    ///
    /// Never skip on this error: it means the tests were started without scripts/test.
    /// - Parameter server: the address to check; `PULSE_SERVER` by default.
    public static func requireSoundServer(at server: String? = pulseServer) throws {
        guard let server, !server.isEmpty else {
            throw ToolkitError("no private sound server: run scripts/test (PULSE_SERVER is not set)")
        }
        let result: CommandResult
        do {
            result = try ProcessRunner.run(
                "pactl", ["info"], environment: ["PULSE_SERVER": server], timeout: .seconds(15))
        } catch {
            throw ToolkitError("no private sound server: run scripts/test (`pactl info` at \(server): \(error))")
        }
        guard result.succeeded else {
            throw ToolkitError(
                "no private sound server: run scripts/test (`pactl info` at \(server) failed: "
                    + "\(result.standardError.trimmed))")
        }
    }

    /// Which server answers at `PULSE_SERVER`, from the "Server Name" line of `pactl info`.
    ///
    /// Both PipeWires scripts/test can start (0.3.65 and 1.4) are `.pipeWire`. Asked once per process; a failed
    /// question is asked again next time.
    public static func soundServerKind() throws -> SoundServerKind {
        if let known = knownSoundServerKind.withLock({ $0 }) { return known }
        let information = try ProcessRunner.runChecked("pactl", ["info"], timeout: .seconds(15)).standardOutput
        let name = information.split(separator: "\n").first { $0.hasPrefix("Server Name:") } ?? ""
        let kind: SoundServerKind = name.contains("PipeWire") ? .pipeWire : .pulseAudio
        knownSoundServerKind.withLock { $0 = kind }
        return kind
    }

    /// How exactly the server can say where a stopped stream stopped, in seconds: PipeWire corks, moves and drops a
    /// stream at the edge of a graph period, and what it has played of a stream stopped mid-period is known only to
    /// that period. The private PipeWires run with periods of at least `SOUNDSERVER_PERIOD_FRAMES` (1024, exported
    /// by scripts/lib/soundserver.sh) at 48 kHz; PulseAudio stops a stream where it is (0).
    ///
    /// A position kept or resumed after a pause, an unplug or a dead server may be off from what was last heard by
    /// this much more on PipeWire. Seen with 1024-frame periods: a position kept over a call 21.6 ms behind what was
    /// last heard, and a resume 21.4 ms ahead of it; with 512-frame periods (the run of 2026-12-01 in docs/measured.md)
    /// resumes were exact to 0.2 ms.
    public static func serverPeriodSeconds() throws -> Double {
        guard try soundServerKind() == .pipeWire else { return 0 }
        guard let text = ProcessInfo.processInfo.environment["SOUNDSERVER_PERIOD_FRAMES"], let frames = Int(text),
              frames > 0
        else { throw ToolkitError("SOUNDSERVER_PERIOD_FRAMES is not set: run scripts/test") }
        return Double(frames) / 48_000
    }

    /// Runs `body` with a fresh empty folder that is removed afterwards, also when `body` throws.
    public static func withScratchDirectory<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let url = processTemporaryDirectory.appendingPathComponent("scratch-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url) }
        return try await body(url)
    }

    /// Runs `body` with the private sound server to itself, in the standard layout.
    ///
    /// Requires the server (`requireSoundServer()`), then takes `SoundServerLock`, so that no other test of
    /// this or another process plays or unplugs anything meanwhile, and restores the standard layout
    /// (`ServerControl.restoreStandardLayout()`) before and after `body`.
    public static func withExclusiveSoundServer<Result>(_ body: () async throws -> Result) async throws -> Result {
        try requireSoundServer()
        let lock = try await SoundServerLock.acquire()
        defer {
            try? ServerControl.restoreStandardLayout()
            lock.release()
        }
        try ServerControl.restoreStandardLayout()
        return try await body()
    }
}

/// The kind of sound server the tests run against (scripts/test: `EARSHOT_TEST_SERVER`).
public enum SoundServerKind: Sendable, Equatable {
    /// PulseAudio itself: module-role-cork, `request-cork` events, a null source as the default source.
    case pulseAudio
    /// pipewire-pulse with WirePlumber: no module-role-cork, no cork events, moves done by WirePlumber.
    case pipeWire
}

/// The kind of the server at `PULSE_SERVER`, once asked (it does not change when the server restarts).
private let knownSoundServerKind = LockedValue<SoundServerKind?>(nil)

/// The process-private temporary folder; created on first use and removed when the process exits.
private let processTemporaryDirectoryURL: URL = {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("earshot-tests-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit {
        try? FileManager.default.removeItem(at: processTemporaryDirectoryURL)
    }
    return url
}()

/// An exclusive lock on the private sound server, shared by every test process that uses it.
///
/// It is an advisory `flock` on `$XDG_RUNTIME_DIR/earshot-sound-server.lock` (the private server's runtime
/// folder, so each server has its own). Two tests in one process conflict as well, because each
/// acquisition opens the file anew. Other test targets that play on the server should take the same file.
public final class SoundServerLock: Sendable {
    /// The open lock file; `flock` locks belong to it.
    private let descriptor: Int32

    /// The lock file's path.
    public static var path: String {
        let folder = TestEnvironment.runtimeDirectory ?? FileManager.default.temporaryDirectory.path
        return (folder as NSString).appendingPathComponent("earshot-sound-server.lock")
    }

    /// Makes the handle of a lock already taken on `descriptor`.
    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Waits, without blocking a thread, until the lock is free, then takes it.
    ///
    /// - Parameter timeout: how long to wait for other tests to finish; the error names the lock file.
    public static func acquire(timeout: Duration = .seconds(900)) async throws -> SoundServerLock {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ToolkitError("cannot open the sound server lock \(path): errno \(errno)")
        }
        do {
            let description = "the sound server lock \(path) is free"
            try await waitUntil(description, timeout: timeout, interval: .milliseconds(25)) {
                flock(descriptor, LOCK_EX | LOCK_NB) == 0
            }
        } catch {
            close(descriptor)
            throw error
        }
        return SoundServerLock(descriptor: descriptor)
    }

    /// Gives the lock back; call exactly once.
    public func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
