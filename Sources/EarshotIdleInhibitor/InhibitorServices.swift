// The three ways a desktop session takes an idle-suspend inhibitor on its session bus, in the order Earshot asks them
// (docs/idle-suspend.md says which desktop honours which, from their sources):
// 1. the XDG desktop portal's `Inhibit` with flag 4 (suspend): GNOME's and KDE's portal back-ends pass it on to their
//    own power management; the inhibitor lasts until its `Request` object's `Close`.
// 2. `org.gnome.SessionManager.Inhibit` with flag 4 (suspend): gnome-settings-daemon's power plugin does not suspend
//    for idleness while one is held; `Uninhibit(cookie)` gives it back.
// 3. `org.freedesktop.PowerManagement.Inhibit.Inhibit`: KDE's PowerDevil (and others implementing the freedesktop
//    interface) hold off the automatic suspend; `UnInhibit(cookie)` gives it back.
// Never the idle (8) or screen-saver flag: the screen may blank and lock while music plays. Every service drops what a
// client held when the client leaves the bus, so an exit or a crash gives the inhibitor back without a word.
//
// sd-bus's message building is variadic in C, which Swift cannot call: the arguments are appended one by one.
import CSystemd
import Glibc
import SystemSupport

/// The service an inhibitor was taken from, with what gives it back.
public enum IdleInhibitorHold: Equatable, Sendable {
    /// The desktop portal's request object, closed to give it back.
    case portal(request: String)
    /// GNOME's session manager, given the cookie back.
    case gnomeSessionManager(cookie: UInt32)
    /// The freedesktop power management interface (KDE), given the cookie back.
    case powerManagement(cookie: UInt32)

    /// The service's short name for the log and status: `portal`, `gnomeSessionManager`, `powerManagement`.
    public var service: String {
        switch self {
        case .portal: return "portal"
        case .gnomeSessionManager: return "gnomeSessionManager"
        case .powerManagement: return "powerManagement"
        }
    }
}

/// The services' names, paths and interfaces.
enum InhibitorService {
    static let portalName = "org.freedesktop.portal.Desktop"
    static let portalPath = "/org/freedesktop/portal/desktop"
    static let portalInterface = "org.freedesktop.portal.Inhibit"
    static let portalRequestInterface = "org.freedesktop.portal.Request"
    static let gnomeName = "org.gnome.SessionManager"
    static let gnomePath = "/org/gnome/SessionManager"
    static let gnomeInterface = "org.gnome.SessionManager"
    static let powerManagementName = "org.freedesktop.PowerManagement"
    static let powerManagementPath = "/org/freedesktop/PowerManagement/Inhibit"
    static let powerManagementInterface = "org.freedesktop.PowerManagement.Inhibit"
    /// The portal's and GNOME's flag for suspend (1 logout, 2 user switch, 4 suspend, 8 idle).
    static let suspendFlag: UInt32 = 4
    /// Who asks, as the services show it.
    static let application = "earshot"
    /// Why, as the services show it (GNOME's and KDE's power settings list it).
    static let reason = "Playing music"
}

/// D-Bus type codes as sd-bus's `char` parameters.
enum InhibitorType {
    static let uint32 = code("u")
    static let string = code("s")
    static let objectPath = code("o")
    static let array = code("a")
    static let dictionaryEntry = code("e")
    static let variant = code("v")

    private static func code(_ letter: Unicode.Scalar) -> CChar {
        CChar(truncatingIfNeeded: UInt8(ascii: letter))
    }
}

/// The calls that take and give back an inhibitor, on a connected bus. Waits for each reply: the adapter's own thread
/// only.
struct InhibitorCalls {
    /// The session bus (borrowed).
    let bus: OpaquePointer

