// logind on the system bus, through libsystemd's sd-bus: the machine about to sleep or waking
// (`Manager.PrepareForSleep`), our session leaving the front of its seat or coming back (`Session.Active`), and its
// screen locked or unlocked (`Session.Lock`/`Unlock`, `LockedHint`), each translated into one rulebook event
// (`sessionLeft`, `sessionReturned`). A sleep waits for Earshot: the watcher holds a delay inhibitor lock, which it
// releases when the rules say the player is quiet (`releaseSleepDelay`), and takes again after the wake.
//
// The lock is held always, not only while playing. A lock taken only while playing would have to follow the
// player's state through the owner, and a play just before the lid closes would race with the sleep's announcement;
// held always, a quiet player lets the sleep go within a round trip through the owner (the rules release at once),
// and a playing one after its cork. logind waits for a delay lock at most `InhibitDelayMaxSec` (5 s by default), so
// even a stuck owner only delays a sleep, never stops it. This is how logind's documentation asks delay locks to be
// used.
//
// A note on threading
// -------------------
// sd-bus objects are not thread-safe, so one thread, the watcher thread this class starts, is the only one that
// touches the `sd_bus`. It connects (so a slow or missing system bus never holds up the caller), finds the session,
// takes the lock, then loops: carry out a requested release, let `sd_bus_process` dispatch one message, and when there
// is nothing to do, `poll` both the bus socket and a wake-up pipe.
// - Signals call `emit` ON THE WATCHER THREAD: it must only hand the event over (the owner's inbox) and return.
// - `releaseSleepDelay()` and `stop()` may be called from any thread: they set a flag under `lock`, write a byte to
//   the wake-up pipe, and return (`stop` then waits for the thread, unless called on it).
// - No system bus (a container, a bare server), or logind missing on it: reported once (`unavailable`), and the
//   thread ends; Earshot works on without it. A bus lost later (dbus-daemon or dbus-broker restarted by an upgrade,
//   or crashed) is reported once (`lost`); the thread then tries again, after 100 ms and then at most every 5 s,
//   sleeping in `poll` on the wake-up pipe alone, and says once that it is back (`reconnected`): the matches, the
//   session and the delay lock are taken again on the new connection, and what the session did meanwhile is read
//   from its properties.
import CSystemd
import Dispatch
import EarshotCore
import Glibc
import SystemSupport

/// What the watcher reports for the service's log: kinds and causes only.
public enum LogindReport: Sendable, Equatable {
    /// Connected to logind; `session` tells whether a login session was found to follow.
    case connected(session: Bool)
    /// No system bus, or no logind on it: sleep and session changes are not followed.
    case unavailable(reason: String)
    /// The delay lock was taken (at start, and after each wake).
    case sleepDelayTaken
    /// logind refused the delay lock: sleeps do not wait for the cork.
    case sleepDelayRefused(reason: String)
    /// The delay lock was released for an announced sleep.
    case sleepDelayReleased
    /// The connection to the system bus was lost; the watcher tries again until it is back.
    case lost(reason: String)
    /// Connected again after a loss; `session` as for `connected`.
    case reconnected(session: Bool)
}

/// Follows logind for the session Earshot plays in, and turns what it announces into rulebook events.
public final class LogindWatcher: @unchecked Sendable {
    // Unchecked Sendable: the properties under "Shared" are guarded by `lock`; those under "Watcher thread" are
    // touched only by the watcher thread; the rest are immutable.

    private let busAddress: String?
    private let sessionID: String?
    private let userID: UInt32
    private let emit: @Sendable (Event) -> Void
    private let report: @Sendable (LogindReport) -> Void
    /// The wake-up pipe: [read end, write end], both non-blocking.
    private let wakePipe: [Int32]
    private let finished = DispatchSemaphore(value: 0)

    // Shared: guarded by `lock`.
    private let lock = Lock()
    private var releaseRequested = false
    private var stopRequested = false
    private var thread: pthread_t?

    // Watcher thread.
    private var bus: OpaquePointer?
    private var delayLock = DelayLock.none
    /// Between `PrepareForSleep(true)` and `PrepareForSleep(false)`.
    private var sleepInProgress = false
    private var sessionPath: String?
    private var session = SessionFollower()

    /// A watcher of logind at `busAddress` (a D-Bus address), or when nil on the system bus
    /// (`DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`). It follows the session `sessionID`
    /// (`XDG_SESSION_ID`), or when nil or empty the display session of user `userID`. `emit` receives the events
    /// (on the watcher thread), `report` what the service logs.
    public init(
        busAddress: String? = nil, sessionID: String?, userID: UInt32,
        report: @escaping @Sendable (LogindReport) -> Void, emit: @escaping @Sendable (Event) -> Void
    ) {
        self.busAddress = busAddress
        self.sessionID = sessionID
        self.userID = userID
        self.report = report
        self.emit = emit
        wakePipe = BusPoll.makeWakePipe()
    }

