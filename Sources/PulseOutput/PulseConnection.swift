// A note on threading
// ===================
//
// libpulse's threaded mainloop runs one thread of its own. Every callback this module registers (context state,
// subscription events, stream state, write requests, moves, stream events, operation replies and the timeout
// alarm) runs on that thread with the mainloop lock held. So callbacks:
//   - never block, never wait and never take the lock (they already hold it);
//   - only translate what the server said into a Swift value and hand it to a notice handler, or fill in a reply
//     and signal the mainloop;
//   - when they need more information (a subscription event only carries an index), start a further
//     asynchronous operation whose own callback delivers the result. Nothing ever waits inside a callback.
// The write callback is stricter still (see PlaybackStream+Supply.swift): it only copies frames.
//
// Two kinds of public method. What a playing owner calls never waits: a stream's commands (PlaybackStream+Commands
// .swift) and the connection's `requestInventory` and `requestServerInfo` take the lock, send their request and
// return; the answer arrives later as a notice (or through the given closure) on the mainloop thread. They may be
// called from anywhere, a notice handler included.
//
// The rest wait, for set-up and for tests: `connect`, `subscribe`, `serverInfo` and the list queries (`sinks()`
// and so on) take the lock, start an operation, and sleep in `pa_threaded_mainloop_wait` (which releases the lock
// while asleep) until the operation's callback signals. Every wait is bounded: an alarm on the mainloop wakes it
// after a timeout, operations cancelled by a dying context wake it through their state callback, and an operation
// still running after the wait is cancelled with the lock held, so its callback can never run against a reply that
// no longer exists (Waiting.swift). A waiting method called on the mainloop thread (from a notice handler) throws
// instead of deadlocking. A serial owner that must never wait uses only the first kind once it is connected.
//
// Notice handlers are therefore called on the mainloop thread with the lock held: they must return quickly and
// must not call waiting methods; hand the notice to your own serial owner (an actor, a queue) and return.
//
// The mainloop is stopped (in deinit) without holding the lock: `pa_threaded_mainloop_stop` joins the loop
// thread, which needs the lock to finish its iteration.

import CPulse
import CThreadShim
import Glibc
import SystemSupport

/// Something that happened to the connection or on the server, as delivered to `PulseConnection`'s notice
/// handler. Carries no C types and no user content (no stream or track names).
public enum ConnectionNotice: Sendable, Equatable {
    /// The connection is ready.
    case ready
    /// The connection failed. After `.ready`, this means the server went away (code `.connectionTerminated` when
    /// the server died): every stream on this connection is gone with it.
    case failed(PulseError)
    /// The connection was closed by us (`disconnect()`).
    case terminated
    /// A raw subscription event (sink, sink input, card, source, source output or server), delivered before any
    /// follow-up notice.
    case serverChange(ServerChange)
    /// The server's information changed (for example its default sink), after a SERVER CHANGE event.
    case serverInfoChanged(ServerInfo)
    /// A sink appeared (SINK NEW, then a sink info query).
    case sinkAdded(SinkSnapshot)
    /// A sink changed (SINK CHANGE, then a sink info query).
    case sinkChanged(SinkSnapshot)
    /// A sink was removed; the index of the sink that is gone.
    case sinkRemoved(UInt32)
    /// A sink input (anyone's playback stream) appeared or changed (then a sink input info query).
    case sinkInputChanged(SinkInputSnapshot)
    /// A sink input went away; the index of the stream that is gone.
    case sinkInputRemoved(UInt32)
    /// A card appeared or changed (CARD NEW or CHANGE, then a card info query): a Bluetooth profile switch shows
    /// here as a new active profile.
    case cardChanged(CardSnapshot)
    /// A card was removed (a Bluetooth headset disconnected, a USB device unplugged); the index of the card.
    case cardRemoved(UInt32)
    /// A source appeared or changed (then a source info query).
    case sourceChanged(SourceSnapshot)
    /// A source was removed; the index of the source that is gone.
    case sourceRemoved(UInt32)
    /// A capture stream (anyone's source output) appeared or changed (then a source output info query).
    case sourceOutputChanged(SourceOutputSnapshot)
    /// A capture stream went away; the index of the stream that is gone.
    case sourceOutputRemoved(UInt32)
}

