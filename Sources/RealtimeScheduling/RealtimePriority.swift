// Real-time scheduling for the thread that feeds the sound server.
//
// Which thread: libpulse's mainloop thread. It runs the write callback, which must answer each request of the server
// before the server's buffer runs dry (at a 20 ms target latency the server asks every 5 ms and has little more than
// that in hand). At normal priority on a loaded machine the scheduler can keep it waiting longer than that, and the
// server underruns although the ring is full. The callback only copies (RealtimePathTests counts zero allocations
// and zero lock calls), so running it ahead of normal tasks costs them almost nothing. The thread's other callbacks
// (subscription notices) are short and rare.
//
// The decode thread stays at normal priority, deliberately: it allocates, opens and reads files (it can block on
// the disk), and decodes about 1000x faster than real time into a ring that holds 2.7 s. Even a small share of a
// loaded core keeps that ring full, so a real-time decoder would gain nothing, and a bad file or a slow disk on a
// real-time thread could starve the desktop. The ring is exactly what lets the two priorities differ.
//
// The order is the one sound servers use:
//   1. RLIMIT_RTTIME of 200 ms (soft and hard): a real-time thread that runs that long without blocking is killed by
//      the kernel, so a bug can never freeze the machine. rtkit refuses processes without such a limit.
//   2. SCHED_FIFO at priority 10 directly (root, CAP_SYS_NICE, or RLIMIT_RTPRIO >= 10), with SCHED_RESET_ON_FORK so
//      children never inherit it. 10 is low among real-time priorities: above every normal task, which is all the
//      callback needs; the exact rank among real-time threads barely matters for a callback of microseconds.
//   3. Otherwise rtkit on the system bus (org.freedesktop.RealtimeKit1.MakeThreadRealtime), within its
//      MaxRealtimePriority and RTTimeUSecMax. rtkit grants SCHED_RR.
//   4. Otherwise nothing: the player works as before, and `earshot status` says why.
// Every grant is checked afterwards with sched_getscheduler: status reports what is in effect, not what was asked.
import CSystemd
import CThreadShim
import Glibc
import SystemSupport

/// The scheduling the thread that feeds the sound server runs with, as `earshot status` shows it ("realtime: ...").
public enum RealtimeOutcome: Sendable, Equatable, CustomStringConvertible {
    /// SCHED_FIFO, set by the player itself.
    case schedFIFO(priority: Int)
    /// SCHED_RR, granted by rtkit.
    case rtkit(priority: Int)
    /// Normal scheduling, and why.
    case none(reason: String)

    /// "SCHED_FIFO 10", "rtkit SCHED_RR 10" or "none (reason)".
    public var description: String {
        switch self {
        case .schedFIFO(let priority): return "SCHED_FIFO \(priority)"
        case .rtkit(let priority): return "rtkit SCHED_RR \(priority)"
        case .none(let reason): return "none (\(reason))"
        }
    }
}

/// The result of one way of getting real-time scheduling.
enum RealtimeAttempt: Equatable {
    /// In effect, at this priority.
    case granted(priority: Int)
    /// Not granted, and why (short, no user content).
    case failed(reason: String)
}

/// Raises one thread of this process to real-time scheduling, as far as the system allows.
public enum RealtimePriority {
    /// The SCHED_FIFO priority asked for.
    static let priority = 10
    /// RLIMIT_RTTIME, in microseconds: what PulseAudio and PipeWire set, and rtkit's default maximum.
    static let cpuLimitMicroseconds: UInt64 = 200_000

    /// The fallback order: the direct way when it worked, else rtkit (asked only then), else none with both reasons.
    static func decide(direct: RealtimeAttempt, rtkit: () -> RealtimeAttempt) -> RealtimeOutcome {
        switch direct {
        case .granted(let priority):
            return .schedFIFO(priority: priority)
        case .failed(let directReason):
            switch rtkit() {
            case .granted(let priority): return .rtkit(priority: priority)
            case .failed(let rtkitReason): return .none(reason: "\(directReason); \(rtkitReason)")
            }
        }
    }

    /// The priority to ask rtkit for: ours, capped at rtkit's maximum; nil when rtkit allows none.
    static func rtkitPriority(maximum: Int) -> Int? {
        maximum >= 1 ? min(priority, maximum) : nil
    }

