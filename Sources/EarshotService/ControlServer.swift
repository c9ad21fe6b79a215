// The control socket: a Unix stream socket at $XDG_RUNTIME_DIR/earshot/control.sock (or $EARSHOT_SOCKET),
// user-only, one thread per client (clients are few and short-lived), line-delimited JSON each way.
import Glibc
import SystemSupport
import Synchronization

/// Where the control socket lives: `$EARSHOT_SOCKET`, else `$XDG_RUNTIME_DIR/earshot/control.sock`, else
/// `/tmp/earshot-<uid>/control.sock`.
public func controlSocketPath(environment: [String: String] = ProcessEnvironment.current) -> String {
    if let path = environment["EARSHOT_SOCKET"], !path.isEmpty { return path }
    if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/earshot/control.sock" }
    return "/tmp/earshot-\(getuid())/control.sock"
}

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
                _ = Self.write(ControlReply.failure("permission denied: not the owner of this player") + "\n", to: client)
                close(client)
                continue
            }
            clients.withLock { _ = $0.insert(client) }
            SystemThread.start(named: "earshot-client") { [self] in
                serve(client)
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

    private func serve(_ client: Int32) {
        var reader = LineReader(descriptor: client, maximumLineBytes: ControlRequest.maximumLineBytes)
        while !closing.load(ordering: .acquiring) {
            switch reader.nextLine() {
            case .end:
                return
            case .tooLong:
                log.record("control", ["refused": "tooLong"])
                guard Self.write(ControlReply.failure("request longer than 65536 bytes") + "\n", to: client) else {
                    return
                }
            case .line(let bytes):
                switch ControlRequest.parse(bytes) {
                case .failure(let error):
                    log.record("control", ["refused": "malformed"])
                    guard Self.write(ControlReply.failure(error.message) + "\n", to: client) else { return }
                case .success(.events):
                    guard Self.write(ControlReply.success(["following": true]) + "\n", to: client) else { return }
                    log.follow(client)
                    // Wait for the follower to hang up (or the server to close); lines arrive from the log.
                    while reader.nextLine() != .end && !closing.load(ordering: .acquiring) {}
                    log.unfollow(client)
                    return
                case .success(let request):
                    guard Self.write(handler(request) + "\n", to: client) else { return }
                }
            }
        }
    }

    /// Writes all of `text`; false when the peer is gone.
    static func write(_ text: String, to descriptor: Int32) -> Bool {
        let bytes = Array(text.utf8)
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

    /// Follows the event log, calling `line` for each line until the player goes away.
    public static func follow(path: String, line: (String) -> Void) throws(ControlSocketError) {
        let descriptor = try connect(path: path)
        defer { close(descriptor) }
        guard ControlServer.write(ControlRequest.events.jsonLine + "\n", to: descriptor) else {
            throw ControlSocketError("the player closed the connection")
        }
        var reader = LineReader(descriptor: descriptor, maximumLineBytes: 1 << 20)
        while case .line(let bytes) = reader.nextLine() {
            line(String(decoding: bytes, as: UTF8.self))
        }
    }
}
