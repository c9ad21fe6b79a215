// The control socket: a Unix stream socket at $XDG_RUNTIME_DIR/earshot/control.sock (or $EARSHOT_SOCKET),
// user-only, one thread per client (clients are few and short-lived, at most `clientLimit` at once), line-delimited
// JSON each way. The owner never waits for a client: a client's thread waits for the owner's reply (ReplySlot) and
// for the client to take it; followers of the event log are served by the log's own writer (EventLog+Followers).
import EarshotService
import Glibc
import SystemSupport
import Synchronization

/// Why the control socket could not be set up or reached.
public struct ControlSocketError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, for the user.
    public var description: String

    init(_ description: String) {
        self.description = description
    }

    static func system(_ step: String) -> ControlSocketError {
        ControlSocketError("\(step): \(String(cString: strerror(errno)))")
    }
}

/// Listens on the control socket and answers requests through a handler.
public final class ControlServer: Sendable {
    /// Answers one request with one reply line. It runs on the client's own thread and may block.
    public typealias Handler = @Sendable (ControlRequest) -> String

    private let path: String
    private let listener: Int32
    private let handler: Handler
    private let log: EventLog
    /// Set when the server is closing; client threads then stop.
    private let closing = Atomic<Bool>(false)
    private let clients = LockedValue<Set<Int32>>([])

    /// The most clients served at once, each on a thread of its own (followers of the event log leave their thread
    /// once they are following). A client waiting for a reply, or one that never reads its replies, holds one thread
    /// and a socket's buffers, no more; this bounds them all.
    public static let clientLimit = 128

    /// Binds the socket (refusing when another instance answers on it) and starts accepting.
    public init(path: String, log: EventLog, handler: @escaping Handler) throws(ControlSocketError) {
        self.path = path
        self.handler = handler
        self.log = log
        let directory = PathText.directory(of: path)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw .system("creating the socket directory") }
        if ControlClient.isAnswering(path: path) {
            throw ControlSocketError("another Earshot is already running (its control socket answers)")
        }
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .system("creating the control socket") }
        do throws(ControlSocketError) {
            try withSocketAddress(path) { address, length throws(ControlSocketError) in
                // Created with no permissions for group and others from the first moment (umask), then fixed
                // to exactly 0600.
                let previous = umask(0o177)
                defer { umask(previous) }
                guard bind(descriptor, address, length) == 0 else { throw .system("binding the control socket") }
            }
            guard chmod(path, 0o600) == 0 else { throw .system("restricting the control socket") }
            guard listen(descriptor, 64) == 0 else { throw .system("listening on the control socket") }
        } catch {
            close(descriptor)
            throw error
        }
        listener = descriptor
        SystemThread.start(named: "earshot-control") { [self] in acceptLoop() }
    }

    /// Stops accepting, disconnects clients and removes the socket file.
    public func shutdown() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
        clients.withLock { descriptors in
            for descriptor in descriptors { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
        log.disconnectFollowers()
    }

    private func acceptLoop() {
        while !closing.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { usleep(50_000); continue }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            guard Self.peerIsOwner(client) else {
                log.record("control", ["refused": "otherUser"])
                let refusal = ControlReply.failure("permission denied: not the owner of this player")
                _ = Self.write(refusal + "\n", to: client)
                close(client)
                continue
            }
            let admitted = clients.withLock { clients in
                guard clients.count < Self.clientLimit else { return false }
                clients.insert(client)
                return true
            }
            guard admitted else {
                // The refusal fits an empty socket buffer: this write does not wait.
                log.record("control", ["refused": "tooManyClients"])
                _ = Self.write(ControlReply.failure("too many clients at once") + "\n", to: client)
                close(client)
                continue
            }
            SystemThread.start(named: "earshot-client") { [self] in
                // A follower's socket was handed to the event log, which closes it; that number may already name
                // another client by the time `serve` returns, so it left the set before it was handed over.
                guard serve(client) == .finished else { return }
                clients.withLock { _ = $0.remove(client) }
                close(client)
            }
        }
    }

    /// Only the user who runs the service may control it (SO_PEERCRED).
    private static func peerIsOwner(_ descriptor: Int32) -> Bool {
        // struct ucred is { pid_t pid; uid_t uid; gid_t gid; }; Glibc's Swift overlay does not export it
        // (it needs _GNU_SOURCE), so read it as the same three 32-bit fields.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, UInt32.max, UInt32.max)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return false }
        return credentials.uid == getuid()
    }

    /// What became of a client's connection when `serve` returned.
    private enum Served {
        /// The client is done (or the server is closing): close its socket.
        case finished
        /// The event log owns the socket now (a follower).
        case handedOver
    }

    private func serve(_ client: Int32) -> Served {
        var reader = LineReader(descriptor: client, maximumLineBytes: ControlRequest.maximumLineBytes)
        while !closing.load(ordering: .acquiring) {
            switch reader.nextLine() {
            case .end:
                return .finished
            case .tooLong:
                log.record("control", ["refused": "tooLong"])
                guard Self.write(ControlReply.failure("request longer than 65536 bytes") + "\n", to: client) else {
                    return .finished
                }
            case .line(let bytes):
                switch ControlRequest.parse(bytes) {
                case .failure(let error):
                    log.record("control", ["refused": "malformed"])
                    guard Self.write(ControlReply.failure(error.message) + "\n", to: client) else { return .finished }
                case .success(.events):
                    // The log's writer thread serves the follower from here on, and closes it (EventLog+Followers):
                    // this thread ends. The reply goes through the follower's queue, ahead of the first line.
                    let reply = Array((ControlReply.success(["following": true]) + "\n").utf8)
                    clients.withLock { _ = $0.remove(client) }
                    if log.follow(client, greeting: reply) { return .handedOver }
                    clients.withLock { _ = $0.insert(client) }
                    log.record("control", ["refused": "tooManyFollowers"])
                    _ = Self.write(ControlReply.failure("too many followers of the event log") + "\n", to: client)
                    return .finished
                case .success(let request):
                    // A blocking write: a client that never reads its replies blocks this thread of its own, and
                    // stops being read, so its requests stop reaching the player; the owner never waits for it.
                    guard Self.write(handler(request) + "\n", to: client) else { return .finished }
                }
            }
        }
        return .finished
    }

    /// Writes all of `text`; false when the peer is gone.
    static func write(_ text: String, to descriptor: Int32) -> Bool {
        write(bytes: Array(text.utf8), to: descriptor)
    }

    /// Sends all of `bytes` (binary replies: MPD's pictures); false when the client is gone or stopped reading.
    static func write(bytes: [UInt8], to descriptor: Int32) -> Bool {
        WaitGuard.check("a blocking send to a control client")
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

/// Reads newline-terminated lines from a socket, refusing lines over a limit without buffering them.
struct LineReader {
    enum Result: Equatable {
        case line([UInt8])
        case tooLong
        case end
    }

    let descriptor: Int32
    let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    init(descriptor: Int32, maximumLineBytes: Int) {
        self.descriptor = descriptor
        self.maximumLineBytes = maximumLineBytes
    }

    mutating func nextLine() -> Result {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if discarding {
                    discarding = false
                    return .tooLong
                }
                return .line(line.last == UInt8(ascii: "\r") ? Array(line.dropLast()) : line)
            }
            if buffer.count > maximumLineBytes {
                // Keep reading to the end of this line, but do not keep it.
                buffer.removeAll(keepingCapacity: true)
                discarding = true
            }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return .end }
            buffer.append(contentsOf: chunk[..<count])
        }
    }
}

