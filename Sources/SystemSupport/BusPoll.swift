// How a bus thread sleeps (EarshotMPRIS's, EarshotLogind's and EarshotIdleInhibitor's): in poll(2) on its bus socket
// and on a pipe other threads write a byte to when they have work for it, until sd-bus's next deadline; and the address
// it connects to again after its bus went away. One way for every adapter; the event log's followers' writer is woken
// through the same kind of pipe.
import Glibc

/// The sleep of a thread that serves a bus socket and is woken through a pipe.
public enum BusPoll {
    /// A pipe for waking the thread: both ends non-blocking and closed on exec; [-1, -1] when none could be made.
    public static func makeWakePipe() -> [Int32] {
        var descriptors: [Int32] = [-1, -1]
        if pipe(&descriptors) == 0 {
            for descriptor in descriptors {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                _ = fcntl(descriptor, F_SETFL, O_NONBLOCK)
            }
        }
        return descriptors
    }

    /// Wakes the thread that sleeps on the pipe whose write end is `writeEnd`; returns at once, so any thread may,
    /// the owner too.
    public static func wake(writeEnd: Int32) {
        var byte: UInt8 = 1
        // Never waits: the write end is non-blocking (`makeWakePipe`), and a write refused because the pipe is full
        // loses nothing, since a full pipe already holds a wake-up.
        _ = write(writeEnd, &byte, 1)
    }

    /// Polls `descriptor` for `events` (when it is >= 0) and the read end of `wakePipe` for input, for at most
    /// `timeoutMilliseconds` (-1: no limit), and drains the pipe when it woke the thread.
    public static func wait(wakePipe: Int32, descriptor: Int32, events: Int16, timeoutMilliseconds: Int32) {
        var descriptors = [
            pollfd(fd: wakePipe, events: Int16(POLLIN), revents: 0),
            pollfd(fd: descriptor, events: events, revents: 0),
        ]
        let count = poll(&descriptors, descriptor >= 0 ? 2 : 1, timeoutMilliseconds)
        if count > 0 && descriptors[0].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(wakePipe, &buffer, buffer.count) > 0 {}
        }
    }

    /// sd-bus gives an absolute CLOCK_MONOTONIC deadline in microseconds (UINT64_MAX for none); poll wants relative
    /// milliseconds, rounded up so the loop does not spin just before the deadline.
    public static func relativeMilliseconds(untilMonotonicMicroseconds deadline: UInt64) -> Int32 {
        if deadline == UInt64.max { return -1 }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        guard deadline > nowMicroseconds else { return 0 }
        return Int32(clamping: (deadline - nowMicroseconds + 999) / 1000)
    }
}

/// D-Bus addresses as the bus adapters reconnect with them.
public enum BusAddress {
    /// `address` without its `guid=` keys: a bus daemon started again at the same place has a new guid, and sd-bus
    /// refuses a server whose guid differs from the address's.
    public static func forgettingServer(_ address: String) -> String {
        address.split(separator: ";", omittingEmptySubsequences: false).map { entry -> String in
            guard let colon = entry.firstIndex(of: ":") else { return String(entry) }
            let keys = entry[entry.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("guid=") }
            return entry[...colon] + keys.joined(separator: ",")
        }.joined(separator: ";")
    }
}
