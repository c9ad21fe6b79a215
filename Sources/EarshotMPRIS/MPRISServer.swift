// MPRIS2 on the session bus, through libsystemd's sd-bus: bus name `org.mpris.MediaPlayer2.earshot`,
// object `/org/mpris/MediaPlayer2`, interfaces `org.mpris.MediaPlayer2` and `org.mpris.MediaPlayer2.Player`.
//
// A note on threading
// -------------------
// sd-bus objects are not thread-safe, so one thread, the bus thread this class starts, is the only one that
// touches the `sd_bus` after `start()` returns. It loops: publish what other threads queued, let
// `sd_bus_process` dispatch one message, and when there is nothing to do, `poll` both the bus socket and a
// wake-up pipe.
//
// - Incoming method calls and property writes call `handler` ON THE BUS THREAD. The service's handler puts the
//   command in the owner's inbox and waits for the answer (`ReplySlot`, up to 10 s): the owner answers once the
//   rules have decided and the new state is published (a Pause's cork is then asked for, not yet acknowledged), so
//   the wait is the owner's handling of one input; while it lasts, the bus thread serves nothing else. The handler
//   must not wait for anything that itself waits for the bus thread (`stop()`).
// - Before a Pause, PlayPause, Play or a write of Rate 0 goes to the handler, its sender is identified
//   (`MPRISSender`): sd-bus asks the bus daemon for the sender's process id, a round trip only the bus thread waits
//   for. The sender's kind travels with the command; the owner never waits for the bus.
// - Property reads are answered on the bus thread from the last published snapshot; `Position` calls the
//   `positionProvider` there, so that closure must be quick and must not wait on the player's actor.
// - `update(_:)` and `emitSeeked(positionMicroseconds:)` may be called from any thread, including from
//   inside the handler: they store the request under `lock`, write a byte to the wake-up pipe, and return.
//   The bus thread then compares the new snapshot with the published one and emits one PropertiesChanged
//   naming exactly the properties that changed. Snapshots are coalesced (only the newest matters);
//   Seeked signals are kept in order.
// - If the connection drops (the session bus restarted), the bus thread closes it and reconnects with
//   backoff (0.1 s doubling to 2 s), registering the object and the name again. Clients re-read everything
//   when the name reappears, so nothing is replayed. A reconnection ignores any `guid=` in the address: it
//   names the daemon that went away, and sd-bus would refuse the new one listening at the same place.
import CMPRISShim
import CSystemd
import Dispatch
import Glibc
import SystemSupport

/// Publishes the player on the session bus as an MPRIS2 media player and turns clients' requests into
/// `MPRISCommand`s. It knows nothing of the player: it calls `handler` and shows what `update` tells it.
public final class MPRISServer: MPRISPublishing, @unchecked Sendable {
    // Unchecked Sendable: the properties under "Shared" are guarded by `lock`; those under "Bus thread" are
    // touched only by the bus thread once it runs (`start()` hands them over before starting it); the rest
    // are immutable.

    /// The well-known bus name.
    public static let busName = "org.mpris.MediaPlayer2.earshot"
    /// The object path MPRIS clients look at.
    public static let objectPath = "/org/mpris/MediaPlayer2"
    /// The root interface.
    public static let rootInterface = "org.mpris.MediaPlayer2"
    /// The player interface.
    public static let playerInterface = "org.mpris.MediaPlayer2.Player"
    /// The `mpris:trackid` of "no track" (the MPRIS specification's reserved path).
    public static let noTrackId = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    /// Answers clients' requests, on the bus thread.
    let handler: @Sendable (MPRISCommand) -> MPRISReply
    /// The position in microseconds, asked on the bus thread when `Position` is read.
    let positionProvider: @Sendable () -> Int64
    private let busAddress: String?
    /// The MIME types `SupportedMimeTypes` lists; set once in `init`.
    let supportedMimeTypes: [String]
    private let connectionChanged: @Sendable (MPRISConnectionChange) -> Void
    /// The C vtables' userdata: this object (unretained) and the three entry points. Freed in deinit.
    private let callbacks: UnsafeMutablePointer<EarshotMPRISCallbacks>
    /// The wake-up pipe: [read end, write end], both non-blocking.
    private let wakePipe: [Int32]
    private let finished = DispatchSemaphore(value: 0)

    // Shared: guarded by `lock`.
    private let lock = Lock()
    private var pendingSnapshot: MPRISSnapshot?
    private var pendingSeeks: [Int64] = []
    private var started = false
    private var stopRequested = false
    private var connected = false
    private var busThread: pthread_t?

    // Bus thread.
    private var bus: OpaquePointer?
    /// The snapshot clients were last told of (bus thread only).
    private(set) var published = MPRISSnapshot()

