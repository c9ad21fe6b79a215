// Where the end-to-end tests find the private sound server, the earshot binary and room for files.
//
// scripts/test starts a private sound server, PulseAudio or PipeWire (scripts/lib/soundserver.sh), and
// exports PULSE_SERVER and XDG_RUNTIME_DIR before `swift test`. Without it these tests fail loudly: a
// skipped end-to-end test reads as a pass, and a test that fell back to the user's real server would
// play through real speakers.

#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The environment the end-to-end tests run in: sound server, binary, temporary folders, exclusive access.
enum TestEnvironment {
    /// `PULSE_SERVER`, the private server's address, as exported by scripts/test.
    static var pulseServer: String? { ProcessInfo.processInfo.environment["PULSE_SERVER"] }

    /// `XDG_RUNTIME_DIR`, the private server's runtime folder, as exported by scripts/test.
    static var runtimeDirectory: String? { ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] }

    /// The sink standing in for the user's headphones: the default sink, "unplugged" by unloading its module.
    static let headphones = "headphones"

    /// The sink standing in for the built-in speakers: what remains after an unplug.
    static let speakers = "speakers"

    /// The package root (the folder holding Package.swift), derived from this file's location.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // EndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// A folder private to this test process (fixtures, captured output, scratch folders); removed at exit.
    static var processTemporaryDirectory: URL { processTemporaryDirectoryURL }

    /// Throws unless the private sound server answers `pactl info`.
    ///
    /// Never skip on this error: it means the tests were started without scripts/test.
    /// - Parameter server: the address to check; `PULSE_SERVER` by default.
    static func requireSoundServer(at server: String? = pulseServer) throws {
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
    static func soundServerKind() throws -> SoundServerKind {
        let information = try ProcessRunner.runChecked("pactl", ["info"], timeout: .seconds(15)).standardOutput
        let name = information.split(separator: "\n").first { $0.hasPrefix("Server Name:") } ?? ""
        return name.contains("PipeWire") ? .pipeWire : .pulseAudio
    }

    /// The built `earshot` executable.
    ///
    /// The first that exists of: `$EARSHOT_BINARY`; `earshot` beside the running test binary (the same
    /// build configuration as the tests); `<package root>/.build/debug/earshot`; and the folder that
    /// `swift build --show-bin-path` names. Computed once per process.
    static var earshotBinary: URL {
        get throws { try earshotBinaryLookup.get() }
    }

    /// Starts the earshot binary with `arguments`; its output is captured in files (see `ChildProcess`).
    ///
    /// - Parameters:
    ///   - environment: variables set on top of this process's (which holds PULSE_SERVER and XDG_RUNTIME_DIR).
    ///   - unsetting: variables earshot must not see.
    static func launchEarshot(
        _ arguments: [String], environment: [String: String] = [:], unsetting: Set<String> = []
    ) throws -> ChildProcess {
        try ChildProcess(try earshotBinary.path, arguments, environment: environment, unsetting: unsetting)
    }

    /// Runs `body` with a fresh empty folder that is removed afterwards, also when `body` throws.
    static func withScratchDirectory<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
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
    static func withExclusiveSoundServer<Result>(_ body: () async throws -> Result) async throws -> Result {
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
enum SoundServerKind: Sendable, Equatable {
    /// PulseAudio itself: module-role-cork, `request-cork` events, a null source as the default source.
    case pulseAudio
    /// pipewire-pulse with WirePlumber: no module-role-cork, no cork events, moves done by WirePlumber.
    case pipeWire
}

/// The process-private temporary folder; created on first use and removed when the process exits.
private let processTemporaryDirectoryURL: URL = {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("earshot-e2e-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit {
        try? FileManager.default.removeItem(at: processTemporaryDirectoryURL)
    }
    return url
}()

/// The outcome of looking for the earshot binary, computed once.
private let earshotBinaryLookup: Result<URL, ToolkitError> = {
    var tried: [String] = []
    func existing(_ url: URL) -> URL? {
        tried.append(url.path)
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }
    if let explicit = ProcessInfo.processInfo.environment["EARSHOT_BINARY"], !explicit.isEmpty {
        // An explicit choice that does not exist is a mistake to report, not to paper over.
        if let url = existing(URL(fileURLWithPath: explicit)) { return .success(url) }
        return .failure(ToolkitError("EARSHOT_BINARY=\(explicit) is not an executable file"))
    }
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    if let url = existing(testBinary.deletingLastPathComponent().appendingPathComponent("earshot")) {
        return .success(url)
    }
    let root = TestEnvironment.packageRoot
    if let url = existing(root.appendingPathComponent(".build/debug/earshot")) { return .success(url) }
    if let result = try? ProcessRunner.run(
        "swift", ["build", "--package-path", root.path, "--show-bin-path"], timeout: .seconds(300)),
        result.succeeded,
        let url = existing(URL(fileURLWithPath: result.standardOutput.trimmed).appendingPathComponent("earshot"))
    {
        return .success(url)
    }
    return .failure(ToolkitError("the earshot binary is not built (looked at: \(tried.joined(separator: ", ")))"))
}()

/// An exclusive lock on the private sound server, shared by every test process that uses it.
///
/// It is an advisory `flock` on `$XDG_RUNTIME_DIR/earshot-sound-server.lock` (the private server's runtime
/// folder, so each server has its own). Two tests in one process conflict as well, because each
/// acquisition opens the file anew. Other test targets that play on the server should take the same file.
final class SoundServerLock: Sendable {
    /// The open lock file; `flock` locks belong to it.
    private let descriptor: Int32

    /// The lock file's path.
    static var path: String {
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
    static func acquire(timeout: Duration = .seconds(900)) async throws -> SoundServerLock {
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
    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
