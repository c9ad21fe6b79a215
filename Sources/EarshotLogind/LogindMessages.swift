// Reading and writing logind's D-Bus messages with sd-bus's non-variadic calls (`sd_bus_message_append` and
// `sd_bus_message_read` are variadic, which Swift cannot call), and the translation of logind's signals into the
// rulebook's events. Nothing here decides what a signal means for the music: that is rule 19's.
import CSystemd
import EarshotCore
import Glibc
import SystemSupport

/// logind's names on the system bus.
enum Logind {
    /// logind's well-known name.
    static let busName = "org.freedesktop.login1"
    /// The manager object: sleep, inhibitor locks, sessions and users.
    static let managerPath = "/org/freedesktop/login1"
    /// The manager's interface (`PrepareForSleep`, `Inhibit`, `GetSession`, `GetUser`).
    static let managerInterface = "org.freedesktop.login1.Manager"
    /// A session's interface (`Active`, `LockedHint`, `Lock`, `Unlock`).
    static let sessionInterface = "org.freedesktop.login1.Session"
    /// A user's interface (`Display`).
    static let userInterface = "org.freedesktop.login1.User"
    /// The standard properties interface (`PropertiesChanged`).
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
}

/// D-Bus type codes as sd-bus's `char` parameters.
enum LogindType {
    /// `b`.
    static let boolean = code("b")
    /// `u`.
    static let uint32 = code("u")
    /// `s`.
    static let string = code("s")
    /// `o`.
    static let objectPath = code("o")
    /// `h`: a Unix file descriptor.
    static let unixFD = code("h")
    /// `a`.
    static let array = code("a")
    /// `e`: a dictionary entry.
    static let dictionaryEntry = code("e")
    /// `v`.
    static let variant = code("v")
    /// `r`: a structure.
    static let structure = code("r")

    private static func code(_ letter: Unicode.Scalar) -> CChar {
        CChar(truncatingIfNeeded: UInt8(ascii: letter))
    }
}

/// What a session's `PropertiesChanged` said about the two properties Earshot follows.
struct SessionProperties: Equatable {
    /// `Active`: the session is the one in front of the seat.
    var active: Bool?
    /// `LockedHint`: the session's screen is locked.
    var locked: Bool?
}

/// The session's state as last read, turning property values into the changes the rules hear of.
struct SessionFollower {
    /// The session was active when last read (nil: not read yet).
    private(set) var active: Bool?
    /// The session was locked when last read.
    private(set) var locked: Bool?

    /// Records `properties` and returns the events their changes mean, in order. A first reading only records: a
    /// session found inactive or locked at start is no departure (the player never plays by itself then anyway).
    mutating func update(_ properties: SessionProperties) -> [Event] {
        var events: [Event] = []
        if let now = properties.active {
            if let before = active, before != now {
                events.append(now ? .sessionReturned(.inactive) : .sessionLeft(.inactive))
            }
            active = now
        }
        if let now = properties.locked {
            if let before = locked, before != now {
                events.append(now ? .sessionLeft(.locked) : .sessionReturned(.locked))
            }
            locked = now
        }
        return events
    }
}

/// Reads values out of one sd-bus message (borrowed: the caller owns it).
struct LogindReader {
    /// The message read from.
    let message: OpaquePointer

    /// The next value as a boolean, or nil when it is not one.
    func boolean() -> Bool? {
        // D-Bus booleans are an `int` in sd-bus's API.
        var value: Int32 = 0
        return sd_bus_message_read_basic(message, LogindType.boolean, &value) > 0 ? value != 0 : nil
    }

    /// The next value as a string of `type` (a string or an object path), or nil when it is not one.
    func string(type: CChar = LogindType.string) -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, type, &pointer) > 0, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// A Unix file descriptor, duplicated: the one in the message closes with it.
    func fileDescriptor() -> Int32? {
        var descriptor: Int32 = -1
        guard sd_bus_message_read_basic(message, LogindType.unixFD, &descriptor) > 0, descriptor >= 0 else {
            return nil
        }
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
        return copy >= 0 ? copy : nil
    }

    /// `PropertiesChanged(s interface, a{sv} changed, as invalidated)`: the values of `Active` and `LockedHint`
    /// among the changed ones. Other properties are skipped; a malformed message reads as nothing.
    func sessionProperties() -> SessionProperties {
        var found = SessionProperties()
        guard string() == Logind.sessionInterface,
              sd_bus_message_enter_container(message, LogindType.array, "{sv}") > 0 else { return found }
        while sd_bus_message_enter_container(message, LogindType.dictionaryEntry, "sv") > 0 {
            let key = string()
            if key == "Active" || key == "LockedHint",
               sd_bus_message_enter_container(message, LogindType.variant, "b") > 0 {
                let value = boolean()
                _ = sd_bus_message_exit_container(message)
                if key == "Active" { found.active = value } else { found.locked = value }
            } else if sd_bus_message_skip(message, "v") < 0 {
                return found
            }
            guard sd_bus_message_exit_container(message) >= 0 else { return found }
        }
        return found
    }
}