    /// A server that connects to `busAddress` (a D-Bus address such as `unix:path=/run/user/1000/bus`), or
    /// when nil to the user's session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`).
    /// `handler` answers clients' requests on the bus thread; `positionProvider` gives the position in
    /// microseconds when a client reads `Position`. `connectionChanged` hears of connections made and lost (on the
    /// calling thread for the first, on the bus thread later), for the owner's log. `supportedMimeTypes` is what the
    /// player plays (the decoders' list, which this adapter does not know by itself).
    public init(
        busAddress: String? = nil, supportedMimeTypes: [String] = [],
        connectionChanged: @escaping @Sendable (MPRISConnectionChange) -> Void = { _ in },
        positionProvider: @escaping @Sendable () -> Int64 = { 0 },
        handler: @escaping @Sendable (MPRISCommand) -> MPRISReply
    ) {
        self.busAddress = busAddress
        self.supportedMimeTypes = supportedMimeTypes
        self.connectionChanged = connectionChanged
        self.positionProvider = positionProvider
        self.handler = handler
        wakePipe = BusPoll.makeWakePipe()
        callbacks = .allocate(capacity: 1)
        // The closures capture nothing (C function pointers cannot): each recovers the server from `owner`.
        callbacks.initialize(to: EarshotMPRISCallbacks(
            owner: nil,
            method: { message, owner, error in
                guard let message, let owner, let error else { return -EINVAL }
                let server = Unmanaged<MPRISServer>.fromOpaque(owner).takeUnretainedValue()
                return server.methodCalled(
                    OpaquePointer(message), error: error.assumingMemoryBound(to: sd_bus_error.self))
            },
            get: { interface, property, reply, owner, error in
                guard let interface, let property, let reply, let owner, let error else { return -EINVAL }
                let server = Unmanaged<MPRISServer>.fromOpaque(owner).takeUnretainedValue()
                return server.propertyRead(
                    interface: String(cString: interface), property: String(cString: property),
                    reply: OpaquePointer(reply), error: error.assumingMemoryBound(to: sd_bus_error.self))
            },
            set: { interface, property, value, owner, error in
                guard let interface, let property, let value, let owner, let error else { return -EINVAL }
                let server = Unmanaged<MPRISServer>.fromOpaque(owner).takeUnretainedValue()
                return server.propertyWritten(
                    interface: String(cString: interface), property: String(cString: property),
                    value: OpaquePointer(value), error: error.assumingMemoryBound(to: sd_bus_error.self))
            }))
        // Unretained: the bus thread holds the server strongly for as long as the vtables are registered.
        callbacks.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
        for descriptor in wakePipe where descriptor >= 0 { close(descriptor) }
    }

    // MARK: Owner's side (any thread)

    /// Connects, registers the object, takes the bus name, and starts the bus thread. Throws if the first
    /// connection fails (no session bus, or the name is taken by another Earshot); later drops are retried.
    public func start() throws(MPRISError) {
        lock.lock()
        defer { lock.unlock() }
        // Started once: a stopped server is not restarted (its thread and name are gone).
        guard !started, !stopRequested else { return }
        guard wakePipe[0] >= 0 else { throw MPRISError(operation: "create the wake-up pipe", code: EMFILE) }
        if let snapshot = pendingSnapshot {
            published = snapshot
            pendingSnapshot = nil
        }
        // The first connection is made here, on the caller's thread, so its failure can be thrown; the bus is
        // handed to the bus thread below and never touched here again.
        bus = try connect()
        connected = true
        started = true
        // Set under the lock `start` holds, so the thread's own `busThread = nil` at its end cannot come first.
        busThread = SystemThread.start(named: "earshot-mpris") { [self] in
            runBusThread()
            // Forgotten at the end, so `stop` called later need not wait for a thread that is gone.
            lock.lock()
            busThread = nil
            lock.unlock()
            finished.signal()
        }
        connectionChanged(.connected)
    }

    /// Stops the bus thread, releasing the name. Waits for the thread unless called on it (from the handler).
    public func stop() {
        lock.lock()
        let wasRunning = started && !stopRequested
        stopRequested = true
        let thread = busThread
        lock.unlock()
        guard wasRunning else { return }
        wake()
        if let thread, !SystemThread.isCurrent(thread) {
            WaitGuard.check("MPRISServer.stop")
            finished.wait()
        }
    }

    /// Whether the server is connected to the bus now (false while it is reconnecting).
    public var isConnected: Bool {
        lock.lock()
        defer { lock.unlock() }
        return connected
    }

    /// Publishes `snapshot`: the bus thread emits PropertiesChanged for the properties that differ from the
    /// previous snapshot. Returns at once. Before `start()`, sets what is shown from the start.
    public func update(_ snapshot: MPRISSnapshot) {
        lock.lock()
        pendingSnapshot = snapshot
        lock.unlock()
        wake()
    }

