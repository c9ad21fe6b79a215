// The desktop's idle suspend, held off while the rules say playing (rule 23 of shared/RULES.md): the owner hands over
// `hold()` and `release()`, and this adapter asks the session bus's services for an inhibitor on its own thread, in
// the order InhibitorServices.swift gives (the portal, GNOME's session manager, the freedesktop power management).
// Whether one was taken, and from which service, is its report for the log and what `status` reads (`heldThrough`).
//
// A note on threading
// -------------------
// sd-bus objects are not thread-safe, so one thread, the inhibitor thread this class starts, is the only one that
// touches the `sd_bus`. It connects on its own (a slow or missing session bus never holds up the caller), then loops:
// bring the inhibitor in line with what the owner last asked for, let `sd_bus_process` dispatch what arrived, and
// when there is nothing to do, `poll` both the bus socket and a wake-up pipe. The calls wait for the service's reply
// (at most two seconds each) on this thread only.
// - `hold()`, `release()` and `stop()` may be called from any thread: they set a flag under `lock`, write a byte to
//   the wake-up pipe, and return (`stop` then waits for the thread, unless called on it). `heldThrough` reads under
//   `lock`.
// - No session bus: reported once (`unavailable`), and the thread ends. A bus with none of the three services:
//   reported once (`noService`), and asked again only at the next `hold()`, quietly. The bus lost later (the session
//   bus restarted): reported once (`lost`), whatever was held went with the connection; the thread tries again as
//   the logind adapter does, says once that it is back (`reconnected`), and asks again if still wanted.
import CSystemd
import Dispatch
import Glibc
import SystemSupport

/// What the idle inhibitor reports for the service's log: kinds and causes only.
public enum IdleInhibitorReport: Sendable, Equatable {
    /// Taken from `service` (`portal`, `gnomeSessionManager`, `powerManagement`).
    case held(service: String)
    /// Given back to `service`.
    case released(service: String)
    /// `service` did not take it back: it may hold it until Earshot leaves the bus.
    case releaseRefused(service: String, reason: String)
    /// None of the three services answered the session bus (said once).
    case noService(reasons: [String])
    /// No session bus: the idle suspend is not held off.
    case unavailable(reason: String)
    /// The connection to the session bus was lost, and with it anything held; the adapter tries again until it is
    /// back.
    case lost(reason: String)
    /// Connected again after a loss (an inhibitor still wanted is asked for again).
    case reconnected
}

/// Holds the desktop's idle suspend off while asked to, through whichever service the session bus has.
public final class IdleInhibitor: @unchecked Sendable {
    // Unchecked Sendable: the properties under "Shared" are guarded by `lock`; those under "Inhibitor thread" are
    // touched only by the inhibitor thread; the rest are immutable.

    private let busAddress: String?
    private let report: @Sendable (IdleInhibitorReport) -> Void
    /// The wake-up pipe: [read end, write end], both non-blocking.
    private let wakePipe: [Int32]
    private let finished = DispatchSemaphore(value: 0)

    // Shared: guarded by `lock`.
    private let lock = Lock()
    private var wanted = false
    /// Counts the owner's `hold()`s: the thread asks the services once for each.
    private var holdRequests = 0
    private var stopRequested = false
    private var thread: pthread_t?
    private var heldService: String?

    // Inhibitor thread.
    private var held: IdleInhibitorHold?
    /// The `holdRequests` last answered by asking the services (successfully or not).
    private var answeredHoldRequest = 0
    private var noServiceReported = false
    /// One of the three services took its name on the bus since the last answer (NameOwnerChanged): a session whose
    /// services start after Earshot, or come back after the bus did, is asked again.
    private var serviceAppeared = false

    /// An inhibitor on the session bus at `busAddress`, or when nil the user's session bus
    /// (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`). `report` receives what the service logs.
    public init(busAddress: String? = nil, report: @escaping @Sendable (IdleInhibitorReport) -> Void) {
        self.busAddress = busAddress
        self.report = report
        wakePipe = BusPoll.makeWakePipe()
    }