    /// Asks the services in order and returns the first inhibitor taken, or nil with each service's refusal.
    func take() -> (hold: IdleInhibitorHold?, refusals: [String]) {
        var refusals: [String] = []
        let portal = call(InhibitorService.portalName, InhibitorService.portalPath, InhibitorService.portalInterface,
                          "Inhibit") { message in
            // Inhibit(s window, u flags, a{sv} options): no window; the reason among the options.
            var result = append(string: "", to: message)
            var flags = InhibitorService.suspendFlag
            if result >= 0 { result = sd_bus_message_append_basic(message, InhibitorType.uint32, &flags) }
            if result >= 0 { result = sd_bus_message_open_container(message, InhibitorType.array, "{sv}") }
            if result >= 0 { result = sd_bus_message_open_container(message, InhibitorType.dictionaryEntry, "sv") }
            if result >= 0 { result = append(string: "reason", to: message) }
            if result >= 0 { result = sd_bus_message_open_container(message, InhibitorType.variant, "s") }
            if result >= 0 { result = append(string: InhibitorService.reason, to: message) }
            for _ in 0..<3 where result >= 0 { result = sd_bus_message_close_container(message) }
            return result
        }
        if let reply = portal.reply {
            defer { sd_bus_message_unref(reply) }
            if let request = Self.readString(reply, type: InhibitorType.objectPath) {
                return (.portal(request: request), refusals)
            }
            refusals.append("portal: no request in the reply")
        } else {
            refusals.append("portal: \(portal.error)")
        }
        let gnome = call(InhibitorService.gnomeName, InhibitorService.gnomePath, InhibitorService.gnomeInterface,
                         "Inhibit") { message in
            // Inhibit(s app_id, u toplevel_xid, s reason, u flags).
            var result = append(string: InhibitorService.application, to: message)
            var window: UInt32 = 0
            var flags = InhibitorService.suspendFlag
            if result >= 0 { result = sd_bus_message_append_basic(message, InhibitorType.uint32, &window) }
            if result >= 0 { result = append(string: InhibitorService.reason, to: message) }
            if result >= 0 { result = sd_bus_message_append_basic(message, InhibitorType.uint32, &flags) }
            return result
        }
        if let reply = gnome.reply {
            defer { sd_bus_message_unref(reply) }
            if let cookie = Self.readUInt32(reply) { return (.gnomeSessionManager(cookie: cookie), refusals) }
            refusals.append("gnomeSessionManager: no cookie in the reply")
        } else {
            refusals.append("gnomeSessionManager: \(gnome.error)")
        }
        let power = call(InhibitorService.powerManagementName, InhibitorService.powerManagementPath,
                         InhibitorService.powerManagementInterface, "Inhibit") { message in
            // Inhibit(s application, s reason).
            var result = append(string: InhibitorService.application, to: message)
            if result >= 0 { result = append(string: InhibitorService.reason, to: message) }
            return result
        }
        if let reply = power.reply {
            defer { sd_bus_message_unref(reply) }
            if let cookie = Self.readUInt32(reply) { return (.powerManagement(cookie: cookie), refusals) }
            refusals.append("powerManagement: no cookie in the reply")
        } else {
            refusals.append("powerManagement: \(power.error)")
        }
        return (nil, refusals)
    }

    /// Gives `hold` back; nil when the service took it, else the error's name.
    func giveBack(_ hold: IdleInhibitorHold) -> String? {
        let outcome: (reply: OpaquePointer?, error: String)
        switch hold {
        case .portal(let request):
            outcome = call(
                InhibitorService.portalName, request, InhibitorService.portalRequestInterface, "Close") { _ in 0 }
        case .gnomeSessionManager(let cookie):
            outcome = call(InhibitorService.gnomeName, InhibitorService.gnomePath, InhibitorService.gnomeInterface,
                           "Uninhibit") { message in
                var value = cookie
                return sd_bus_message_append_basic(message, InhibitorType.uint32, &value)
            }
        case .powerManagement(let cookie):
            outcome = call(InhibitorService.powerManagementName, InhibitorService.powerManagementPath,
                           InhibitorService.powerManagementInterface, "UnInhibit") { message in
                var value = cookie
                return sd_bus_message_append_basic(message, InhibitorType.uint32, &value)
            }
        }
        guard let reply = outcome.reply else { return outcome.error }
        sd_bus_message_unref(reply)
        return nil
    }

    /// Calls `member` with the arguments `append` adds; the reply (which the caller unrefs), or nil with the error's
    /// name (`org.freedesktop.DBus.Error.ServiceUnknown` when nobody owns the name).
    private func call(
        _ destination: String, _ path: String, _ interface: String, _ member: String,
        _ append: (OpaquePointer) -> Int32
    ) -> (reply: OpaquePointer?, error: String) {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, destination, path, interface, member) >= 0,
              let message else { return (nil, "cannot build \(member)") }
        defer { sd_bus_message_unref(message) }
        let built = append(message)
        guard built >= 0 else { return (nil, "cannot build \(member): errno \(-built)") }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        // The reply is waited for: on the adapter's own thread only.
        WaitGuard.check("a call for the idle inhibitor (sd_bus_call)")
        let result = sd_bus_call(bus, message, 0, &error, &reply)
        guard result >= 0, let reply else {
            return (nil, error.name.map { String(cString: $0) } ?? "errno \(-result)")
        }
        return (reply, "")
    }

    private static func readString(_ message: OpaquePointer, type: CChar) -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, type, &pointer) > 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    private static func readUInt32(_ message: OpaquePointer) -> UInt32? {
        var value: UInt32 = 0
        return sd_bus_message_read_basic(message, InhibitorType.uint32, &value) > 0 ? value : nil
    }
}

/// Appends `value` as a D-Bus string (sd-bus takes the characters themselves for strings).
private func append(string value: String, to message: OpaquePointer) -> Int32 {
    value.withCString { sd_bus_message_append_basic(message, InhibitorType.string, $0) }
}