    deinit {
        for descriptor in wakePipe where descriptor >= 0 { close(descriptor) }
    }

    // MARK: Any thread

    /// Starts the watcher thread, which connects; returns at once. Started once.
    public func start() {
        lock.lock()
        defer { lock.unlock() }
        guard thread == nil, !stopRequested else { return }
        thread = SystemThread.start(named: "earshot-logind") { [self] in
            run()
            lock.lock()
            thread = nil
            lock.unlock()
            finished.signal()
        }
    }

    /// Lets an announced sleep go ahead: the rules found the player quiet. Returns at once; a request with no sleep
    /// in progress (a late one, after the wake) releases nothing.
    public func releaseSleepDelay() {
        lock.lock()
        releaseRequested = true
        lock.unlock()
        wake()
    }

    /// Stops the watcher thread (releasing the lock and the connection); waits for it unless called on it.
    public func stop() {
        lock.lock()
        stopRequested = true
        let running = thread
        lock.unlock()
        guard let running else { return }
        wake()
        if !SystemThread.isCurrent(running) {
            WaitGuard.check("LogindWatcher.stop")
            finished.wait()
        }
    }

    private func wake() {
        BusPoll.wake(writeEnd: wakePipe[1])
    }

    // MARK: The watcher thread

    private func run() {
        guard var connected = connect() else { return }
        report(.connected(session: sessionPath != nil))
        while true {
            bus = connected
            let lost = serve(connected)
            if case .held(let descriptor) = delayLock { close(descriptor) }
            delayLock = .none
            sleepInProgress = false
            sd_bus_flush_close_unref(connected)
            bus = nil
            guard let lost else { return }
            report(.lost(reason: lost))
            guard let again = reconnect() else { return }
            connected = again
            report(.reconnected(session: sessionPath != nil))
        }
    }

    /// Connects again after a loss, waiting between attempts on the wake-up pipe (so `stop` is heard at once); nil
    /// when stopped first. Failed attempts are not reported: the loss was, once.
    private func reconnect() -> OpaquePointer? {
        var delayMilliseconds: Int32 = 100
        while !isStopRequested() {
            BusPoll.wait(wakePipe: wakePipe[0], descriptor: -1, events: 0, timeoutMilliseconds: delayMilliseconds)
            if isStopRequested() { return nil }
            if let connected = connect(reconnecting: true) { return connected }
            delayMilliseconds = min(delayMilliseconds * 2, 5000)
        }
        return nil
    }

    /// Serves the connection until a stop (nil) or its loss (the reason).
    private func serve(_ connected: OpaquePointer) -> String? {
        takeDelayLock(on: connected)
        while !isStopRequested() {
            carryOutRelease()
            let processed = sd_bus_process(connected, nil)
            if processed < 0 || sd_bus_is_open(connected) <= 0 {
                return processed < 0 ? "errno \(-processed)" : "closed"
            }
            // After a wake, the next sleep waits for us again.
            if !sleepInProgress && delayLock == .none { takeDelayLock(on: connected) }
            if processed > 0 { continue }
            var deadline: UInt64 = 0
            let events = sd_bus_get_events(connected)
            guard events >= 0, sd_bus_get_timeout(connected, &deadline) >= 0 else { return "cannot poll the bus" }
            BusPoll.wait(
                wakePipe: wakePipe[0], descriptor: sd_bus_get_fd(connected), events: Int16(truncatingIfNeeded: events),
                timeoutMilliseconds: BusPoll.relativeMilliseconds(untilMonotonicMicroseconds: deadline))
        }
        return nil
    }

