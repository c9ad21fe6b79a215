// The errors of MPD's protocol: the numbered kinds its clients tell apart, and the `ACK` line that carries one.

/// The kinds of error MPD's protocol numbers in its `ACK` lines (MPD's `Ack.hxx`); clients compare the numbers.
public enum MPDErrorCode: Int, Sendable, Equatable, CaseIterable {
    /// `command_list_end` or a list-only request outside a command list.
    case notList = 1
    /// A malformed or missing argument, a bad quote, the wrong number of arguments.
    case argument = 2
    /// A password that does not match.
    case password = 3
    /// A command the connection's permissions do not allow.
    case permission = 4
    /// A command that does not exist, or a line without one.
    case unknown = 5
    /// The song, directory or position named does not exist.
    case noExist = 50
    /// The queue is full.
    case playlistMax = 51
    /// The system failed (a file could not be read, for instance).
    case system = 52
    /// A stored playlist could not be loaded.
    case playlistLoad = 53
    /// A database update is already running.
    case updateAlready = 54
    /// The player cannot do that in its present state.
    case playerSync = 55
    /// What was to be made exists already.
    case exist = 56
}

/// One refusal as MPD's protocol says it: `ACK [code@index] {command} message`.
public struct MPDError: Error, Sendable, Equatable {
    /// The kind of error.
    public var code: MPDErrorCode
    /// The position of the failing command in its command list (0 outside a list).
    public var index: Int
    /// The command's name as the client sent it, or empty when no command was recognised.
    public var command: String
    /// The reason, one line of text.
    public var message: String

    /// An error of `code` about `command` (index 0; a command list sets its own).
    public init(_ code: MPDErrorCode, command: String = "", index: Int = 0, _ message: String) {
        self.code = code
        self.command = command
        self.index = index
        self.message = message
    }

    /// The same error at `index` of a command list.
    public func at(index: Int) -> MPDError {
        var copy = self
        copy.index = index
        return copy
    }

    /// The reply line, ending with a newline. Line breaks in the message become spaces: the reply stays one line.
    public var line: String {
        // Scalars, not characters: CR LF is one Character.
        var flat = String.UnicodeScalarView()
        for scalar in message.unicodeScalars { flat.append(scalar == "\n" || scalar == "\r" ? " " : scalar) }
        return "ACK [\(code.rawValue)@\(index)] {\(command)} \(String(flat))\n"
    }
}