extension LogindWatcher {
    /// Calls logind's manager method `member`, with the arguments `append` adds, and returns the reply (which the
    /// caller unrefs), or nil with the error's name.
    static func callManager(
        _ bus: OpaquePointer, _ member: String, _ append: (OpaquePointer) -> Int32
    ) -> (reply: OpaquePointer?, error: String?) {
        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(
            bus, &call, Logind.busName, Logind.managerPath, Logind.managerInterface, member) >= 0, let call else {
            return (nil, "cannot build \(member)")
        }
        defer { sd_bus_message_unref(call) }
        var result = append(call)
        guard result >= 0 else { return (nil, "cannot build \(member): \(-result)") }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        // A call waits for logind's answer: on the adapter's own thread only.
        WaitGuard.check("a call to logind (sd_bus_call)")
        result = sd_bus_call(bus, call, 0, &error, &reply)
        guard result >= 0, let reply else {
            return (nil, error.name.map { String(cString: $0) } ?? "errno \(-result)")
        }
        return (reply, nil)
    }

    /// Appends `strings` to `message` as D-Bus strings; the first failure's result, or 0.
    static func append(_ strings: [String], to message: OpaquePointer) -> Int32 {
        for value in strings {
            // For strings sd-bus takes the characters themselves, not a pointer to a pointer.
            let result = value.withCString { sd_bus_message_append_basic(message, LogindType.string, $0) }
            if result < 0 { return result }
        }
        return 0
    }

    /// The object path of the session Earshot follows: `sessionID`'s (Earshot started inside a login session), else
    /// the user's display session (`earshot serve` as a systemd user service belongs to no session: logind's
    /// `User.Display` names the graphical one). Nil when the user has none (a bare server, an ssh login).
    static func sessionPath(on bus: OpaquePointer, sessionID: String?, userID: UInt32) -> String? {
        if let sessionID, !sessionID.isEmpty {
            let (reply, _) = callManager(bus, "GetSession") { append([sessionID], to: $0) }
            guard let reply else { return nil }
            defer { sd_bus_message_unref(reply) }
            return LogindReader(message: reply).string(type: LogindType.objectPath)
        }
        let (userReply, _) = callManager(bus, "GetUser") { call in
            var uid = userID
            return sd_bus_message_append_basic(call, LogindType.uint32, &uid)
        }
        guard let userReply else { return nil }
        let userPath = LogindReader(message: userReply).string(type: LogindType.objectPath)
        sd_bus_message_unref(userReply)
        guard let userPath else { return nil }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        // The reply comes positioned inside the property's variant: a `(so)` of the session's id and path.
        guard sd_bus_get_property(bus, Logind.busName, userPath, Logind.userInterface, "Display", &error, &reply,
                                  "(so)") >= 0, let reply else { return nil }
        defer { sd_bus_message_unref(reply) }
        guard sd_bus_message_enter_container(reply, LogindType.structure, "so") > 0 else { return nil }
        let reader = LogindReader(message: reply)
        _ = reader.string()
        // "/" is logind's "no display session".
        guard let path = reader.string(type: LogindType.objectPath), path != "/" else { return nil }
        return path
    }

    /// Whether `name` has an owner on `bus` (asked of the bus daemon, which answers at once; no activation).
    static func hasOwner(_ name: String, on bus: OpaquePointer) -> Bool {
        var credentials: OpaquePointer?
        // Waits for the bus daemon's reply: on the adapter's own thread only.
        WaitGuard.check("a call to the bus daemon (sd_bus_get_name_creds)")
        guard sd_bus_get_name_creds(bus, name, 0, &credentials) >= 0 else { return false }
        sd_bus_creds_unref(credentials)
        return true
    }

    /// A boolean property of the session at `path`, or nil when it cannot be read.
    static func sessionBoolean(_ name: String, on bus: OpaquePointer, path: String) -> Bool? {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var value: Int32 = 0
        guard sd_bus_get_property_trivial(
            bus, Logind.busName, path, Logind.sessionInterface, name, &error, LogindType.boolean, &value) >= 0 else {
            return nil
        }
        return value != 0
    }
}
