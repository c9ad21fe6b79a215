// What MPD's `idle` reports: the changes since a connection's last report, per connection. One watcher thread follows
// the event log through a socket pair (a follower like `earshot events`, with its bounded queue); on each line of an
// event or of the library it asks the owner's status (on its own thread, which may wait) and compares it with the
// last: the playback, track or pause reason changed is `player`, the volume `mixer`, the play modes `options`, the
// queue `playlist`, the library's scans `update` and `database`. Each connection's changes accumulate until its next
// `idle` takes them; a connection waiting in `idle` is woken through its own pipe. The owner never waits for any of it.
import EarshotJSON
import EarshotService
import Glibc
import MPDProtocol
import SystemSupport

/// The changes every MPD connection has not been told of yet, and the thread that finds them.
final class MPDChanges: Sendable {
    /// One connection's pending changes and the pipe that wakes it while it idles ([read end, write end]).
    private struct Connection {
        var pending: Set<MPDSubsystem> = []
        let wakePipe: [Int32]
    }

    private let connections = LockedValue<[Int32: Connection]>([:])
    private let watching = LockedValue<Bool>(false)
    private let ask: @Sendable (ControlRequest) -> String
    private let log: EventLog

    init(log: EventLog, ask: @escaping @Sendable (ControlRequest) -> String) {
        self.log = log
        self.ask = ask
    }

    /// Registers the connection on `client` and returns the descriptor that becomes readable when it has changes.
    /// Starts the watcher with the first connection.
    func register(_ client: Int32) -> Int32 {
        let wakePipe = BusPoll.makeWakePipe()
        connections.withLock { $0[client] = Connection(wakePipe: wakePipe) }
        let start = watching.withLock { running in
            defer { running = true }
            return !running
        }
        if start { startWatcher() }
        return wakePipe[0]
    }

    /// Forgets the connection on `client`.
    func unregister(_ client: Int32) {
        guard let connection = connections.withLock({ $0.removeValue(forKey: client) }) else { return }
        for descriptor in connection.wakePipe where descriptor >= 0 { close(descriptor) }
    }

    /// Takes the connection's pending changes (all of them, as MPD clears them) and returns those in `wanted` (every
    /// one when `wanted` is empty); empties its wake-up pipe.
    func take(_ client: Int32, wanted: Set<MPDSubsystem>) -> Set<MPDSubsystem> {
        guard let connection = connections.withLock({ connections -> Connection? in
            guard let connection = connections[client] else { return nil }
            connections[client]?.pending = []
            return connection
        }) else { return [] }
        var byte: UInt8 = 0
        while read(connection.wakePipe[0], &byte, 1) > 0 {}
        return wanted.isEmpty ? connection.pending : connection.pending.intersection(wanted)
    }

    /// Adds `changes` to every connection's pending set and wakes each.
    func post(_ changes: Set<MPDSubsystem>) {
        guard !changes.isEmpty else { return }
        let pipes = connections.withLock { connections -> [Int32] in
            for client in connections.keys { connections[client]?.pending.formUnion(changes) }
            return connections.values.map { $0.wakePipe[1] }
        }
        var byte: UInt8 = 1
        // Never waits: the wake-up pipes are non-blocking (BusPoll.makeWakePipe); a full one already holds a wake-up.
        for descriptor in pipes where descriptor >= 0 { _ = write(descriptor, &byte, 1) }
    }

    /// The watcher: a follower of the event log on a socket pair, read line by line on a thread of its own.
    private func startWatcher() {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            log.record("mpd", ["idle": "unavailable", "reason": "socketpair"])
            return
        }
        guard log.follow(pair[0], greeting: []) else {
            close(pair[0])
            close(pair[1])
            log.record("mpd", ["idle": "unavailable", "reason": "tooManyFollowers"])
            return
        }
        let reader = pair[1]
        SystemThread.start(named: "earshot-mpdidle") { [self] in
            var buffer = MPDLineBuffer(limit: 1 << 16)
            var last = statusObject()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(reader, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                buffer.append(chunk[..<count])
                var changes = Set<MPDSubsystem>()
                var relevant = false
                while let line = buffer.next() {
                    guard case .line(let bytes) = line else { continue }
                    let text = String(decoding: bytes, as: UTF8.self)
                    changes.formUnion(Self.changes(line: text))
                    if text.contains(" event ") { relevant = true }
                }
                if relevant, let now = statusObject() {
                    if let last { changes.formUnion(Self.changes(from: last, to: now)) }
                    last = now
                }
                post(changes)
            }
            close(reader)
        }
    }

    /// The owner's status object, nil when it did not answer.
    private func statusObject() -> [String: Any]? {
        let reply = ask(.status)
        let object = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any]
        return object?["status"] as? [String: Any]
    }

    /// What one log line says by itself: a queue's event is `playlist`, a seek `player`, the library's lines `update`
    /// (and `database` when a scan finished).
    static func changes(line: String) -> Set<MPDSubsystem> {
        var changes = Set<MPDSubsystem>()
        if line.contains(" event kind=queue") || line.contains(" event kind=userAdd")
            || line.contains(" event kind=userClear") || line.contains(" event kind=userLoad") {
            changes.insert(.playlist)
        }
        if line.contains(" event kind=userSeek") { changes.insert(.player) }
        if line.contains(" library ") && line.contains("scan") {
            changes.insert(.update)
            if line.contains("finished") || line.contains("done") { changes.insert(.database) }
        }
        return changes
    }

    /// What changed between two status objects, in MPD's subsystems.
    static func changes(from old: [String: Any], to new: [String: Any]) -> Set<MPDSubsystem> {
        func differs(_ key: String) -> Bool { "\(old[key] ?? "")" != "\(new[key] ?? "")" }
        var changes = Set<MPDSubsystem>()
        if differs("playback") || differs("trackIndex") || differs("pauseReason") { changes.insert(.player) }
        if differs("volume") { changes.insert(.mixer) }
        if differs("repeat") || differs("shuffle") || differs("single") || differs("consume") {
            changes.insert(.options)
        }
        if (old["replayGain"] as? [String: Any])?["mode"] as? String
            != (new["replayGain"] as? [String: Any])?["mode"] as? String { changes.insert(.options) }
        if differs("trackCount") { changes.insert(.playlist) }
        return changes
    }
}
