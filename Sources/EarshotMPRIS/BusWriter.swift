// Writing sd-bus messages from Swift: the D-Bus type codes the MPRIS server uses and a writer that appends values
// with sd-bus's non-variadic calls (the MPRIS server's replies).
import CSystemd

/// D-Bus type codes as sd-bus's `char` parameters.
enum BusType {
    static let boolean = code("b")
    static let int32 = code("i")
    static let uint32 = code("u")
    static let int64 = code("x")
    static let uint64 = code("t")
    static let double = code("d")
    static let string = code("s")
    static let objectPath = code("o")
    static let array = code("a")
    static let dictionaryEntry = code("e")
    static let variant = code("v")

    private static func code(_ letter: Unicode.Scalar) -> CChar {
        CChar(truncatingIfNeeded: UInt8(ascii: letter))
    }
}

/// Appends values to one sd-bus message with the non-variadic calls (`sd_bus_message_append` is variadic and
/// cannot be called from Swift). Every call checks sd-bus's result; the first failure aborts the reply.
struct BusWriter {
    /// An sd-bus failure: a negative errno.
    struct Failure: Error {
        var code: Int32
    }

    let message: OpaquePointer

    private func check(_ result: Int32) throws(Failure) {
        if result < 0 { throw Failure(code: result) }
    }

    func boolean(_ value: Bool) throws(Failure) {
        // D-Bus booleans are 32-bit on the wire and an `int` in sd-bus's API.
        var flag: Int32 = value ? 1 : 0
        try check(sd_bus_message_append_basic(message, BusType.boolean, &flag))
    }

    func int32(_ value: Int32) throws(Failure) {
        var number = value
        try check(sd_bus_message_append_basic(message, BusType.int32, &number))
    }

    func int64(_ value: Int64) throws(Failure) {
        var number = value
        try check(sd_bus_message_append_basic(message, BusType.int64, &number))
    }

    func double(_ value: Double) throws(Failure) {
        var number = value
        try check(sd_bus_message_append_basic(message, BusType.double, &number))
    }

    /// For strings sd-bus takes the characters themselves, not a pointer to a pointer.
    func string(_ value: String) throws(Failure) {
        try check(value.withCString { sd_bus_message_append_basic(message, BusType.string, $0) })
    }

    func objectPath(_ value: String) throws(Failure) {
        try check(value.withCString { sd_bus_message_append_basic(message, BusType.objectPath, $0) })
    }

    func strings(_ values: [String]) throws(Failure) {
        try container(BusType.array, "s") { () throws(Failure) in
            for value in values { try string(value) }
        }
    }

    /// Opens a container of `type` holding `contents`, runs `body`, and closes it.
    func container(_ type: CChar, _ contents: String, _ body: () throws(Failure) -> Void) throws(Failure) {
        try check(sd_bus_message_open_container(message, type, contents))
        try body()
        try check(sd_bus_message_close_container(message))
    }

    /// One `{sv}` entry of a metadata dictionary: `key` and a variant of `signature` written by `body`.
    func entry(_ key: String, _ signature: CChar, _ body: () throws(Failure) -> Void) throws(Failure) {
        let letter = String(UnicodeScalar(UInt8(truncatingIfNeeded: signature)))
        try entry(key, letter, body)
    }

    /// One `{sv}` entry whose variant has the signature `signature`.
    func entry(_ key: String, _ signature: String, _ body: () throws(Failure) -> Void) throws(Failure) {
        try container(BusType.dictionaryEntry, "sv") { () throws(Failure) in
            try string(key)
            try container(BusType.variant, signature, body)
        }
    }
}
