// MPD's protocol on a loopback TCP port (127.0.0.1:6600 by default) and a Unix socket
// ($XDG_RUNTIME_DIR/earshot/mpd.socket): a front-end like the control socket, not a second player. One accepting
// thread per listener, one thread per client (at most `clientLimit`), each of which may wait for its client and for
// the owner's reply; the owner never waits. A client that does not read its replies is dropped when a send stays
// blocked for `sendTimeoutSeconds` (the kernel's socket buffer is the bounded buffer); one that sends nothing for the
// connection timeout outside `idle` is closed (in `idle` it waits with no timeout at all). Each limit is counted for
// `status` (`MPDLimit`). A port another program holds (a real MPD) is said once in the log; the other listeners keep
// serving.
import EarshotJSON
import EarshotService
import Glibc
import MPDProtocol
import SystemSupport
import Synchronization
import TrackPaths

/// A limit of the MPD front-end that turned a client away or closed its connection: its name is the kind the log
/// carries and the key `status` counts it under.
public enum MPDLimit: String, CaseIterable, Sendable {
    /// Refused at once: `clientLimit` clients were connected.
    case tooManyClients
    /// A line over the line limit (MPDLineBuffer).
    case lineTooLong
    /// A command list over its size limit (MPDFraming).
    case commandListTooLong
    /// A reply left unsent for `sendTimeoutSeconds`: the client does not read.
    case notReading
    /// Nothing sent for the connection timeout outside `idle` (MPD's `connection_timeout`).
    case idleTimeout
}

/// The MPD front-end's listeners and their clients.
public final class MPDServer: Sendable {
    /// The most MPD clients served at once: MPD's own default (`max_connections`), so that as many status bars,
    /// remotes and scrobblers can idle here as there (each idles in a thread of its own, asleep; WakeupTests).
    public static let clientLimit = 100
    /// How long a reply may stay unsent before its client is dropped.
    public static let sendTimeoutSeconds = 10

    private let ask: @Sendable (ControlRequest) -> String
    private let log: EventLog
    /// The stored playlists' folder, absolute.
    private let playlistDirectory: String
    /// The password that unlocks a connection (configuration `mpdPassword`); nil: none needed.
    private let password: String?
    /// The music folders, whose files `listfiles` lists.
    private let musicFolders: [TrackPath]
    /// How long a client outside `idle` may send nothing before it is closed (MPD's `connection_timeout`).
    private let connectionTimeoutSeconds: Int
    /// Earshot's one output as MPD's clients switch it.
    private let outputSwitch = MPDOutputSwitch()
    private let closing = Atomic<Bool>(false)
    private let listeners = LockedValue<[(descriptor: Int32, path: String?)]>([])
    private let clients = LockedValue<Set<Int32>>([])
    /// The changes `idle` reports, per connection.
    private let changes: MPDChanges
    /// The connections each limit refused or closed since the start, for `status`.
    private let limitCounts = LockedValue<[MPDLimit: Int]>([:])
    /// The listeners that could not start, each as its kind and cause (`tcp 127.0.0.1:6600: port taken`), for
    /// `status`.
    public let unavailable: [String]

    /// Starts listening on each of `addresses` ("HOST:PORT", or an absolute Unix socket path) and answering through
    /// `ask` (the control socket's handler). A listener that cannot start is logged by its kind and cause and left
    /// out; the others serve.
    public init(addresses: [String], playlistDirectory: String?, password: String? = nil,
                musicFolders: [TrackPath] = [], connectionTimeoutSeconds: Int, log: EventLog,
                ask: @escaping @Sendable (ControlRequest) -> String) {
        self.ask = ask
        self.musicFolders = musicFolders
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.password = password
        self.log = log
        let environment = ProcessEnvironment.current
        let home = environment["HOME"] ?? "/"
        self.playlistDirectory = playlistDirectory.map { $0.hasPrefix("~/") ? home + $0.dropFirst(1) : $0 }
            ?? MPDStoredPlaylists.defaultDirectory(environment: environment)
        changes = MPDChanges(log: log, ask: ask)
        var unavailable: [String] = []
        for address in addresses {
            let kind = address.hasPrefix("/") ? "socket" : "tcp"
            let opened: Result<Int32, ControlSocketError> = kind == "socket"
                ? Self.listenUnix(path: address) : Self.listenTCP(address)
            switch opened {
            case .failure(let error):
                log.record("mpd", ["listen": kind, "state": "unavailable", "reason": error.description])
                // The user's own status may name the address; the log does not.
                unavailable.append("\(kind) \(address): \(error.description)")
            case .success(let descriptor):
                listeners.withLock { $0.append((descriptor, kind == "socket" ? address : nil)) }
                log.record("mpd", ["listen": kind, "state": "listening"])
            }
        }
        self.unavailable = unavailable
        for listener in listeners.withLock({ $0 }) {
            SystemThread.start(named: "earshot-mpd") { [self] in acceptLoop(listener.descriptor) }
        }
    }

