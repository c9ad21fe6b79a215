// Running other programs from the tests: short commands (pactl, sox, lame, playerctl) with a timeout,
// long-running children (the earshot binary, paplay, parec, dbus-daemon) that a test stops itself, and polling.
//
// Output always goes to files, never pipes: a pipe that nobody drains blocks a chatty child, and a
// file can still be read after the child was killed. Children are started with posix_spawn, never with
// Foundation's Process: on Linux every Process leaks itself and what it holds (swift-corelibs-foundation
// SR-12551), which the AddressSanitizer run's leak check reports, and it hands the child the test thread's
// signal mask (see `ChildProcess`). Locks are NSLock or SystemSupport's LockedValue, not Synchronization's Mutex:
// ThreadSanitizer on Linux cannot see Mutex's futex hand-offs and would report false races in the sanitizer runs,
// which use this file.

import Foundation
import Glibc
import SystemSupport

/// An error raised by the test toolkit; its message says what failed and how to fix it.
public struct ToolkitError: Error, CustomStringConvertible {
    /// The human-readable explanation shown in the test report.
    public let description: String

    /// Makes an error carrying `description` as its message.
    public init(_ description: String) {
        self.description = description
    }
}

/// The outcome of a command that ran to completion.
public struct CommandResult: Sendable {
    /// The command line, for messages.
    public let commandLine: String
    /// The exit status, or the negated signal number when the command was killed by a signal.
    public let status: Int32
    /// Everything the command wrote to standard output.
    public let standardOutput: String
    /// Everything the command wrote to standard error.
    public let standardError: String

    /// Whether the command exited with status 0.
    public var succeeded: Bool { status == 0 }

    /// Returns `self` if the command succeeded, and throws an error quoting its standard error otherwise.
    @discardableResult
    public func requireSuccess() throws -> CommandResult {
        guard succeeded else {
            throw ToolkitError("`\(commandLine)` failed with status \(status): \(standardError.trimmed)")
        }
        return self
    }
}

