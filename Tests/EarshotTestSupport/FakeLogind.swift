// A fake logind for the session tests (RULES.md rule 19): Debian's python3-dbusmock with its logind template, run by
// /usr/bin/python3 on a private bus that stands in for the system bus (a `PrivateSessionBus`: a bus daemon's session
// configuration serves one client as well as the system one). It owns `org.freedesktop.login1` there, keeps the
// inhibitor locks its clients take, and emits the signals a test asks for; busctl drives it. Missing tools are
// failures, never skips.

import Foundation
import Glibc
import SystemSupport

/// python3-dbusmock's logind on a private bus, with one active session of the current user, set as the user's display
/// session (what `earshot serve` as a systemd user service follows).
public final class FakeLogind: Sendable {
    /// The bus standing in for the system bus; give its `address` as `DBUS_SYSTEM_BUS_ADDRESS`.
    public let bus: PrivateSessionBus
    /// The session's id.
    public static let sessionID = "c1"
    /// The session's object path.
    public static let sessionPath = "/org/freedesktop/login1/session/c1"
    private static let manager = "/org/freedesktop/login1"
    private let busctl: String
    /// The mock running now (a restart starts another).
    private let mock: LockedValue<ChildProcess>

    /// Starts the bus and the mock, waits until logind answers on it, and adds the session.
    ///
    /// - Throws: when dbus-daemon, busctl, /usr/bin/python3 or python3-dbusmock is missing, or the mock does not come
    ///   up within 10 s.
    public init() throws {
        busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            throw ToolkitError("/usr/bin/python3 is needed for the fake logind: apt-get install python3-dbusmock")
        }
        bus = try PrivateSessionBus()
        mock = LockedValue(try Self.launchMock(on: bus))
        do {
            try setUp()
        } catch {
            stop()
            throw error
        }
    }

    /// Starts python3-dbusmock's logind template on `bus` (/usr/bin/python3 by name: Debian's dbusmock lives in its
    /// dist-packages, which another python3 on PATH lacks).
    private static func launchMock(on bus: PrivateSessionBus) throws -> ChildProcess {
        try ChildProcess(
            "/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", "logind"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin", "HOME": bus.directory.path],
            inheritsEnvironment: false)
    }

    /// Waits until the mock answers, then adds the session of the current user as its display session.
    private func setUp() throws {
        let running = mock.withLock { $0 }
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? manager("ListInhibitors").succeeded) != true {
            guard running.isRunning, ContinuousClock.now < deadline else {
                throw ToolkitError("python3-dbusmock's logind did not come up (apt-get install python3-dbusmock): "
                    + running.standardError().trimmed)
            }
            usleep(20_000)
        }
        let uid = "\(getuid())"
        // The template's GetUser joins a string and a number, which Python refuses: replaced by one that works.
        try mockCall(Self.manager, "AddMethod", "sssss", ["org.freedesktop.login1.Manager", "GetUser", "u", "o",
                                                          "ret = '/org/freedesktop/login1/user/%d' % args[0]"])
        try mockCall(Self.manager, "AddSession", "ssusb", [Self.sessionID, "seat0", uid, "earshot-test", "true"])
        try run(["set-property", "org.freedesktop.login1", "/org/freedesktop/login1/user/\(uid)",
                 "org.freedesktop.login1.User", "Display", "(so)", Self.sessionID, Self.sessionPath])
    }

    deinit {
        stop()
    }

    /// Stops the mock and its bus.
    public func stop() {
        mock.withLock { $0 }.kill()
        bus.stop()
    }

    /// Restarts the bus standing in for the system bus (killed, as a crash would, and started at the same address)
    /// and the mock on it, with the same session: what a client sees when the system bus goes away and comes back.
    public func restartBus() throws {
        mock.withLock { $0 }.kill()
        try bus.restart()
        let fresh = try Self.launchMock(on: bus)
        mock.withLock { $0 = fresh }
        try setUp()
    }

    /// Emits `PrepareForSleep(starting)` from the manager: `true` announces a sleep, `false` the wake.
    public func prepareForSleep(_ starting: Bool) throws {
        try emitManagerSignal("PrepareForSleep", signature: "b", value: starting ? "true" : "false")
    }

    /// Emits the manager's signal `name` with one argument of type `signature` (busctl's text for `value`): also a
    /// malformed one, as a faulty logind might send.
    public func emitManagerSignal(_ name: String, signature: String, value: String) throws {
        try mockCall(Self.manager, "EmitSignal", "sssav", [
            "org.freedesktop.login1.Manager", name, signature, "1", signature, value,
        ])
    }

    /// Sets the session's `Active` property, announced with PropertiesChanged (another session taking the seat).
    public func setActive(_ active: Bool) throws {
        try mockCall(Self.sessionPath, "UpdateProperties", "sa{sv}", [
            "org.freedesktop.login1.Session", "1", "Active", "b", active ? "true" : "false",
        ])
    }

    /// Locks the session as logind does: the `Lock` signal, then `LockedHint` set by the screen locker.
    public func lock() throws {
        try run(["call", "org.freedesktop.login1", Self.sessionPath, "org.freedesktop.login1.Session", "Lock"])
        try run(["call", "org.freedesktop.login1", Self.sessionPath, "org.freedesktop.login1.Session",
                 "SetLockedHint", "b", "true"])
    }

    /// The `who` of every inhibitor lock held now.
    public func inhibitorHolders() throws -> [String] {
        // `{"type":"a(ssssuu)","data":[[["sleep","Earshot","why","delay",uid,pid], ...]]}`.
        let output = try manager("ListInhibitors", json: true).requireSuccess().standardOutput
        guard let reply = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let data = reply["data"] as? [Any], let locks = data.first as? [[Any]] else {
            throw ToolkitError("unexpected ListInhibitors reply: \(output)")
        }
        return locks.compactMap { $0.count > 1 ? $0[1] as? String : nil }
    }

    private func manager(_ method: String, json: Bool = false) throws -> CommandResult {
        let call = ["call", "org.freedesktop.login1", Self.manager, "org.freedesktop.login1.Manager", method]
        return try ProcessRunner.run(
            busctl, ["--address=\(bus.address)"] + (json ? ["--json=short"] : []) + call, inheritsEnvironment: false,
            timeout: .seconds(5))
    }

    private func mockCall(_ path: String, _ method: String, _ signature: String, _ arguments: [String]) throws {
        try run(["call", "org.freedesktop.login1", path, "org.freedesktop.DBus.Mock", method, signature] + arguments)
    }

    private func run(_ arguments: [String]) throws {
        try ProcessRunner.run(busctl, ["--address=\(bus.address)"] + arguments, inheritsEnvironment: false,
                              timeout: .seconds(5)).requireSuccess()
    }
}