    /// `reply` (a control reply to `status`) with this server's figures in its status object: `mpd` (the clients
    /// connected, those refused and closed by each limit) and, when some could not start, the listeners as
    /// `mpdUnavailable`.
    public func noting(in reply: String) -> String {
        guard var object = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any],
              var status = object["status"] as? [String: Any] else { return reply }
        if !unavailable.isEmpty { status["mpdUnavailable"] = unavailable }
        let counts = limitCounts.withLock { $0 }
        var closed: [String: Any] = [:]
        for limit in MPDLimit.allCases where limit != .tooManyClients { closed[limit.rawValue] = counts[limit] ?? 0 }
        status["mpd"] = [
            "clients": clients.withLock { $0.count },
            "refused": [MPDLimit.tooManyClients.rawValue: counts[.tooManyClients] ?? 0], "closed": closed,
        ] as [String: Any]
        object["status"] = status
        return ControlReply.line(object)
    }

    /// Counts a connection `limit` refused or closed, and logs its kind.
    private func note(_ limit: MPDLimit) {
        limitCounts.withLock { $0[limit, default: 0] += 1 }
        log.record("mpd", [limit == .tooManyClients ? "refused" : "closed": limit.rawValue])
    }

    /// Sends `bytes` to `client`; false when it is gone or stopped reading (a send blocked for `sendTimeoutSeconds`,
    /// which is counted).
    private func send(_ bytes: [UInt8], to client: Int32) -> Bool {
        if ControlServer.write(bytes: bytes, to: client) { return true }
        if errno == EAGAIN || errno == EWOULDBLOCK { note(.notReading) }
        return false
    }

    private func send(_ text: String, to client: Int32) -> Bool { send(Array(text.utf8), to: client) }

    /// Stops accepting, disconnects the clients and removes the socket files.
    public func shutdown() {
        guard !closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        listeners.withLock { listeners in
            for listener in listeners {
                Glibc.shutdown(listener.descriptor, Int32(SHUT_RDWR))
                close(listener.descriptor)
                if let path = listener.path { unlink(path) }
            }
        }
        clients.withLock { descriptors in
            for descriptor in descriptors { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop(_ listener: Int32) {
        while !closing.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { usleep(50_000); continue }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let admitted = clients.withLock { clients in
                guard clients.count < Self.clientLimit else { return false }
                clients.insert(client)
                return true
            }
            guard admitted else {
                note(.tooManyClients)
                close(client)
                continue
            }
            var timeout = timeval(tv_sec: Self.sendTimeoutSeconds, tv_usec: 0)
            _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            SystemThread.start(named: "earshot-mpdconn") { [self] in
                let wake = changes.register(client)
                serve(client, wake: wake)
                changes.unregister(client)
                clients.withLock { _ = $0.remove(client) }
                close(client)
            }
        }
    }

    /// Serves one client until it leaves, asks to close, breaks the framing or stops reading. `wake` becomes readable
    /// when the connection has changes for `idle`.
    private func serve(_ client: Int32, wake: Int32) {
        guard send(MPDSession.greeting, to: client) else { return }
        var buffer = MPDLineBuffer()
        var framing = MPDFraming()
        var session = MPDSession(ask: ask, playlistDirectory: playlistDirectory, password: password,
                                 outputSwitch: outputSwitch, musicFolders: musicFolders)
        var chunk = [UInt8](repeating: 0, count: 4096)
        // What the present `idle` waits for (empty: anything).
        var idleWanted = Set<MPDSubsystem>()
        // The connection timeout runs from the last whole line, or from the end of an `idle`, as MPD counts it: bytes
        // that never end a line do not keep a connection open.
        let timeout = Duration.seconds(connectionTimeoutSeconds)
        var silentUntil = ContinuousClock.now + timeout
        while !closing.load(ordering: .acquiring) {
            if framing.isIdling {
                // Wait for the client (noidle, or hanging up) or for changes, with no timeout: an idle client costs
                // nothing until something happens.
                var polled = [pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                              pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&polled, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else { return }
                if polled[1].revents != 0 {
                    let found = changes.take(client, wanted: idleWanted)
                    if !found.isEmpty {
                        framing.idleEnded()
                        silentUntil = .now + timeout
                        guard send(Self.changedLines(found), to: client) else { return }
                    }
                }
                if polled[0].revents == 0 { continue }
            } else {
                // Outside idle, a client silent for the connection timeout is closed, as MPD closes it. One poll that
                // ends at the timeout, no timer: a silent client wakes its thread once, to be closed.
                var polled = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                let left = Int((silentUntil - .now) / .milliseconds(1))
                let ready = poll(&polled, 1, Int32(clamping: max(0, left)))
                if ready < 0 && errno == EINTR { continue }
                if ready == 0 { note(.idleTimeout) }
                guard ready > 0 else { return }
            }
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return }
            buffer.append(chunk[..<count])
            while let line = buffer.next() {
                guard case .line(let bytes) = line else {
                    note(.lineTooLong)
                    return
                }
                silentUntil = .now + timeout
                switch framing.take(bytes) {
                case .nothing: continue
                case .endIdle:
                    guard send("OK\n", to: client) else { return }
                case .close(.listTooLarge):
                    note(.commandListTooLong)
                    return
                case .close(let reason):
                    log.record("mpd", ["closed": "\(reason)"])
                    return
                case .run(let batch):
                    if !batch.isList, case .success(let request)? = batch.entries.first, request.name == "idle" {
                        if let refusal = session.refusal(of: "idle") {
                            guard send(refusal.line, to: client) else { return }
                            continue
                        }
                        switch MPDCommand.parse(request) {
                        case .success(.idle(let wanted)):
                            idleWanted = wanted
                            let found = changes.take(client, wanted: wanted)
                            if found.isEmpty {
                                framing.idleStarted()
                            } else {
                                guard send(Self.changedLines(found), to: client) else { return }
                            }
                        case .failure(let error):
                            guard send(error.line, to: client) else { return }
                        default: break
                        }
                        continue
                    }
                    if !batch.isList, case .success(let request)? = batch.entries.first,
                       request.name == "albumart" || request.name == "readpicture" {
                        let reply = session.picture(request)
                        guard send(reply, to: client) else { return }
                        continue
                    }
                    let reply = batch.reply { session.run($0) }
                    if !session.changed.isEmpty {
                        changes.post(session.changed)
                        session.changed = []
                    }
                    if session.closeRequested { return }
                    guard send(reply, to: client) else { return }
                }
            }
        }
    }

    /// The reply to `idle`: one `changed:` line a subsystem, sorted, then OK.
    static func changedLines(_ changes: Set<MPDSubsystem>) -> String {
        changes.map(\.rawValue).sorted().map { "changed: \($0)\n" }.joined() + "OK\n"
    }

    /// A listening Unix socket at `path`, user-only; refused when something already answers there.
    private static func listenUnix(path: String) -> Result<Int32, ControlSocketError> {
        let directory = PathText.directory(of: path)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return .failure(.system("creating the socket directory")) }
        if ControlClient.isAnswering(path: path) { return .failure(ControlSocketError("socket in use")) }
        unlink(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(.system("socket")) }
        do throws(ControlSocketError) {
            try withSocketAddress(path) { address, length throws(ControlSocketError) in
                let previous = umask(0o177)
                defer { umask(previous) }
                guard bind(descriptor, address, length) == 0 else { throw .system("bind") }
            }
            guard listen(descriptor, 16) == 0 else { throw .system("listen") }
        } catch {
            close(descriptor)
            return .failure(error)
        }
        return .success(descriptor)
    }

    /// A listening TCP socket at "HOST:PORT" (an IPv4 address, or `localhost`).
    private static func listenTCP(_ address: String) -> Result<Int32, ControlSocketError> {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            return .failure(ControlSocketError("not HOST:PORT"))
        }
        var host = String(address[..<colon])
        if host == "localhost" { host = "127.0.0.1" }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &socketAddress.sin_addr) == 1 else {
            return .failure(ControlSocketError("not an IPv4 address"))
        }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(.system("socket")) }
        var reuse: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let taken = errno == EADDRINUSE
            close(descriptor)
            return .failure(taken ? ControlSocketError("port taken") : .system("bind"))
        }
        guard listen(descriptor, 16) == 0 else {
            close(descriptor)
            return .failure(.system("listen"))
        }
        return .success(descriptor)
    }
}
