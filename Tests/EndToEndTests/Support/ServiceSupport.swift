// Running `earshot serve` the way a desktop session does, privately for one test: its own session bus
// (`dbus-daemon --session`), control socket, state and configuration folders, talking to the private sound
// server. Tests drive it with the CLI, with the real `playerctl`, and with signals.
//
// Missing tools (dbus-daemon, playerctl) are failures, never skips, like a missing sound server.

#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Synchronization
import SystemSupport

/// A reply of the control socket to `status` (`{"ok":true,"status":{...}}`), its status decoded as `Status`.
/// `earshot status --json` prints the status object alone.
struct StatusReply<Status: Decodable>: Decodable {
    /// Whether the request succeeded.
    let ok: Bool
    /// The status object.
    let status: Status
}

/// One private Earshot service setup: a folder with its socket, state and configuration, and a session bus.
///
/// Services started with `startService()` are killed (SIGKILL) when the `run` that made the harness ends, as
/// is the bus; a test that wants a clean stop calls `stopService(_:)` itself.
final class ServiceHarness: Sendable {
    /// The test's folder.
    let root: URL
    /// The control socket (`EARSHOT_SOCKET`).
    let socketPath: String
    /// `XDG_STATE_HOME`.
    let stateHome: URL
    /// `XDG_CONFIG_HOME`.
    let configHome: URL
    /// `XDG_CACHE_HOME` (the cover-art cache is `earshot/art` in it).
    let cacheHome: URL
    /// The session bus the service and playerctl use.
    let bus: PrivateSessionBus
    /// The address the bus printed when it started (with its guid), which every service and playerctl gets: after a
    /// `bus.restart()` it names the old daemon's guid, as a session's environment would.
    private let busAddress: String
    /// Every service started, for the final cleanup.
    private let services = LockedValue<[ChildProcess]>([])

    /// The folder holding the state file (`$XDG_STATE_HOME/earshot`).
    var stateDirectory: URL { stateHome.appendingPathComponent("earshot", isDirectory: true) }
    /// The state file (`$XDG_STATE_HOME/earshot/state.json`).
    var stateFile: URL { stateDirectory.appendingPathComponent("state.json") }
    /// The position file (`$XDG_STATE_HOME/earshot/position.json`), which wins over the state file's position for its
    /// own queue (`queueId`).
    var positionFile: URL { stateDirectory.appendingPathComponent("position.json") }
    /// The configuration file (`$XDG_CONFIG_HOME/earshot/config.json`).
    var configFile: URL { configHome.appendingPathComponent("earshot/config.json") }

    /// The variables every earshot and playerctl process of this harness gets on top of the test's own.
    var environment: [String: String] {
        [
            "PULSE_SERVER": TestEnvironment.pulseServer ?? "",
            "DBUS_SESSION_BUS_ADDRESS": busAddress,
            "EARSHOT_SOCKET": socketPath,
            "XDG_STATE_HOME": stateHome.path,
            "XDG_CONFIG_HOME": configHome.path,
            "XDG_CACHE_HOME": cacheHome.path,
            // MPD's stored playlists (and any other data) stay in the test's folder.
            "XDG_DATA_HOME": root.appendingPathComponent("data", isDirectory: true).path,
            // The default log level: what a user's journal would hold.
            "EARSHOT_LOG": "",
        ]
    }

    /// Makes the folders below `root` and starts the bus.
    private init(root: URL) async throws {
        self.root = root
        socketPath = root.appendingPathComponent("control.sock").path
        // A Unix socket path is limited to 108 bytes.
        guard socketPath.utf8.count < 100 else {
            throw ToolkitError("the control socket path is too long for a Unix socket: \(socketPath)")
        }
        stateHome = root.appendingPathComponent("state", isDirectory: true)
        configHome = root.appendingPathComponent("config", isDirectory: true)
        cacheHome = root.appendingPathComponent("cache", isDirectory: true)
        for folder in [stateHome, configHome] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        // The music library's default folder is the user's XDG music folder: a folder of this harness that does not
        // exist, so that no service scans the real ~/Music of whoever runs the tests (a test names its own folders).
        try Data("XDG_MUSIC_DIR=\"\(root.appendingPathComponent("no-music").path)\"\n".utf8)
            .write(to: configHome.appendingPathComponent("user-dirs.dirs"))
        bus = try PrivateSessionBus(in: root)
        busAddress = bus.printedAddress
    }

    /// Throws unless the sound server answers and dbus-daemon and playerctl are installed: never skip.
    static func requirePrerequisites() throws {
        try TestEnvironment.requireSoundServer()
        for (tool, package) in [("dbus-daemon", "dbus-daemon"), ("playerctl", "playerctl")] {
            do {
                _ = try ProcessRunner.locate(tool)
            } catch {
                throw ToolkitError("\(tool) is needed for the service tests: apt-get install \(package) (\(error))")
            }
        }
        _ = try TestEnvironment.earshotBinary
    }

