import CPulse

/// An error from libpulse or from this adapter: a libpulse error code, its `pa_strerror` text and the step that
/// failed (for example "connect" or "cork").
public struct PulseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A libpulse error code (`PA_ERR_*`), with names for the ones callers compare against.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The numeric libpulse error code.
        public let rawValue: Int32

        /// Wraps a numeric libpulse error code.
        public init(rawValue: Int32) {
            self.rawValue = rawValue
        }

        /// Wraps a libpulse error code constant.
        init(_ code: pa_error_code) {
            self.init(rawValue: Int32(code.rawValue))
        }

        /// Access denied by the server.
        public static let accessDenied = Code(PA_ERR_ACCESS)
        /// The server refused the connection (no server running there).
        public static let connectionRefused = Code(PA_ERR_CONNECTIONREFUSED)
        /// The connection to the server ended (the server died or dropped us).
        public static let connectionTerminated = Code(PA_ERR_CONNECTIONTERMINATED)
        /// The stream was killed, for example because its sink went away and it may not move.
        public static let killed = Code(PA_ERR_KILLED)
        /// No such entity (a sink or sink input index that no longer exists).
        public static let noEntity = Code(PA_ERR_NOENTITY)
        /// The request did not complete in time; also used by this adapter for its own timeouts.
        public static let timeout = Code(PA_ERR_TIMEOUT)
        /// The object is not in a state that allows the request (not connected, already closed, or a waiting
        /// call made from inside a libpulse callback).
        public static let badState = Code(PA_ERR_BADSTATE)
        /// An argument was invalid.
        public static let invalid = Code(PA_ERR_INVALID)
        /// The operation is not supported by this server.
        public static let notSupported = Code(PA_ERR_NOTSUPPORTED)
    }

    /// What went wrong, as a libpulse error code.
    public let code: Code
    /// The step that failed, for example "connect", "cork" or "get sink info".
    public let step: String
    /// The `pa_strerror` text for `code`.
    public let message: String

    /// Builds an error for `step` with the `pa_strerror` text of `code`.
    public init(code: Code, step: String) {
        self.code = code
        self.step = step
        if let text = pa_strerror(code.rawValue) {
            self.message = String(cString: text)
        } else {
            self.message = "error \(code.rawValue)"
        }
    }

    /// "step: message (code)".
    public var description: String {
        "\(step): \(message) (\(code.rawValue))"
    }

    /// The error libpulse last recorded on `context`, for `step`.
    static func lastError(of context: OpaquePointer?, step: String) -> PulseError {
        guard let context else { return PulseError(code: .badState, step: step) }
        let errno = pa_context_errno(context)
        // A failure with no recorded cause still has to be an error; "bad state" is the honest fallback.
        return PulseError(code: errno == 0 ? .badState : Code(rawValue: errno), step: step)
    }
}