/// Runs short commands with a timeout and finds programs on `PATH`.
public enum ProcessRunner {
    /// The folder, private to this test process, that holds captured output files.
    public static let outputDirectory: URL = {
        let url = TestEnvironment.processTemporaryDirectory.appendingPathComponent("output", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// The absolute path of `program`: itself if it contains a slash, else the first match on `PATH`.
    public static func locate(_ program: String) throws -> URL {
        if program.contains("/") {
            return URL(fileURLWithPath: program)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(program)
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw ToolkitError("`\(program)` is not installed (not found on PATH \(path))")
    }

    /// The absolute path of the installed `tool`; throws, naming the Debian `package` to install, when it is missing.
    ///
    /// A missing tool is a failure, never a skip: a suite must not pass by testing nothing.
    public static func requireTool(_ tool: String, package: String) throws -> String {
        do {
            return try locate(tool).path
        } catch {
            throw ToolkitError("\(tool) is needed by the tests: apt-get install \(package) (\(error))")
        }
    }

    /// Runs `program` with `arguments` to completion and returns its status and output (see `ChildProcess`).
    ///
    /// - Parameters:
    ///   - environment: variables set on top of this process's environment, or all of it (`inheritsEnvironment`).
    ///   - inheritsEnvironment: `false` gives the command exactly `environment` and nothing of this process's.
    ///   - timeout: how long the command may take; past it the command is killed and an error thrown.
    /// - Throws: if the program cannot be started or does not finish within `timeout`.
    ///   A non-zero exit is not an error here: call `requireSuccess()` on the result.
    public static func run(
        _ program: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true,
        timeout: Duration = .seconds(60)
    ) throws -> CommandResult {
        try run(program, rawArguments: arguments.map { Array($0.utf8) }, environment: environment,
                inheritsEnvironment: inheritsEnvironment, timeout: timeout)
    }

    /// Runs `program` like `run(_:_:environment:inheritsEnvironment:timeout:)`, with arguments given as raw bytes
    /// (a file name that is not UTF-8 cannot be a Swift String).
    public static func run(
        _ program: String,
        rawArguments: [[UInt8]],
        environment: [String: String] = [:],
        inheritsEnvironment: Bool = true,
        timeout: Duration = .seconds(60)
    ) throws -> CommandResult {
        let child = try ChildProcess(
            program, rawArguments: rawArguments, environment: environment, inheritsEnvironment: inheritsEnvironment)
        guard child.waitForExit(timeout: timeout) else {
            child.kill()
            throw ToolkitError(
                "`\(child.commandLine)` did not finish within \(timeout); stderr: \(child.standardError().trimmed)")
        }
        defer { child.removeOutputFiles() }
        return CommandResult(
            commandLine: child.commandLine,
            status: child.exitStatus ?? -1,
            standardOutput: child.standardOutput(),
            standardError: child.standardError())
    }

    /// Runs `program` like `run(_:_:environment:inheritsEnvironment:timeout:)` and throws unless it exits with 0.
    @discardableResult
    public static func runChecked(
        _ program: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) throws -> CommandResult {
        try run(program, arguments, environment: environment, timeout: timeout).requireSuccess()
    }
}

/// A child process that runs until it exits or the test stops it (earshot, paplay, parec, dbus-daemon).
///
/// Started with `posix_spawn`, not Foundation's `Process`: tests run on threads that block almost every
/// signal, a spawned child inherits that mask, and such a child ignores SIGTERM and SIGINT (parec did,
/// and so would earshot). Here the child starts with no signal blocked and every signal at its default.
/// Standard output and error go to files that can be read at any time, also after it ended; standard
/// input is `/dev/null` unless a file is named. The child is not stopped when this object goes away: call
/// `terminate` or `kill`.
public final class ChildProcess: @unchecked Sendable {
    // Unchecked Sendable: `reapedStatus` is only touched under `lock`; everything else is immutable.
    /// The command line, for messages.
    public let commandLine: String
    /// The file receiving the child's standard output.
    public let standardOutputURL: URL
    /// The file receiving the child's standard error.
    public let standardErrorURL: URL
    /// The child's process id.
    public let processIdentifier: pid_t
    /// Guards `reapedStatus`.
    private let lock = NSLock()
    /// The raw `waitpid` status once the child has been reaped. Signals are sent under `lock` only
    /// while it is `nil`, so a reaped (and perhaps reused) process id is never signalled.
    private var reapedStatus: Int32?
    /// Signalled once, by the waiter thread, after the child has been reaped.
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `program` (a name on `PATH` or a path) with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: variables set on top of this process's environment, or all of it (`inheritsEnvironment`).
    ///   - unsetting: variables of this process's environment that the child must not see.
    ///   - inheritsEnvironment: `false` gives the child exactly `environment` and nothing of this process's.
    ///   - standardOutput: where standard output goes; a fresh file in `ProcessRunner.outputDirectory` if `nil`.
    ///   - standardError: where standard error goes, the same way (a FIFO must have a reader open already).
    ///   - standardInput: what the child reads (a FIFO the test writes commands to); `/dev/null` if `nil`.
    /// - Throws: if the program is not installed or cannot be started.
    public convenience init(
        _ program: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        unsetting: Set<String> = [],
        inheritsEnvironment: Bool = true,
        standardOutput: URL? = nil,
        standardError: URL? = nil,
        standardInput: URL? = nil
    ) throws {
        try self.init(program, rawArguments: arguments.map { Array($0.utf8) }, environment: environment,
                      unsetting: unsetting, inheritsEnvironment: inheritsEnvironment, standardOutput: standardOutput,
                      standardError: standardError, standardInput: standardInput)
    }

    /// Starts `program` with arguments given as raw bytes (which need not be UTF-8); otherwise as
    /// `init(_:_:environment:unsetting:inheritsEnvironment:standardOutput:)`. Messages show them decoded.
    public init(
        _ program: String,
        rawArguments arguments: [[UInt8]],
        environment: [String: String] = [:],
        unsetting: Set<String> = [],
        inheritsEnvironment: Bool = true,
        standardOutput: URL? = nil,
        standardError: URL? = nil,
        standardInput: URL? = nil
    ) throws {
        let executable = try ProcessRunner.locate(program)
        let commandLine = ([program] + arguments.map { String(decoding: $0, as: UTF8.self) }).joined(separator: " ")
        self.commandLine = commandLine
        let stem = "\(executable.lastPathComponent)-\(UUID().uuidString)"
        standardOutputURL = standardOutput
            ?? ProcessRunner.outputDirectory.appendingPathComponent("\(stem).stdout")
        standardErrorURL = standardError ?? ProcessRunner.outputDirectory.appendingPathComponent("\(stem).stderr")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let writeFlags = O_WRONLY | O_CREAT | O_TRUNC
        posix_spawn_file_actions_addopen(&actions, 0, standardInput?.path ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutputURL.path, writeFlags, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, standardErrorURL.path, writeFlags, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let inherited = inheritsEnvironment ? ProcessInfo.processInfo.environment : [:]
        let variables = inherited.filter { !unsetting.contains($0.key) }.merging(environment) { _, new in new }
        let argv = ([Array(executable.path.utf8)] + arguments).map { bytes in
            (bytes + [0]).withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { strdup($0.baseAddress!) }
            }
        } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var spawned: pid_t = 0
        let result = posix_spawn(&spawned, executable.path, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw ToolkitError("cannot start `\(commandLine)`: \(String(cString: strerror(result)))")
        }
        let pid = spawned
        processIdentifier = pid

        // The waiter thread (it keeps `self` alive until the child ends) first waits without reaping, so
        // that `signal` can never hit a recycled process id.
        Thread.detachNewThread { [self] in
            var information = siginfo_t()
            while waitid(P_PID, id_t(pid), &information, WEXITED | WNOWAIT) != 0, errno == EINTR {}
            var status: Int32 = 0
            lock.withLock {
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                reapedStatus = status
            }
            exited.signal()
        }
    }

    /// Whether the child is still running (has not been reaped).
    public var isRunning: Bool { lock.withLock { reapedStatus == nil } }

    /// The exit status once the child has ended (the negated signal number if a signal ended it), else `nil`.
    public var exitStatus: Int32? {
        lock.withLock {
            // Decoded by hand: the W* macros are not imported into Swift.
            reapedStatus.map { ($0 & 0x7f) == 0 ? ($0 >> 8) & 0xff : -($0 & 0x7f) }
        }
    }

    /// What the child has written to standard output so far.
    public func standardOutput() -> String {
        (try? String(contentsOf: standardOutputURL, encoding: .utf8)) ?? ""
    }

    /// What the child has written to standard error so far.
    public func standardError() -> String {
        (try? String(contentsOf: standardErrorURL, encoding: .utf8)) ?? ""
    }

    /// Deletes the files that captured the child's output (a `standardOutput` given to `init` included).
    public func removeOutputFiles() {
        try? FileManager.default.removeItem(at: standardOutputURL)
        try? FileManager.default.removeItem(at: standardErrorURL)
    }

    /// Sends `signalNumber` (for example `SIGINT`) to the child if it is still running.
    public func signal(_ signalNumber: Int32) {
        // Under the lock, so the child cannot be reaped (and its id reused) between the check and the kill.
        lock.withLock {
            if reapedStatus == nil {
                _ = Glibc.kill(processIdentifier, signalNumber)
            }
        }
    }

    /// Kills the child at once with `SIGKILL` and waits (at most 5 s) until it has been reaped.
    ///
    /// SIGKILL because a child may have inherited SIGTERM blocked (dbus-daemon from the test runner).
    public func kill() {
        signal(SIGKILL)
        _ = waitForExit(timeout: .seconds(5))
    }

    /// Blocks until the child exits or `timeout` passes; returns whether it exited.
    public func waitForExit(timeout: Duration) -> Bool {
        guard exited.wait(timeout: .now() + timeout.timeInterval) == .success else { return false }
        // Leave the semaphore signalled so that later waits return at once.
        exited.signal()
        return true
    }

    /// Waits, without blocking a thread, until the child exits or `timeout` passes; returns whether it exited.
    public func exit(within timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Stops the child: `SIGTERM`, then `SIGKILL` if it is still running after `grace`.
    ///
    /// - Returns: the exit status (negated signal number if a signal ended it).
    @discardableResult
    public func terminate(grace: Duration = .seconds(5)) async -> Int32 {
        signal(SIGTERM)
        if await !exit(within: grace) {
            signal(SIGKILL)
            _ = await exit(within: .seconds(10))
        }
        return exitStatus ?? -1
    }
}

/// Polls `condition` until it returns `true`, failing loudly if `timeout` passes first.
///
/// - Parameters:
///   - description: what is awaited, for the error message ("the music stream is corked").
///   - timeout: how long to wait; be generous, the test machine may be loaded.
///   - interval: the pause between polls.
///   - condition: checked once at once and then after every `interval`; an error it throws ends the wait.
/// - Returns: how long the wait took.
@discardableResult
public func waitUntil(
    _ description: String,
    timeout: Duration,
    interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws -> Duration {
    let start = ContinuousClock.now
    let deadline = start + timeout
    while true {
        if try await condition() {
            return ContinuousClock.now - start
        }
        if ContinuousClock.now >= deadline {
            throw ToolkitError("timed out after \(timeout) waiting until \(description)")
        }
        try await Task.sleep(for: interval)
    }
}

extension Duration {
    /// This duration in seconds, as a `Double`.
    public var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }

    /// This duration in seconds, as Dispatch expects it.
    public var timeInterval: DispatchTimeInterval {
        .nanoseconds(Int(min(seconds * 1e9, Double(Int.max / 2))))
    }
}

extension String {
    /// This text without leading and trailing white space and newlines.
    public var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