    deinit {
        for descriptor in wakePipe where descriptor >= 0 { close(descriptor) }
    }

    // MARK: Any thread

    /// Starts the inhibitor thread, which connects; returns at once. Started once.
    public func start() {
        lock.lock()
        defer { lock.unlock() }
        guard thread == nil, !stopRequested else { return }
        thread = SystemThread.start(named: "earshot-inhibit") { [self] in
            run()
            lock.lock()
            thread = nil
            heldService = nil
            lock.unlock()
            finished.signal()
        }
    }

    /// Asks for the idle suspend to be held off; returns at once.
    public func hold() {
        lock.lock()
        wanted = true
        holdRequests += 1
        lock.unlock()
        wake()
    }

    /// Gives the idle suspend back; returns at once.
    public func release() {
        lock.lock()
        wanted = false
        lock.unlock()
        wake()
    }

    /// The service that holds the idle suspend off for Earshot now (`portal`, `gnomeSessionManager`,
    /// `powerManagement`), or nil when none does.
    public var heldThrough: String? {
        lock.lock()
        defer { lock.unlock() }
        return heldService
    }

    /// Stops the thread (the connection's end gives back anything held); waits for it unless called on it.
    public func stop() {
        lock.lock()
        stopRequested = true
        let running = thread
        lock.unlock()
        guard let running else { return }
        wake()
        if !SystemThread.isCurrent(running) {
            WaitGuard.check("IdleInhibitor.stop")
            finished.wait()
        }
    }

    private func wake() {
        BusPoll.wake(writeEnd: wakePipe[1])
    }

    // MARK: The inhibitor thread

    private func run() {
        guard var connected = connect() else { return }
        while true {
            let lost = serve(connected)
            sd_bus_flush_close_unref(connected)
            guard let lost else { return }
            // What was held went with the connection (the services drop a client that leaves).
            setHeld(nil)
            report(.lost(reason: lost))
            guard let again = reconnect() else { return }
            connected = again
            report(.reconnected)
            // Asked again on the new bus if the owner still wants it, whatever the last answer was.
            answeredHoldRequest = -1
        }
    }

    /// Serves the connection until a stop (nil, anything held given back) or its loss (the reason).
    private func serve(_ connected: OpaquePointer) -> String? {
        // The services answer at once; a hung one must not keep a release waiting for long.
        _ = sd_bus_set_method_call_timeout(connected, 2_000_000)
        followServiceNames(on: connected)
        let calls = InhibitorCalls(bus: connected)
        while true {
            let (stopping, wantedNow, request) = requested()
            if stopping {
                if let held { _ = calls.giveBack(held) }
                return nil
            }
            follow(wanted: wantedNow, request: request, calls: calls)
            let processed = sd_bus_process(connected, nil)
            if processed < 0 || sd_bus_is_open(connected) <= 0 {
                return processed < 0 ? "errno \(-processed)" : "closed"
            }
            if processed > 0 { continue }
            var deadline: UInt64 = 0
            let events = sd_bus_get_events(connected)
            guard events >= 0, sd_bus_get_timeout(connected, &deadline) >= 0 else { return "cannot poll the bus" }
            BusPoll.wait(
                wakePipe: wakePipe[0], descriptor: sd_bus_get_fd(connected), events: Int16(truncatingIfNeeded: events),
                timeoutMilliseconds: BusPoll.relativeMilliseconds(untilMonotonicMicroseconds: deadline))
        }
    }