    /// Emits `Seeked(positionMicroseconds)`: after a seek, or when the position jumped in a way a client
    /// extrapolating from the last position could not guess. Returns at once.
    public func emitSeeked(positionMicroseconds: Int64) {
        lock.lock()
        pendingSeeks.append(positionMicroseconds)
        lock.unlock()
        wake()
    }

    private func wake() {
        BusPoll.wake(writeEnd: wakePipe[1])
    }

    // MARK: Connection (bus thread, or `start()` before it)

    /// Connects and registers. `reconnecting`: the bus was lost, so a server GUID in the address is dropped.
    private func connect(reconnecting: Bool = false) throws(MPRISError) -> OpaquePointer {
        var newBus: OpaquePointer?
        var address = busAddress
        // The session's address as sd_bus_open_user reads it; without one, sd_bus_open_user finds the bus itself.
        if reconnecting, let given = busAddress ?? ProcessEnvironment.value(named: "DBUS_SESSION_BUS_ADDRESS") {
            address = Self.addressForgettingServer(given)
        }
        if let address {
            var result = sd_bus_new(&newBus)
            guard result >= 0, let created = newBus else { throw MPRISError(operation: "create a bus", code: -result) }
            result = sd_bus_set_address(created, address)
            if result >= 0 { result = sd_bus_set_bus_client(created, 1) }
            if result >= 0 { result = sd_bus_start(created) }
            guard result >= 0 else {
                sd_bus_unref(created)
                throw MPRISError(operation: "connect to the session bus", code: -result)
            }
        } else {
            let result = sd_bus_open_user(&newBus)
            guard result >= 0, newBus != nil else {
                throw MPRISError(operation: "connect to the session bus", code: -result)
            }
        }
        guard let newBus else { throw MPRISError(operation: "connect to the session bus", code: EIO) }
        let root = earshot_mpris_root_vtable().assumingMemoryBound(to: sd_bus_vtable.self)
        let player = earshot_mpris_player_vtable().assumingMemoryBound(to: sd_bus_vtable.self)
        // No slots kept: the registrations live exactly as long as the connection.
        var result = sd_bus_add_object_vtable(newBus, nil, Self.objectPath, Self.rootInterface, root, callbacks)
        if result >= 0 {
            result = sd_bus_add_object_vtable(newBus, nil, Self.objectPath, Self.playerInterface, player, callbacks)
        }
        guard result >= 0 else {
            sd_bus_flush_close_unref(newBus)
            throw MPRISError(operation: "register the MPRIS object", code: -result)
        }
        // No ALLOW_REPLACEMENT and no QUEUE: one Earshot per session owns the name; a second one is told.
        result = sd_bus_request_name(newBus, Self.busName, 0)
        guard result >= 0 else {
            sd_bus_flush_close_unref(newBus)
            throw MPRISError(operation: "request the name \(Self.busName)", code: -result)
        }
        return newBus
    }

    /// `address` (a D-Bus address: `transport:key=value,...;...`) without its `guid` keys. A GUID pins the
    /// address to one daemon; once that daemon is gone, the session's bus is whichever listens there now.
    static func addressForgettingServer(_ address: String) -> String {
        BusAddress.forgettingServer(address)
    }

    private func disconnect() {
        guard let bus else { return }
        sd_bus_flush_close_unref(bus)
        self.bus = nil
        lock.lock()
        connected = false
        lock.unlock()
    }

    // MARK: The bus thread

