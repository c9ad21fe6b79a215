// Fakes of the three services that hold a desktop's idle suspend off (RULES.md rule 23, issue 39), for the session bus
// of a test: the XDG desktop portal's `Inhibit`, GNOME's `org.gnome.SessionManager` and the freedesktop
// `org.freedesktop.PowerManagement.Inhibit` (KDE's PowerDevil). Each is python3-dbusmock with the service's methods
// added, which keeps the inhibitors it handed out and has not been given back; a test reads them (`held()`) and the
// flags of every request (`requestedFlags()`). Run by /usr/bin/python3 like `FakeLogind`; missing tools are failures,
// never skips. As a real service does, a fake takes the service's name only once its methods answer: it starts under
// a name of its own, gets its methods, then claims the service's name, so a client that asks as soon as the name
// appears (Earshot follows NameOwnerChanged) finds them.

import Foundation
import Glibc
import SystemSupport

/// One of the three services, faked on a session bus.
public final class FakeInhibitor: Sendable {
    /// Which service.
    public enum Kind: String, Sendable, CaseIterable {
        /// `org.freedesktop.portal.Desktop`'s `org.freedesktop.portal.Inhibit`; given back by closing its request.
        case portal
        /// `org.gnome.SessionManager`'s `Inhibit`/`Uninhibit`.
        case gnomeSessionManager
        /// `org.freedesktop.PowerManagement.Inhibit`'s `Inhibit`/`UnInhibit`.
        case powerManagement

        var busName: String {
            switch self {
            case .portal: return "org.freedesktop.portal.Desktop"
            case .gnomeSessionManager: return "org.gnome.SessionManager"
            case .powerManagement: return "org.freedesktop.PowerManagement"
            }
        }

        var path: String {
            switch self {
            case .portal: return "/org/freedesktop/portal/desktop"
            case .gnomeSessionManager: return "/org/gnome/SessionManager"
            case .powerManagement: return "/org/freedesktop/PowerManagement/Inhibit"
            }
        }

        /// The name the fake starts under, before it claims `busName`.
        var stagingName: String { "org.earshot.TestFake.\(rawValue)" }

        var interface: String {
            switch self {
            case .portal: return "org.freedesktop.portal.Inhibit"
            case .gnomeSessionManager: return "org.gnome.SessionManager"
            case .powerManagement: return "org.freedesktop.PowerManagement.Inhibit"
            }
        }

        /// The mock's methods: (name, in signature, out signature, Python code). The code runs in dbusmock's module,
        /// where `objects` maps paths to mock objects and `dbus` is imported; `self.held` is the set of inhibitors
        /// handed out and not given back.
        var methods: [(String, String, String, String)] {
            let keep = "self.held = getattr(self, 'held', set()); self.next = getattr(self, 'next', 0) + 1; "
            switch self {
            case .portal:
                // Inhibit(s window, u flags, a{sv} options) -> o request; the request's Close gives it back.
                let close = "m = objects['\(path)']; m.held.discard(str(self.__dbus_object_path__)); "
                    + "self.RemoveObject(str(self.__dbus_object_path__))"
                return [("Inhibit", "sua{sv}", "o", keep
                    + "p = '/org/freedesktop/portal/desktop/request/1_1/earshot%d' % self.next; self.held.add(p); "
                    + "self.AddObject(p, 'org.freedesktop.portal.Request', {}, [('Close', '', '', \"\(close)\")]); "
                    + "ret = dbus.ObjectPath(p)")]
            case .gnomeSessionManager:
                // Inhibit(s app_id, u toplevel_xid, s reason, u flags) -> u cookie.
                return [("Inhibit", "susu", "u", keep + "self.held.add(self.next); ret = dbus.UInt32(self.next)"),
                        ("Uninhibit", "u", "", "self.held.discard(int(args[0]))")]
            case .powerManagement:
                // Inhibit(s application, s reason) -> u cookie.
                return [("Inhibit", "ss", "u", keep + "self.held.add(self.next); ret = dbus.UInt32(self.next)"),
                        ("UnInhibit", "u", "", "self.held.discard(int(args[0]))")]
            }
        }
    }