    /// Connects, subscribes to logind's signals and finds the session; nil when that fails (reported, unless
    /// `reconnecting`: the loss was reported, and its attempts are not).
    private func connect(reconnecting: Bool = false) -> OpaquePointer? {
        let quiet: @Sendable (LogindReport) -> Void = { _ in }
        let report = reconnecting ? quiet : self.report
        var opened: OpaquePointer?
        var result: Int32
        // Again after a loss: the new daemon has another guid than an address may name.
        var address = busAddress
        if reconnecting, let given = busAddress ?? ProcessEnvironment.value(named: "DBUS_SYSTEM_BUS_ADDRESS") {
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
            result = sd_bus_open_system(&opened)
        }
        guard result >= 0, let opened else {
            if let opened { sd_bus_unref(opened) }
            report(.unavailable(reason: "no system bus (errno \(-result))"))
            return nil
        }
        // A bus that came back before logind did: not connected yet (the next attempt asks again), or the session and
        // the delay lock would be missed until the next wake.
        if reconnecting && !Self.hasOwner(Logind.busName, on: opened) {
            sd_bus_flush_close_unref(opened)
            return nil
        }
        // logind answers at once; a hung one must not keep the thread from its signals for long.
        _ = sd_bus_set_method_call_timeout(opened, 2_000_000)
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        // No slots kept: the matches live exactly as long as the connection. The thread holds `self` meanwhile.
        result = sd_bus_match_signal(
            opened, nil, Logind.busName, Logind.managerPath, Logind.managerInterface, "PrepareForSleep",
            { message, owner, _ in
                guard let message, let owner else { return 0 }
                Unmanaged<LogindWatcher>.fromOpaque(owner).takeUnretainedValue().sleepSignalled(message)
                return 0
            }, userdata)
        guard result >= 0 else {
            sd_bus_flush_close_unref(opened)
            report(.unavailable(reason: "cannot follow PrepareForSleep (errno \(-result))"))
            return nil
        }
        sessionPath = Self.sessionPath(on: opened, sessionID: sessionID, userID: userID)
        if let sessionPath {
            for member in ["Lock", "Unlock"] {
                _ = sd_bus_match_signal(
                    opened, nil, Logind.busName, sessionPath, Logind.sessionInterface, member,
                    { message, owner, _ in
                        guard let message, let owner else { return 0 }
                        Unmanaged<LogindWatcher>.fromOpaque(owner).takeUnretainedValue().lockSignalled(message)
                        return 0
                    }, userdata)
            }
            _ = sd_bus_match_signal(
                opened, nil, Logind.busName, sessionPath, Logind.propertiesInterface, "PropertiesChanged",
                { message, owner, _ in
                    guard let message, let owner else { return 0 }
                    Unmanaged<LogindWatcher>.fromOpaque(owner).takeUnretainedValue().sessionChanged(message)
                    return 0
                }, userdata)
            // The starting values, against which later changes are told; after a reconnection, what changed while
            // the bus was away.
            let changed = session.update(SessionProperties(
                active: Self.sessionBoolean("Active", on: opened, path: sessionPath),
                locked: Self.sessionBoolean("LockedHint", on: opened, path: sessionPath)))
            for event in changed { emit(event) }
        }
        return opened
    }

    /// Takes the delay lock: logind then waits for its release (or `InhibitDelayMaxSec`) before sleeping.
    private func takeDelayLock(on bus: OpaquePointer) {
        let (reply, error) = Self.callManager(bus, "Inhibit") { call in
            Self.append(["sleep", "Earshot", "Pause the music before sleep", "delay"], to: call)
        }
        guard let reply else {
            report(.sleepDelayRefused(reason: error ?? "no reply"))
            delayLock = .refused
            return
        }
        defer { sd_bus_message_unref(reply) }
        guard let descriptor = LogindReader(message: reply).fileDescriptor() else {
            report(.sleepDelayRefused(reason: "no file descriptor in the reply"))
            delayLock = .refused
            return
        }
        delayLock = .held(descriptor)
        report(.sleepDelayTaken)
    }

    /// Releases the delay lock if the rules asked for it and a sleep is in progress.
    private func carryOutRelease() {
        lock.lock()
        let requested = releaseRequested
        releaseRequested = false
        lock.unlock()
        guard requested, sleepInProgress, case .held(let descriptor) = delayLock else { return }
        close(descriptor)
        delayLock = .none
        report(.sleepDelayReleased)
    }

    private func isStopRequested() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    // MARK: Signals (watcher thread, inside sd_bus_process)

    /// `PrepareForSleep(b start)`.
    private func sleepSignalled(_ message: OpaquePointer) {
        guard let starting = LogindReader(message: message).boolean() else { return }
        if starting {
            sleepInProgress = true
            emit(.sessionLeft(.sleep))
        } else {
            sleepInProgress = false
            // A refused lock may be asked for again after this wake.
            if delayLock == .refused { delayLock = .none }
            emit(.sessionReturned(.sleep))
        }
    }

    /// The session's `Lock` or `Unlock` signal.
    private func lockSignalled(_ message: OpaquePointer) {
        guard let member = sd_bus_message_get_member(message).map({ String(cString: $0) }) else { return }
        emit(member == "Lock" ? .sessionLeft(.locked) : .sessionReturned(.locked))
    }

    /// The session's `PropertiesChanged`: `Active` and `LockedHint`.
    private func sessionChanged(_ message: OpaquePointer) {
        for event in session.update(LogindReader(message: message).sessionProperties()) { emit(event) }
    }

    /// The delay inhibitor lock.
    private enum DelayLock: Equatable {
        /// None held: taken at the next turn of the loop unless a sleep is in progress.
        case none
        /// Held: logind waits until this file descriptor is closed.
        case held(Int32)
        /// logind refused it: not asked again until the next wake, since a refusal would only repeat.
        case refused
    }

    // MARK: Waiting

}
