// Real-time scheduling end to end (issue 8, item 2): the thread that feeds the sound server (libpulse's mainloop
// thread, where the write callback runs) gets SCHED_FIFO when the process may set it (root here), the decode thread
// stays off the real-time class, and `earshot status` says which scheduling is in effect. Without the privilege and
// without rtkit the player falls back quietly, plays as before, and says why. The truth is read from the kernel
// (/proc/PID/task/TID/stat), not from the player's own word.
#if canImport(Glibc)
import Glibc
#endif
import EarshotTestSupport
import Foundation
import Testing

@Suite("Real-time scheduling of the thread that feeds the server", .serialized)
struct RealtimeSchedulingTests {
    @Test("as root: the mainloop thread runs SCHED_FIFO 10, nothing else is real-time, status says so")
    func rootGetsFIFO() async throws {
        try await EarshotPlayer.whilePlaying(seconds: 20, heard: 500) { player, _ in
            let status = try player.status()
            #expect(status.realtime == "SCHED_FIFO 10", "\(status.realtime)")
            let threadID = try #require(status.realtimeThread, "status names no real-time thread")
            let threads = try KernelThread.all(of: player.process.processIdentifier)
            let fed = try #require(threads.first { $0.id == threadID }, "no thread \(threadID): \(threads)")
            #expect(fed.policy == SCHED_FIFO && fed.realtimePriority == 10, "\(fed)")
            // libpulse names its threaded mainloop's thread; this is the thread that runs the write callback.
            #expect(fed.name == "threaded-ml", "\(fed)")
            // Real-time means SCHED_FIFO or SCHED_RR; the cover worker runs below everything else (SCHED_IDLE).
            #expect(threads.filter(\.isRealtime).map(\.id) == [threadID], "\(threads)")
            // The workers behind a buffer never preempt on waking (SCHED_BATCH); the owner, nice -15, asks for the
            // shortest slice, which a kernel with EEVDF's custom slices (6.12 on) grants.
            let decode = try #require(threads.first { $0.name == "earshot-decode" }, "\(threads)")
            #expect(decode.policy == KernelThread.batchPolicy, "\(decode)")
            let owner = try #require(threads.first { $0.name == "earshot-owner" }, "\(threads)")
            #expect(owner.policy == SCHED_OTHER && owner.nice == -15, "\(owner)")
            if KernelThread.hasCustomSlices {
                #expect(owner.sliceNanoseconds == 100_000, "\(owner)")
            }

            let text = try player.control(["status"]).standardOutput
            #expect(text.contains("realtime: SCHED_FIFO 10"), "\(text)")
            print("[realtime] as root: \(fed); decode thread \(decode); owner \(owner); underruns \(status.underruns), "
                + "server underflows \(status.serverUnderflows)")
        }
    }

    @Test("without CAP_SYS_NICE and without a system bus: normal scheduling, the reason in status, music plays")
    func unprivilegedFallsBackQuietly() async throws {
        try await TestEnvironment.withExclusiveSoundServer {
            try await TestEnvironment.withScratchDirectory { scratch in
                let track = try Fixtures.copy(try Fixtures.positionTrack(seconds: 20), to: scratch,
                                              named: PrivateNames.fileName)
                // setpriv (util-linux) drops the capability for earshot and all it starts; RLIMIT_RTPRIO is 0 here.
                // The system bus address points nowhere, so rtkit cannot be reached either.
                let player = try EarshotPlayer(
                    playing: [track], in: scratch,
                    launcher: ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"],
                    extraEnvironment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(scratch.path)/no-system-bus"])
                defer { player.kill() }
                let status = try await player.waitUntilHeard(milliseconds: 1000)
                #expect(status.realtime == "none (SCHED_FIFO: Operation not permitted; rtkit: no system bus)",
                        "\(status.realtime)")
                let threads = try KernelThread.all(of: player.process.processIdentifier)
                #expect(!threads.contains { $0.isRealtime }, "\(threads)")
                if let threadID = status.realtimeThread {
                    #expect(threads.contains { $0.id == threadID && $0.name == "threaded-ml" }, "\(threads)")
                }
                let text = try player.control(["status"]).standardOutput
                #expect(text.contains("realtime: none (SCHED_FIFO: Operation not permitted"), "\(text)")
                player.expectPrivateLog(hiding: PrivateNames.secrets + [scratch.path])
            }
        }
    }
}

/// One thread of a process as the kernel reports it in /proc/PID/task/TID/stat.
struct KernelThread: CustomStringConvertible {
    /// The kernel thread id.
    let id: Int
    /// The thread's name (comm).
    let name: String
    /// The scheduling policy (SCHED_OTHER, SCHED_FIFO, SCHED_RR, ...), without SCHED_RESET_ON_FORK.
    let policy: Int32
    /// The real-time priority (0 for normal threads).
    let realtimePriority: Int
    /// The nice value.
    let nice: Int
    /// The scheduler slice (`se.slice` in /proc/PID/task/TID/sched), nil where the kernel shows none.
    let sliceNanoseconds: Int?

    /// SCHED_BATCH (3), which Glibc's module leaves out.
    static let batchPolicy: Int32 = 3

    /// Whether this kernel takes a slice asked for by a normal thread (Linux 6.12 and later).
    static var hasCustomSlices: Bool {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let numbers = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2 else { return false }
        return (numbers[0], numbers[1]) >= (6, 12)
    }

    /// Whether the thread runs under a real-time policy (SCHED_FIFO or SCHED_RR); SCHED_IDLE and SCHED_BATCH are not.
    var isRealtime: Bool { policy == SCHED_FIFO || policy == SCHED_RR }

    /// "TID name policy/priority nice slice".
    var description: String {
        "\(id) \(name) policy \(policy) priority \(realtimePriority) nice \(nice) slice \(sliceNanoseconds ?? -1)"
    }

    /// Every thread of process `pid`.
    static func all(of pid: pid_t) throws -> [KernelThread] {
        let folder = "/proc/\(pid)/task"
        return try FileManager.default.contentsOfDirectory(atPath: folder).compactMap { entry in
            guard let id = Int(entry),
                let stat = try? String(contentsOfFile: "\(folder)/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { return nil }
            // proc(5): after "pid (comm) " come the fields from number 3 (state) on; nice is field 19,
            // rt_priority field 40 and policy field 41.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count >= 39, let nice = Int(fields[16]), let priority = Int(fields[37]),
                let policy = Int32(fields[38])
            else { throw ToolkitError("unexpected \(folder)/\(entry)/stat: \(stat)") }
            let sched = (try? String(contentsOfFile: "\(folder)/\(entry)/sched", encoding: .utf8)) ?? ""
            let slice = sched.split(separator: "\n").first { $0.hasPrefix("se.slice ") }
                .flatMap { $0.split(separator: ":").last }
                .flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return KernelThread(id: id, name: String(stat[stat.index(after: open)..<close]),
                                policy: policy & ~0x4000_0000, realtimePriority: priority, nice: nice,
                                sliceNanoseconds: slice)
        }
    }
}