    /// The service faked.
    public let kind: Kind
    private let address: String
    private let busctl: String
    private let mock: ChildProcess

    /// Starts the fake of `kind` on the session bus at `address`, and waits until it answers.
    ///
    /// - Throws: when busctl, /usr/bin/python3 or python3-dbusmock is missing, or the mock does not come up in 10 s.
    public init(_ kind: Kind, busAddress address: String, home: URL) throws {
        self.kind = kind
        self.address = address
        busctl = try ProcessRunner.requireTool("busctl", package: "systemd")
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            throw ToolkitError("/usr/bin/python3 is needed for the fake inhibitors: apt-get install python3-dbusmock")
        }
        mock = try ChildProcess(
            "/usr/bin/python3", ["-m", "dbusmock", kind.stagingName, kind.path, kind.interface],
            environment: ["DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin", "HOME": home.path],
            inheritsEnvironment: false)
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? mockCall("GetCalls", "", [], on: kind.stagingName).succeeded) != true {
            guard mock.isRunning, ContinuousClock.now < deadline else {
                mock.kill()
                throw ToolkitError("python3-dbusmock did not come up as \(kind.busName) (apt-get install "
                    + "python3-dbusmock): \(mock.standardError().trimmed)")
            }
            usleep(20_000)
        }
        for (name, input, output, code) in kind.methods {
            try mockCall("AddMethod", "sssss", [kind.interface, name, input, output, code], on: kind.stagingName)
                .requireSuccess()
        }
        // What a test reads: how many inhibitors are held now; and the claim of the service's own name.
        try mockCall("AddMethod", "sssss", [
            "org.earshot.Test", "Held", "", "u", "ret = dbus.UInt32(len(getattr(self, 'held', set())))",
        ], on: kind.stagingName).requireSuccess()
        let claim = "self.claimed = dbus.service.BusName('\(kind.busName)', self.connection)"
        try mockCall("AddMethod", "sssss", ["org.earshot.Test", "Claim", "", "", claim], on: kind.stagingName)
            .requireSuccess()
        try run(["call", kind.stagingName, kind.path, "org.earshot.Test", "Claim"]).requireSuccess()
    }

    deinit {
        stop()
    }

    /// Stops the fake.
    public func stop() {
        mock.kill()
    }

    /// How many inhibitors the service has handed out and not had back.
    public func held() throws -> Int {
        let output = try run(["--json=short", "call", kind.busName, kind.path, "org.earshot.Test", "Held"])
            .requireSuccess().standardOutput
        guard let reply = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let data = reply["data"] as? [Any], let count = data.first as? Int else {
            throw ToolkitError("unexpected Held reply: \(output)")
        }
        return count
    }

    /// The flags argument of every `Inhibit` asked of the service so far (the portal's and GNOME's; the freedesktop
    /// interface has none, and its requests read as nil).
    public func requestedFlags() throws -> [Int?] {
        // GetMethodCalls(s) -> a(tav): each call's time and arguments.
        let output = try run(["--json=short", "call", kind.busName, kind.path, "org.freedesktop.DBus.Mock",
                              "GetMethodCalls", "s", "Inhibit"]).requireSuccess().standardOutput
        guard let reply = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let data = reply["data"] as? [Any], let calls = data.first as? [[Any]] else {
            throw ToolkitError("unexpected GetMethodCalls reply: \(output)")
        }
        return calls.map { call in
            guard call.count > 1, let arguments = call[1] as? [[String: Any]] else { return nil }
            let position = kind == .portal ? 1 : 3
            guard kind != .powerManagement, arguments.count > position else { return nil }
            return arguments[position]["data"] as? Int
        }
    }

    private func mockCall(
        _ method: String, _ signature: String, _ arguments: [String], on name: String
    ) throws -> CommandResult {
        try run(["call", name, kind.path, "org.freedesktop.DBus.Mock", method]
            + (signature.isEmpty ? [] : [signature]) + arguments)
    }

    private func run(_ arguments: [String]) throws -> CommandResult {
        try ProcessRunner.run(busctl, ["--address=\(address)"] + arguments, inheritsEnvironment: false,
                              timeout: .seconds(5))
    }
}