/// A connection to the sound server (PulseAudio, or PipeWire through pipewire-pulse): owns libpulse's threaded
/// mainloop and context, answers queries, and reports server changes through its notice handler.
///
/// Create one, call `connect(applicationName:)`, then optionally `subscribe()`. A connection that failed cannot be
/// reconnected: create a new one.
public final class PulseConnection: @unchecked Sendable {
    // Unchecked Sendable: `mainloop`, `noticeHandler` and `operationTimeout` never change after init. `context`,
    // `streams`, `inventories`, `cardsToDescribe` and `sinkListingsUnderWay` are only read or written with the mainloop
    // lock held (callbacks hold it; methods take it).

    /// The threaded mainloop; created and started in init, stopped and freed in deinit.
    let mainloop: OpaquePointer
    /// The context, once `connect` created it.
    private(set) var context: OpaquePointer?
    /// The open streams on this connection, told when the connection fails (`connectionIsFailing()`).
    private var streams: [ObjectIdentifier: WeakStream] = [:]
    /// Inventories being collected (`requestInventory`): kept alive here while their list callbacks may still run.
    private var inventories: [ObjectIdentifier: InventoryCollector] = [:]
    /// The cards whose sinks the listings under way describe again after a card change (`describeSinks`).
    private var cardsToDescribe: Set<UInt32> = []
    /// How many of those listings are under way (a connection connects once: a listing cancelled with its context
    /// leaves nothing that a later one waits for).
    private var sinkListingsUnderWay = 0
    /// Receives notices on the mainloop thread.
    private let noticeHandler: @Sendable (ConnectionNotice) -> Void
    /// How long a public method waits for the server before it gives up with `.timeout`.
    public let operationTimeout: Duration

    /// Creates a connection (not yet connected) and starts libpulse's mainloop thread.
    ///
    /// - Parameters:
    ///   - operationTimeout: how long any method waits for the server.
    ///   - noticeHandler: called on the libpulse thread with the lock held; must return quickly and must not call
    ///     waiting methods of this module.
    public init(
        operationTimeout: Duration = .seconds(5),
        noticeHandler: @escaping @Sendable (ConnectionNotice) -> Void = { _ in }
    ) throws(PulseError) {
        guard let loop = pa_threaded_mainloop_new() else {
            throw PulseError(code: .badState, step: "create mainloop")
        }
        // Started before anything can hold the lock; an idle loop just sleeps in poll.
        guard pa_threaded_mainloop_start(loop) >= 0 else {
            pa_threaded_mainloop_free(loop)
            throw PulseError(code: .badState, step: "start mainloop")
        }
        self.mainloop = loop
        self.operationTimeout = operationTimeout
        self.noticeHandler = noticeHandler
    }

    deinit {
        let loop = mainloop
        let context = self.context
        let teardown = DetachedHandles(mainloop: loop, context: context)
        if pa_threaded_mainloop_in_thread(loop) != 0 {
            // The last reference went away inside a callback: the lock is held, and the loop cannot be stopped
            // from its own thread. Silence the context now and stop the loop from another thread.
            teardown.silenceContext()
            SystemThread.start(named: "earshot-teardown") { teardown.stopAndFree() }
            return
        }
        pa_threaded_mainloop_lock(loop)
        teardown.silenceContext()
        pa_threaded_mainloop_unlock(loop)
        if WaitGuard.isForbiddenHere {
            // Released by the owner (a connection that failed, the server gone): stopping joins the loop's thread,
            // which the owner never waits for (WaitGuard), so a thread of its own does it.
            SystemThread.start(named: "earshot-teardown") { teardown.stopAndFree() }
            return
        }
        teardown.stopAndFree()
    }