/// Calls `body` with a `sockaddr_un` for `path`.
func withSocketAddress<T>(
    _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(ControlSocketError) -> T
) throws(ControlSocketError) -> T {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard bytes.count < capacity else { throw ControlSocketError("socket path longer than \(capacity - 1) bytes") }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let length = socklen_t(MemoryLayout<sockaddr_un>.size)
    return try withUnsafePointer(to: &address) { pointer throws(ControlSocketError) -> T in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(ControlSocketError) -> T in
            try body(address, length)
        }
    }
}

/// A client of the control socket (the CLI's verbs).
public enum ControlClient {
    /// True when something accepts connections on `path`.
    public static func isAnswering(path: String) -> Bool {
        guard let descriptor = try? connect(path: path) else { return false }
        close(descriptor)
        return true
    }

    /// Connects to the socket at `path`.
    public static func connect(path: String) throws(ControlSocketError) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .system("creating a socket") }
        do throws(ControlSocketError) {
            try withSocketAddress(path) { address, length throws(ControlSocketError) in
                guard Glibc.connect(descriptor, address, length) == 0 else {
                    throw ControlSocketError("no Earshot is running (cannot connect to its control socket)")
                }
            }
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Sends one request and returns the reply line.
    public static func send(_ request: ControlRequest, path: String) throws(ControlSocketError) -> String {
        let descriptor = try connect(path: path)
        defer { close(descriptor) }
        // Even when the write fails the reply is read: a refusing player answers and hangs up at once.
        let sent = ControlServer.write(request.jsonLine + "\n", to: descriptor)
        // A reply can list the whole queue: tens of thousands of paths.
        var reader = LineReader(descriptor: descriptor, maximumLineBytes: 1 << 28)
        guard case .line(let reply) = reader.nextLine() else {
            throw ControlSocketError(sent ? "the player closed the connection without replying"
                                          : "the player closed the connection")
        }
        return String(decoding: reply, as: UTF8.self)
    }
}