    /// Raises the thread `threadID` (a kernel thread id of this process) and reports what is in effect.
    public static func raise(threadID: Int32) -> RealtimeOutcome {
        let limit = earshot_limit_realtime_cpu(cpuLimitMicroseconds)
        guard limit > 0 else {
            // A hard limit of 0 forbids real-time scheduling altogether.
            return .none(reason: limit == 0 ? "RLIMIT_RTTIME is 0" : "RLIMIT_RTTIME: \(errorText(errno))")
        }
        return decide(direct: setFIFO(threadID: threadID), rtkit: { askRTKit(threadID: threadID) })
    }

    /// The scheduling policy of `threadID` now, without the reset-on-fork flag; -1 on error.
    static func policy(of threadID: Int32) -> Int32 {
        let policy = sched_getscheduler(threadID)
        return policy < 0 ? policy : policy & ~Int32(earshot_sched_reset_on_fork)
    }

    private static func setFIFO(threadID: Int32) -> RealtimeAttempt {
        var parameters = sched_param(sched_priority: Int32(priority))
        // On Linux a thread id names that one thread.
        guard sched_setscheduler(threadID, SCHED_FIFO | earshot_sched_reset_on_fork, &parameters) == 0 else {
            return .failed(reason: "SCHED_FIFO: \(errorText(errno))")
        }
        guard policy(of: threadID) == SCHED_FIFO else { return .failed(reason: "SCHED_FIFO: not in effect") }
        return .granted(priority: priority)
    }

    private static let rtkitName = "org.freedesktop.RealtimeKit1"
    private static let rtkitPath = "/org/freedesktop/RealtimeKit1"

    private static func askRTKit(threadID: Int32) -> RealtimeAttempt {
        var opened: OpaquePointer?
        guard sd_bus_open_system(&opened) >= 0, let bus = opened else { return .failed(reason: "rtkit: no system bus") }
        defer { sd_bus_flush_close_unref(bus) }
        // rtkit may be started on demand; never let that hold the player up for long.
        _ = sd_bus_set_method_call_timeout(bus, 2_000_000)
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }

        var maximum: Int32 = 0
        guard sd_bus_get_property_trivial(bus, rtkitName, rtkitPath, rtkitName, "MaxRealtimePriority", &error,
                                          busType(SD_BUS_TYPE_INT32), &maximum) >= 0 else {
            return .failed(reason: "rtkit: \(busErrorName(error) ?? "not available")")
        }
        guard let granted = rtkitPriority(maximum: Int(maximum)) else {
            return .failed(reason: "rtkit: allows no real-time priority")
        }
        var cpuMaximum: Int64 = 0
        if sd_bus_get_property_trivial(bus, rtkitName, rtkitPath, rtkitName, "RTTimeUSecMax", &error,
                                       busType(SD_BUS_TYPE_INT64), &cpuMaximum) >= 0,
            cpuMaximum > 0, UInt64(cpuMaximum) < cpuLimitMicroseconds {
            // rtkit refuses a process whose limit is above its own maximum.
            _ = earshot_limit_realtime_cpu(UInt64(cpuMaximum))
        }
        sd_bus_error_free(&error)

        var call: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &call, rtkitName, rtkitPath, rtkitName, "MakeThreadRealtime") >= 0,
            let call
        else { return .failed(reason: "rtkit: cannot build the call") }
        defer { sd_bus_message_unref(call) }
        var thread = UInt64(threadID)
        var rank = UInt32(granted)
        guard sd_bus_message_append_basic(call, busType(SD_BUS_TYPE_UINT64), &thread) >= 0,
            sd_bus_message_append_basic(call, busType(SD_BUS_TYPE_UINT32), &rank) >= 0
        else { return .failed(reason: "rtkit: cannot build the call") }
        var reply: OpaquePointer?
        // The call waits for rtkit's answer: made on the connecting thread ("earshot-connect"), never the owner.
        WaitGuard.check("a call to rtkit (sd_bus_call)")
        guard sd_bus_call(bus, call, 0, &error, &reply) >= 0 else {
            return .failed(reason: "rtkit: \(busErrorName(error) ?? "refused")")
        }
        sd_bus_message_unref(reply)
        let now = policy(of: threadID)
        guard now == SCHED_RR || now == SCHED_FIFO else { return .failed(reason: "rtkit: not in effect") }
        return .granted(priority: granted)
    }

    /// sd-bus's D-Bus type code (an `int` constant in its headers) as the `char` its calls take.
    private static func busType(_ code: Int) -> CChar {
        CChar(truncatingIfNeeded: code)
    }

    /// The D-Bus error name (a fixed identifier such as org.freedesktop.DBus.Error.AccessDenied, never user content).
    private static func busErrorName(_ error: sd_bus_error) -> String? {
        error.name.map { String(cString: $0) }
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