    /// Connects to the default server (the `PULSE_SERVER` environment variable, else the session's server), or to
    /// `server` when given, and waits until the connection is ready or has failed. Never spawns a server.
    public func connect(applicationName: String, server: String? = nil) throws(PulseError) {
        try lockedForWaiting("connect") { () throws(PulseError) in
            guard context == nil else {
                throw PulseError(code: .badState, step: "connect (already connected once)")
            }
            guard let api = pa_threaded_mainloop_get_api(mainloop) else {
                throw PulseError(code: .badState, step: "connect (no mainloop api)")
            }
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, applicationName)
            guard let newContext = pa_context_new_with_proplist(api, applicationName, properties) else {
                throw PulseError(code: .badState, step: "create context")
            }
            context = newContext
            pa_context_set_state_callback(newContext, { context, userdata in
                guard let context, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.contextStateChanged(pa_context_get_state(context))
            }, Unmanaged.passUnretained(self).toOpaque())

            // A background service must not start a sound server of its own.
            guard pa_context_connect(newContext, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
                throw PulseError.lastError(of: newContext, step: "connect")
            }
            let settled = waitLocked(timeout: operationTimeout) {
                let state = pa_context_get_state(newContext)
                return state == PA_CONTEXT_READY || state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED
            }
            let state = pa_context_get_state(newContext)
            if state == PA_CONTEXT_READY {
                return
            }
            if !settled {
                // Leave no half-open connection behind that could report "ready" later.
                pa_context_set_state_callback(newContext, nil, nil)
                pa_context_disconnect(newContext)
                throw PulseError(code: .timeout, step: "connect")
            }
            throw PulseError.lastError(of: newContext, step: "connect")
        }
    }

    /// Whether the connection is ready (connected and not failed).
    public var isReady: Bool {
        withLock {
            guard let context else { return false }
            return pa_context_get_state(context) == PA_CONTEXT_READY
        }
    }

    /// The kernel thread id of libpulse's mainloop thread: the thread that runs every callback, the write callback
    /// included, so the one whose scheduling priority decides whether the server gets its data in time. Asked on that
    /// thread itself (a deferred event), so it is the id `/proc/PID/task/` and rtkit know.
    public func mainloopThreadID() throws(PulseError) -> Int32 {
        try lockedForWaiting("find the mainloop thread") { () throws(PulseError) -> Int32 in
            guard let api = pa_threaded_mainloop_get_api(mainloop), let deferNew = api.pointee.defer_new else {
                throw PulseError(code: .badState, step: "find the mainloop thread (no mainloop api)")
            }
            let reply = Reply<Int32>(mainloop: mainloop, value: 0)
            let event = deferNew(api, { api, event, userdata in
                // Runs once on the mainloop thread, lock held; the event frees itself.
                api?.pointee.defer_free(event)
                guard let reply = Reply<Int32>.from(userdata) else { return }
                reply.value = earshot_thread_id()
                reply.finish(succeeded: true)
            }, reply.userdata)
            guard let event else {
                throw PulseError(code: .badState, step: "find the mainloop thread (no deferred event)")
            }
            let done = waitLocked(timeout: operationTimeout) { reply.isFinished }
            if !done {
                // Freed with the lock held, so the callback can never run against a reply that is gone.
                api.pointee.defer_free(event)
                throw PulseError(code: .timeout, step: "find the mainloop thread")
            }
            return reply.value
        }
    }

    /// Closes the connection; the notice handler receives `.terminated`. Streams on it fail.
    public func disconnect() {
        withLock {
            if let context {
                pa_context_disconnect(context)
            }
        }
    }

    /// Subscribes to sink, sink input, card, source, source output and server events. From then on the notice
    /// handler receives `.serverChange` for each event and, after a follow-up query where one is needed,
    /// `.sinkAdded`, `.sinkChanged`, `.sinkRemoved`, `.sinkInputChanged`, `.sinkInputRemoved`,
    /// `.cardChanged`, `.cardRemoved`, `.sourceChanged`, `.sourceRemoved`, `.sourceOutputChanged`,
    /// `.sourceOutputRemoved` and `.serverInfoChanged`. Port changes are read from whole sink snapshots by whoever
    /// follows a sink (`ServerEventTranslator`).
    public func subscribe() throws(PulseError) {
        try lockedForWaiting("subscribe") { () throws(PulseError) in
            guard let context else { throw PulseError(code: .badState, step: "subscribe") }
            pa_context_set_subscribe_callback(context, { _, event, index, userdata in
                guard let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.serverChanged(rawEvent: event.rawValue, index: index)
            }, Unmanaged.passUnretained(self).toOpaque())
            let mask = PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_SINK_INPUT.rawValue
                | PA_SUBSCRIPTION_MASK_CARD.rawValue | PA_SUBSCRIPTION_MASK_SOURCE.rawValue
                | PA_SUBSCRIPTION_MASK_SOURCE_OUTPUT.rawValue | PA_SUBSCRIPTION_MASK_SERVER.rawValue
            try performLocked("subscribe", initial: ()) { reply in
                pa_context_subscribe(context, pa_subscription_mask_t(rawValue: mask), { _, success, userdata in
                    Reply<Void>.from(userdata)?.finish(succeeded: success != 0)
                }, reply.userdata)
            }
        }
    }

    // MARK: - Callbacks (mainloop thread, lock held)

    /// Hands a notice to the owner's handler. Mainloop thread only.
    func deliver(_ notice: ConnectionNotice) {
        noticeHandler(notice)
    }

    private func contextStateChanged(_ state: pa_context_state_t) {
        switch state {
        case PA_CONTEXT_READY:
            deliver(.ready)
        case PA_CONTEXT_FAILED:
            // libpulse fails the streams only after this callback: their timing can still be read, once.
            for entry in streams.values {
                entry.stream?.connectionIsFailing()
            }
            deliver(.failed(PulseError.lastError(of: context, step: "connection")))
        case PA_CONTEXT_TERMINATED:
            deliver(.terminated)
        default:
            break
        }
        // Whoever waits in connect() or for an operation re-checks the state.
        pa_threaded_mainloop_signal(mainloop, 0)
    }

    private func serverChanged(rawEvent: UInt32, index: UInt32) {
        let change = ServerChange(rawEvent: rawEvent, index: index)
        deliver(.serverChange(change))
        guard let context else { return }
        let me = Unmanaged.passUnretained(self).toOpaque()
        // Follow-ups are asynchronous operations; their callbacks deliver. Operations still pending when the
        // context goes away are cancelled by libpulse and never call back.
        switch (change.facility, change.kind) {
        case (.sinkInput, .new), (.sinkInput, .change):
            release(pa_context_get_sink_input_info(context, index, { _, info, _, userdata in
                // A failed lookup (the stream is already gone) is followed by its own REMOVE event.
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.deliver(.sinkInputChanged(SinkInputSnapshot(info.pointee)))
            }, me))
        case (.sinkInput, .remove):
            deliver(.sinkInputRemoved(index))
        case (.sink, .new):
            release(pa_context_get_sink_info_by_index(context, index, { _, info, _, userdata in
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.sinkDescribed(SinkSnapshot(info.pointee), isNew: true)
            }, me))
        case (.sink, .change):
            release(pa_context_get_sink_info_by_index(context, index, { _, info, _, userdata in
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.sinkDescribed(SinkSnapshot(info.pointee), isNew: false)
            }, me))
        case (.sink, .remove):
            // SINK REMOVE arrives before the stream's moved callback (PulseAudio 16: 1-6 ms before; PipeWire:
            // before WirePlumber relinks the stream): delivered at once, it is the owner's earliest word of an unplug.
            deliver(.sinkRemoved(index))
        case (.card, .new), (.card, .change):
            // A jack change usually also changes the sink (ports are classified there); the card matters for its
            // profile. A wired card's sinks are described again after it: pipewire-pulse 0.3.65 changes a sink's
            // ports without SINK CHANGE when only the card's routes change (a route that lists no devices any more,
            // issue 25). Not a Bluetooth card's: its profile switches replace its sinks, with their own events, and
            // describing them again in the middle of a switch left our stream on the default sink on 0.3.65 (the
            // fake headset's switches; not understood yet).
            release(pa_context_get_card_info_by_index(context, index, { context, info, _, userdata in
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                let card = CardSnapshot(info.pointee)
                connection.deliver(.cardChanged(card))
                if !card.isBluetooth { connection.describeSinks(ofCard: card.index, context: context) }
            }, me))
        case (.card, .remove):
            deliver(.cardRemoved(index))
        case (.source, .new), (.source, .change):
            release(pa_context_get_source_info_by_index(context, index, { _, info, _, userdata in
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.deliver(.sourceChanged(SourceSnapshot(info.pointee)))
            }, me))
        case (.source, .remove):
            deliver(.sourceRemoved(index))
        case (.sourceOutput, .new), (.sourceOutput, .change):
            release(pa_context_get_source_output_info(context, index, { _, info, _, userdata in
                guard let info, let userdata else { return }
                let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
                connection.deliver(.sourceOutputChanged(SourceOutputSnapshot(info.pointee)))
            }, me))
        case (.sourceOutput, .remove):
            deliver(.sourceOutputRemoved(index))
        case (.server, _):
            askForServerInfo(on: context)
        case (.other, _):
            // Not subscribed to.
            break
        }
    }

    /// Asks the server about itself; the answer is delivered as `.serverInfoChanged`. Lock held.
    func askForServerInfo(on context: OpaquePointer) {
        release(pa_context_get_server_info(context, { _, info, userdata in
            guard let info, let userdata else { return }
            let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
            connection.deliver(.serverInfoChanged(ServerInfo(info.pointee)))
        }, Unmanaged.passUnretained(self).toOpaque()))
    }

    /// Lets `stream` read its timing once more when the connection fails. Lock held.
    func register(_ stream: PlaybackStream) {
        streams[ObjectIdentifier(stream)] = WeakStream(stream: stream)
    }

    /// Keeps `collector` alive while its lists are pending. Lock held.
    func inventoryStarted(_ collector: InventoryCollector) {
        inventories[ObjectIdentifier(collector)] = collector
    }

    /// Lets go of a complete inventory. Lock held.
    func inventoryCollected(_ collector: InventoryCollector) {
        inventories[ObjectIdentifier(collector)] = nil
    }

    /// Forgets `stream`. Lock held.
    func unregister(_ stream: PlaybackStream) {
        streams[ObjectIdentifier(stream)] = nil
    }

    private func sinkDescribed(_ sink: SinkSnapshot, isNew: Bool) {
        deliver(isNew ? .sinkAdded(sink) : .sinkChanged(sink))
    }

    /// Asks for every sink and delivers those of `card` as changed (a card's change can change their ports).
    private func describeSinks(ofCard card: UInt32, context: OpaquePointer?) {
        // The cards and the count of listings under way are the connection's own (mainloop lock held), so a listing
        // cancelled with the context, which never calls back, leaves nothing behind; the next one starts afresh.
        cardsToDescribe.insert(card)
        sinkListingsUnderWay += 1
        let me = Unmanaged.passUnretained(self).toOpaque()
        release(pa_context_get_sink_info_list(context, { _, info, eol, userdata in
            guard let userdata else { return }
            let connection = Unmanaged<PulseConnection>.fromOpaque(userdata).takeUnretainedValue()
            guard eol == 0, let info else {
                connection.sinkListingEnded()
                return
            }
            let sink = SinkSnapshot(info.pointee)
            if let card = sink.cardIndex, connection.cardsToDescribe.contains(card) {
                connection.sinkDescribed(sink, isNew: false)
            }
        }, me))
    }

    /// One listing of `describeSinks` is over; the cards are forgotten when none is left under way.
    private func sinkListingEnded() {
        sinkListingsUnderWay = max(0, sinkListingsUnderWay - 1)
        if sinkListingsUnderWay == 0 { cardsToDescribe.removeAll() }
    }
}

/// A stream the connection must not keep alive.
private struct WeakStream {
    /// The stream, while it exists.
    weak var stream: PlaybackStream?
}

/// The raw handles of a connection being torn down, passed to the thread that frees them.
private struct DetachedHandles: @unchecked Sendable {
    // Unchecked Sendable: ownership moves here from the dying connection; nothing else touches them afterwards.
    /// The mainloop to stop and free.
    let mainloop: OpaquePointer
    /// The context to disconnect and release, if one was created.
    let context: OpaquePointer?

    /// Removes our callbacks (their userdata is the dying connection) and disconnects. Lock held.
    func silenceContext() {
        guard let context else { return }
        pa_context_set_state_callback(context, nil, nil)
        pa_context_set_subscribe_callback(context, nil, nil)
        // Disconnecting cancels every pending operation, so no reply callback can run later.
        pa_context_disconnect(context)
    }

    /// Stops the loop (lock not held: stopping joins the loop thread), then frees context and loop.
    func stopAndFree() {
        WaitGuard.check("pa_threaded_mainloop_stop")
        pa_threaded_mainloop_stop(mainloop)
        if let context {
            pa_context_unref(context)
        }
        pa_threaded_mainloop_free(mainloop)
    }
}