    /// Runs `body` with a fresh harness in a scratch folder, with the sound server to itself; afterwards
    /// kills every service the harness started and its bus, also when `body` throws.
    static func run<Result>(_ body: (ServiceHarness) async throws -> Result) async throws -> Result {
        try requirePrerequisites()
        return try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let harness = try await ServiceHarness(root: scratch)
                defer { harness.cleanUp() }
                return try await body(harness)
            }
        }
    }

    /// Kills the services still running and the bus.
    private func cleanUp() {
        for service in services.withLock({ $0 }) where service.isRunning {
            service.kill()
            _ = service.waitForExit(timeout: .seconds(5))
        }
        bus.stop()
    }

    /// Starts `earshot serve` without waiting for it; for tests that expect it to exit.
    /// `extraEnvironment` goes on top of `environment` (a fake logind's `DBUS_SYSTEM_BUS_ADDRESS`).
    /// `launcher` runs it (`setpriv ...`, which then `exec`s earshot), or nothing to start it directly.
    func spawnService(extraEnvironment: [String: String] = [:], launcher: [String] = []) throws -> ChildProcess {
        let command = launcher + [try TestEnvironment.earshotBinary.path, "serve"]
        let service = try ChildProcess(
            command[0], Array(command.dropFirst()),
            environment: environment.merging(extraEnvironment) { _, extra in extra })
        services.withLock { $0.append(service) }
        return service
    }

    /// Starts `earshot serve` and waits until its control socket answers `status --json` (and, with
    /// `waitForMPRIS`, until `playerctl -l` lists it).
    func startService(
        waitForMPRIS: Bool = false, extraEnvironment: [String: String] = [:], launcher: [String] = [],
        timeout: Duration = .seconds(20)
    ) async throws -> ChildProcess {
        let service = try spawnService(extraEnvironment: extraEnvironment, launcher: launcher)
        // Asked on the socket from here: starting an `earshot status` process per poll would cost more than the
        // wait itself on a loaded machine.
        let ready = "earshot serve answers `status` on its socket"
        try await waitUntil(ready, timeout: timeout, interval: .milliseconds(5)) {
            guard service.isRunning else {
                throw ToolkitError(
                    "earshot serve exited with \(service.exitStatus ?? -1): \(service.standardError().trimmed)")
            }
            return (try? request(["command": "status"], timeout: .seconds(2)))?["ok"] as? Bool == true
        }
        if waitForMPRIS {
            try await waitUntil("`playerctl -l` lists earshot", timeout: timeout) {
                try playerctl(["-l"]).standardOutput.components(separatedBy: "\n").contains("earshot")
            }
        }
        return service
    }

    /// Stops `service` with SIGTERM, as systemd does, and returns its exit status (SIGKILL after `grace`).
    func stopService(_ service: ChildProcess, grace: Duration = .seconds(10)) async -> Int32 {
        await service.terminate(grace: grace)
    }

    /// Runs `earshot ARGUMENTS` as a client of this harness's service (a non-zero exit is not thrown).
    @discardableResult
    func earshot(_ arguments: [String], timeout: Duration = .seconds(20)) throws -> CommandResult {
        try ProcessRunner.run(
            try TestEnvironment.earshotBinary.path, arguments, environment: environment, timeout: timeout)
    }

    /// Runs `earshot ARGUMENTS` given as raw bytes (file names that are not UTF-8); throws unless it succeeds.
    @discardableResult
    func earshotChecked(rawArguments: [[UInt8]], timeout: Duration = .seconds(20)) throws -> CommandResult {
        try ProcessRunner.run(
            try TestEnvironment.earshotBinary.path, rawArguments: rawArguments, environment: environment,
            timeout: timeout
        ).requireSuccess()
    }

    /// Runs `earshot ARGUMENTS` and throws unless it succeeds.
    @discardableResult
    func earshotChecked(_ arguments: [String], timeout: Duration = .seconds(20)) throws -> CommandResult {
        try earshot(arguments, timeout: timeout).requireSuccess()
    }

    /// The service's `earshot status --json`.
    func status() throws -> EarshotStatus {
        try EarshotStatus(printedBy: earshotChecked(["status", "--json"]))
    }

    /// Polls the status until `condition` holds (a generous wait) and returns that status; throws, quoting the
    /// last status and the service's log, when `timeout` passes or `service` exits.
    @discardableResult
    func waitForStatus(
        of service: ChildProcess, _ description: String, timeout: Duration = .seconds(20),
        _ condition: (EarshotStatus) -> Bool
    ) async throws -> EarshotStatus {
        do {
            return try await pollStatus(description, timeout: timeout, until: condition) {
                guard service.isRunning else {
                    throw ToolkitError("earshot serve exited with \(service.exitStatus ?? -1) while waiting until "
                        + description)
                }
                return try? status()
            }
        } catch {
            throw ToolkitError(
                "\(error); the server now:\n\(ServerControl.summary())\nlog:\n" + service.standardError())
        }
    }

    /// Polls `status()` until `condition` holds (a generous wait) and returns that status; throws, quoting the last
    /// status, when `timeout` passes.
    @discardableResult
    func waitForStatus(
        _ description: String, timeout: Duration = .seconds(20), _ condition: (EarshotStatus) -> Bool
    ) async throws -> EarshotStatus {
        try await pollStatus(description, timeout: timeout, until: condition) { try? status() }
    }

    /// The longest position track, copied into this harness's folder under a private name (`PrivateNames`).
    func privatePositionTrack() throws -> URL {
        try Fixtures.copy(
            try Fixtures.positionTrack(seconds: Fixtures.longestPositionTrack), to: root, named: PrivateNames.fileName)
    }

    /// Sends one request (`{"command": ...}`) on the control socket from this process, as the CLI would, and
    /// returns the decoded reply. Much cheaper than running `earshot`, for tests that send many.
    ///
    /// - Throws: if the socket cannot be reached, no reply arrives within `timeout`, or it is not a JSON object.
    @discardableResult
    func request(_ fields: [String: Any], timeout: Duration = .seconds(20)) throws -> [String: Any] {
        let line = try JSONSerialization.data(withJSONObject: fields)
        let replies = try ControlSocketProbe.exchange(
            path: socketPath, payload: Array(line) + [UInt8(ascii: "\n")], replies: 1, timeout: timeout)
        guard let reply = try JSONSerialization.jsonObject(with: Data(replies[0].utf8)) as? [String: Any] else {
            throw ToolkitError("the reply to \(fields) is not a JSON object: \(replies[0])")
        }
        return reply
    }

    /// The service's status asked on the control socket from this process (no `earshot` process started).
    func socketStatus() throws -> EarshotStatus {
        let line = Array(#"{"command":"status"}"#.utf8) + [UInt8(ascii: "\n")]
        let reply = try ControlSocketProbe.exchange(path: socketPath, payload: line, replies: 1, timeout: .seconds(20))
        do {
            return try JSONDecoder().decode(StatusReply<EarshotStatus>.self, from: Data(reply[0].utf8)).status
        } catch {
            throw ToolkitError("unexpected reply to `status` (\(error)): \(reply[0])")
        }
    }

    /// Sends a request like `request(_:timeout:)` and throws unless the reply says `ok`.
    @discardableResult
    func requestChecked(_ fields: [String: Any], timeout: Duration = .seconds(20)) throws -> [String: Any] {
        let reply = try request(fields, timeout: timeout)
        guard reply["ok"] as? Bool == true else { throw ToolkitError("\(fields) was refused: \(reply)") }
        return reply
    }

    /// Runs `playerctl ARGUMENTS` on this harness's bus (a non-zero exit is not thrown).
    @discardableResult
    func playerctl(_ arguments: [String]) throws -> CommandResult {
        try ProcessRunner.run("playerctl", arguments, environment: environment, timeout: .seconds(15))
    }

    /// Runs `playerctl -p earshot ARGUMENTS` and returns its trimmed standard output; throws if it fails.
    @discardableResult
    func playerctlEarshot(_ arguments: [String]) throws -> String {
        try playerctl(["-p", "earshot"] + arguments).requireSuccess().standardOutput.trimmed
    }

    /// Polls `value` until it equals `expected` or `timeout` passes, and returns the last value read, for
    /// the caller to compare strictly (a generous wait, a strict check).
    func settle<Value: Equatable & Sendable>(
        _ expected: Value, timeout: Duration = .seconds(10), _ value: () throws -> Value
    ) async throws -> Value {
        var last = try value()
        let deadline = ContinuousClock.now + timeout
        while last != expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            last = try value()
        }
        return last
    }

    /// Writes `text` as the configuration file.
    func writeConfiguration(_ text: String) throws {
        try FileManager.default.createDirectory(
            at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: configFile)
    }
}

/// A flag one thread raises and another reads, to stop a background loop.
final class StopFlag: Sendable {
    /// Whether stopping was asked for.
    private let raised = Atomic<Bool>(false)

    /// Whether `raise()` was called.
    var isRaised: Bool { raised.load(ordering: .acquiring) }

    /// Asks the loop to stop.
    func raise() {
        raised.store(true, ordering: .releasing)
    }
}