    /// Connects again after a loss, waiting between attempts on the wake-up pipe (so `stop` is heard at once): after
    /// 100 ms, then at most every 5 s. Nil when stopped first. Failed attempts are not reported: the loss was, once.
    private func reconnect() -> OpaquePointer? {
        var delayMilliseconds: Int32 = 100
        while !requested().stop {
            BusPoll.wait(wakePipe: wakePipe[0], descriptor: -1, events: 0, timeoutMilliseconds: delayMilliseconds)
            if requested().stop { return nil }
            if let connected = connect(reconnecting: true) { return connected }
            delayMilliseconds = min(delayMilliseconds * 2, 5000)
        }
        return nil
    }

    /// Asks the bus daemon for `NameOwnerChanged` of the three services' names. No slots kept: the matches live
    /// exactly as long as the connection, and the thread holds `self` meanwhile.
    private func followServiceNames(on bus: OpaquePointer) {
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        for name in [InhibitorService.portalName, InhibitorService.gnomeName, InhibitorService.powerManagementName] {
            let match = "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(name)'"
            _ = sd_bus_add_match(bus, nil, match, { message, owner, _ in
                guard let message, let owner else { return 0 }
                Unmanaged<IdleInhibitor>.fromOpaque(owner).takeUnretainedValue().nameOwnerChanged(message)
                return 0
            }, userdata)
        }
    }

    /// `NameOwnerChanged(s name, s old, s new)` for one of the services (inside `sd_bus_process`): a new owner.
    private func nameOwnerChanged(_ message: OpaquePointer) {
        var name: UnsafePointer<CChar>?, old: UnsafePointer<CChar>?, new: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, InhibitorType.string, &name) > 0,
              sd_bus_message_read_basic(message, InhibitorType.string, &old) > 0,
              sd_bus_message_read_basic(message, InhibitorType.string, &new) > 0,
              let new, new.pointee != 0 else { return }
        serviceAppeared = true
    }

    /// Takes or gives back the inhibitor as the owner last asked.
    private func follow(wanted: Bool, request: Int, calls: InhibitorCalls) {
        if wanted, held == nil, request != answeredHoldRequest || serviceAppeared {
            answeredHoldRequest = request
            serviceAppeared = false
            let (taken, refusals) = calls.take()
            if let taken {
                setHeld(taken)
                report(.held(service: taken.service))
            } else if !noServiceReported {
                // Said once: a bus without any of them (a bare window manager) stays without.
                noServiceReported = true
                report(.noService(reasons: refusals))
            }
        } else if !wanted, let holding = held {
            setHeld(nil)
            if let refusal = calls.giveBack(holding) {
                report(.releaseRefused(service: holding.service, reason: refusal))
            } else {
                report(.released(service: holding.service))
            }
        }
    }

    private func requested() -> (stop: Bool, wanted: Bool, request: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (stopRequested, wanted, holdRequests)
    }

    private func setHeld(_ hold: IdleInhibitorHold?) {
        held = hold
        lock.lock()
        heldService = hold?.service
        lock.unlock()
    }

    /// Connects to the session bus; nil when that fails (reported, unless `reconnecting`: the loss was).
    private func connect(reconnecting: Bool = false) -> OpaquePointer? {
        var opened: OpaquePointer?
        var result: Int32
        // Again after a loss: the new daemon has another guid than the address may name.
        var address = busAddress
        if reconnecting, let given = busAddress ?? ProcessEnvironment.value(named: "DBUS_SESSION_BUS_ADDRESS") {
            address = BusAddress.forgettingServer(given)
        }
        if let address {
            result = sd_bus_new(&opened)
            if result >= 0, let opened {
                result = sd_bus_set_address(opened, address)
                if result >= 0 { result = sd_bus_set_bus_client(opened, 1) }
                if result >= 0 { result = sd_bus_start(opened) }
            }
        } else {
            result = sd_bus_open_user(&opened)
        }
        guard result >= 0, let opened else {
            if let opened { sd_bus_unref(opened) }
            if !reconnecting { report(.unavailable(reason: "no session bus (errno \(-result))")) }
            return nil
        }
        return opened
    }
}
