// The framing of MPD's protocol on one connection, as a value: bytes become lines (at most `lineLimit` bytes each),
// lines become batches to run (one request, or a command list between `command_list_begin` or
// `command_list_ok_begin` and `command_list_end`), and a batch's results become the reply (`list_OK` after each
// command of an OK list, `OK` at the end, or the first error's `ACK` with its index in the list). Idling is the
// connection's state too: while idle only `noidle` may come; anything else closes the connection, as MPD does.
// Pure: the server feeds it bytes and writes what it returns.

/// Bytes in, complete lines out, each at most `limit` bytes long.
public struct MPDLineBuffer: Sendable {
    /// The longest line accepted, line break excluded.
    public let limit: Int
    private var pending: [UInt8] = []
    private var start = 0

    /// What the buffer has for the reader.
    public enum Line: Sendable, Equatable {
        /// One line without its line break.
        case line([UInt8])
        /// A line over the limit: MPD closes such a connection.
        case tooLong
    }

    /// An empty buffer taking lines of at most `limit` bytes.
    public init(limit: Int = MPDFraming.lineLimit) {
        self.limit = limit
    }

    /// Adds bytes read from the connection.
    public mutating func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        if start > 0, start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        pending.append(contentsOf: bytes)
    }

    /// The next complete line, `.tooLong` when the bytes without a line break exceed the limit, or nil.
    public mutating func next() -> Line? {
        if let newline = pending[start...].firstIndex(of: 0x0A) {
            guard newline - start <= limit else { return .tooLong }
            let line = Array(pending[start..<newline])
            start = newline + 1
            return .line(line)
        }
        return pending.count - start > limit ? .tooLong : nil
    }
}

/// One batch to run: a single request, or a command list's requests in order.
public struct MPDBatch: Sendable, Equatable {
    /// Each entry's request, or the error its line gave (reported when the batch reaches it).
    public var entries: [Result<MPDRequest, MPDError>]
    /// Whether the batch is a command list.
    public var isList: Bool
    /// Whether each successful command of the list is followed by `list_OK` (`command_list_ok_begin`).
    public var listOK: Bool

    /// A batch of `entries`.
    public init(entries: [Result<MPDRequest, MPDError>], isList: Bool, listOK: Bool) {
        self.entries = entries
        self.isList = isList
        self.listOK = listOK
    }

    /// The reply to the batch: `run` answers each request with its reply lines (each ending with a newline) or an
    /// error. Runs the requests in order and stops at the first error, which is reported with its index.
    public func reply(running run: (MPDRequest) -> Result<String, MPDError>) -> String {
        var text = ""
        for (index, entry) in entries.enumerated() {
            let result = entry.flatMap(run)
            switch result {
            case .failure(let error):
                return text + error.at(index: isList ? index : 0).line
            case .success(let body):
                text += body
                if isList && listOK { text += "list_OK\n" }
            }
        }
        return text + "OK\n"
    }
}

/// What a line means to the connection.
public enum MPDFramed: Sendable, Equatable {
    /// Nothing to do yet (a line kept in a command list, or `noidle` when not idling).
    case nothing
    /// A batch to run and answer.
    case run(MPDBatch)
    /// `noidle` while idling: the idle ends with a bare `OK`.
    case endIdle
    /// The connection is to be closed, for the reason given (MPD replies nothing).
    case close(MPDCloseReason)
}

/// Why a connection is closed by the framing.
public enum MPDCloseReason: Sendable, Equatable {
    /// A line that does not start with a lower-case letter (a stray HTTP request, binary noise).
    case malformedLine
    /// A command other than `noidle` while idling.
    case commandWhileIdle
    /// A command list over `MPDFraming.listSizeLimit` bytes.
    case listTooLarge
    /// A line over `MPDFraming.lineLimit` bytes.
    case lineTooLong
}

/// One connection's framing state: outside a list, building a list, or idling.
public struct MPDFraming: Sendable {
    /// The longest request line, in bytes: Earshot's own bound (long paths and search strings fit); a longer line
    /// closes the connection, as a line that overflows MPD's input buffer does.
    public static let lineLimit = 8192
    /// The most bytes a command list may hold (MPD's default `max_command_list_size`, 2 MiB).
    public static let listSizeLimit = 2 * 1024 * 1024

    private enum State: Sendable {
        case ready
        case building(listOK: Bool, lines: [[UInt8]], size: Int)
        case idling
    }

    private var state: State = .ready

    /// A connection just greeted: ready for commands.
    public init() {}

    /// Whether the connection is waiting in `idle`.
    public var isIdling: Bool {
        if case .idling = state { return true }
        return false
    }

    /// Whether a command list is being built.
    public var isBuildingList: Bool {
        if case .building = state { return true }
        return false
    }

    /// The server ran `idle` for this connection: only `noidle` may come until `idleEnded`.
    public mutating func idleStarted() {
        state = .idling
    }

    /// The server answered the idle with changes: back to commands.
    public mutating func idleEnded() {
        if case .idling = state { state = .ready }
    }

    /// What `line` (one line without its break) means.
    public mutating func take(_ line: [UInt8]) -> MPDFramed {
        guard let first = line.first, (0x61...0x7A).contains(first) else { return .close(.malformedLine) }
        let trimmed = MPDFraming.trimmed(line)
        if trimmed == MPDFraming.noidle {
            guard isIdling else { return .nothing }
            state = .ready
            return .endIdle
        }
        switch state {
        case .idling:
            return .close(.commandWhileIdle)
        case .building(let listOK, var lines, let size):
            if trimmed == MPDFraming.listEnd {
                state = .ready
                return .run(MPDBatch(entries: lines.map(MPDRequest.parse), isList: true, listOK: listOK))
            }
            let newSize = size + line.count + 1
            guard newSize <= MPDFraming.listSizeLimit else {
                state = .ready
                return .close(.listTooLarge)
            }
            lines.append(line)
            state = .building(listOK: listOK, lines: lines, size: newSize)
            return .nothing
        case .ready:
            if trimmed == MPDFraming.listBegin || trimmed == MPDFraming.listOKBegin {
                state = .building(listOK: trimmed == MPDFraming.listOKBegin, lines: [], size: 0)
                return .nothing
            }
            return .run(MPDBatch(entries: [MPDRequest.parse(line)], isList: false, listOK: false))
        }
    }

    private static let noidle = Array("noidle".utf8)
    private static let listBegin = Array("command_list_begin".utf8)
    private static let listOKBegin = Array("command_list_ok_begin".utf8)
    private static let listEnd = Array("command_list_end".utf8)

    /// `line` without trailing blanks (a client ending its lines with CR LF still names its command).
    private static func trimmed(_ line: [UInt8]) -> [UInt8] {
        var end = line.count
        while end > 0, line[end - 1] == 0x20 || line[end - 1] == 0x09 || line[end - 1] == 0x0D { end -= 1 }
        return Array(line[..<end])
    }
}