    private func runBusThread() {
        var backoffMilliseconds: Int32 = 100
        while !isStopRequested() {
            guard let bus else {
                // Reconnecting: sleep on the wake-up pipe so `stop()` is not kept waiting.
                BusPoll.wait(wakePipe: wakePipe[0], descriptor: -1, events: 0, timeoutMilliseconds: backoffMilliseconds)
                if isStopRequested() { break }
                do throws(MPRISError) {
                    self.bus = try connect(reconnecting: true)
                    lock.lock()
                    connected = true
                    lock.unlock()
                    backoffMilliseconds = 100
                    connectionChanged(.reconnected)
                } catch {
                    backoffMilliseconds = min(backoffMilliseconds * 2, 2000)
                }
                continue
            }
            publishPending()
            let processed = sd_bus_process(bus, nil)
            if processed < 0 || sd_bus_is_open(bus) <= 0 {
                connectionChanged(.lost(error: processed < 0 ? "\(-processed)" : "closed"))
                disconnect()
                continue
            }
            if processed > 0 { continue }
            let events = sd_bus_get_events(bus)
            var deadline: UInt64 = 0
            guard events >= 0, sd_bus_get_timeout(bus, &deadline) >= 0 else {
                disconnect()
                continue
            }
            BusPoll.wait(
                wakePipe: wakePipe[0], descriptor: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: events),
                timeoutMilliseconds: BusPoll.relativeMilliseconds(untilMonotonicMicroseconds: deadline))
        }
        publishPending()
        disconnect()
    }

    private func isStopRequested() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    /// Emits what other threads queued: one PropertiesChanged for the newest snapshot, then the Seeked signals.
    private func publishPending() {
        lock.lock()
        let snapshot = pendingSnapshot
        let seeks = pendingSeeks
        pendingSnapshot = nil
        pendingSeeks = []
        lock.unlock()
        if let snapshot {
            let changed = snapshot.changedProperties(since: published)
            // Published before emitting: sd-bus builds the signal by calling our getters, which read it.
            published = snapshot
            if let bus, !changed.isEmpty { emitPropertiesChanged(changed, on: bus) }
        }
        if let bus {
            for position in seeks { emitSeekedSignal(position, on: bus) }
        }
    }

    private func emitPropertiesChanged(_ names: [String], on bus: OpaquePointer) {
        var strings: [UnsafeMutablePointer<CChar>?] = names.map { strdup($0) }
        strings.append(nil)
        defer { for string in strings { free(string) } }
        // A failure means the connection is going away; the loop notices it on the next process.
        _ = sd_bus_emit_properties_changed_strv(bus, Self.objectPath, Self.playerInterface, &strings)
    }

    private func emitSeekedSignal(_ position: Int64, on bus: OpaquePointer) {
        var signal: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &signal, Self.objectPath, Self.playerInterface, "Seeked") >= 0,
              let signal else { return }
        defer { sd_bus_message_unref(signal) }
        var value = position
        guard sd_bus_message_append_basic(signal, BusType.int64, &value) >= 0 else { return }
        _ = sd_bus_send(bus, signal, nil)
    }

    // MARK: Methods (bus thread)

    private func methodCalled(_ message: OpaquePointer, error: UnsafeMutablePointer<sd_bus_error>) -> Int32 {
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? ""
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        let command: MPRISCommand
        switch (interface, member) {
        case (Self.rootInterface, "Raise"):
            // CanRaise is false: a service has no window. The call is still answered, as the spec asks.
            return replyEmpty(to: message)
        case (Self.rootInterface, "Quit"): command = .quit
        case (Self.playerInterface, "Next"): command = .next
        case (Self.playerInterface, "Previous"): command = .previous
        // Rule 21: who sent a Pause, and so who may send the Play or PlayPause that answers it.
        case (Self.playerInterface, "Pause"): command = .pause(MPRISSender.of(message: message))
        case (Self.playerInterface, "PlayPause"): command = .playPause(MPRISSender.of(message: message))
        case (Self.playerInterface, "Stop"): command = .stop
        case (Self.playerInterface, "Play"): command = .play(MPRISSender.of(message: message))
        case (Self.playerInterface, "Seek"):
            guard let offset = readInt64(message) else { return invalidArguments(error, "Seek needs an offset (x)") }
            command = .seek(offsetMicroseconds: offset)
        case (Self.playerInterface, "SetPosition"):
            guard let trackId = readString(message, type: BusType.objectPath), let position = readInt64(message) else {
                return invalidArguments(error, "SetPosition needs a track id (o) and a position (x)")
            }
            // The MPRIS rules: a stale track id, a negative position or one past the end is ignored.
            let current = published.trackId ?? Self.noTrackId
            let pastEnd = published.lengthMicroseconds.map { position > $0 } ?? false
            if trackId != current || position < 0 || pastEnd { return replyEmpty(to: message) }
            command = .setPosition(trackId: trackId, positionMicroseconds: position)
        case (Self.playerInterface, "OpenUri"):
            guard let uri = readString(message, type: BusType.string) else {
                return invalidArguments(error, "OpenUri needs a URI (s)")
            }
            switch MPRISURI.localFile(uri) {
            case .file(let path): command = .openUri(paths: [path])
            case .refused(let reason): return invalidArguments(error, reason)
            }
        default:
            return sd_bus_error_set(error, "org.freedesktop.DBus.Error.UnknownMethod", "unknown method \(member)")
        }
        switch handler(command) {
        case .done: return replyEmpty(to: message)
        case .refused(let reason): return sd_bus_error_set(error, "org.freedesktop.DBus.Error.Failed", reason)
        }
    }

    private func replyEmpty(to call: OpaquePointer) -> Int32 {
        var reply: OpaquePointer?
        let result = sd_bus_message_new_method_return(call, &reply)
        guard result >= 0, let reply else { return result }
        defer { sd_bus_message_unref(reply) }
        let sent = sd_bus_send(nil, reply, nil)
        return sent < 0 ? sent : 1
    }
}
