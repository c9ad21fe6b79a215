// The owner's record of its slowest handling, by input kind (issue 21): status says which kind of input took the
// longest, and the longest of each kind, so that a slow handling can be traced to its input.
@testable import EarshotService
import AudioPipeline
import PulseOutput
import Glibc
import Synchronization
import Testing

@Suite("Handling record: the slowest input and its kind")
struct HandlingRecordTests {
    /// A handling of `micros` on the clock, half of it on the CPU, after one wait.
    static func sample(_ micros: Int) -> HandlingSample {
        HandlingSample(micros: micros, cpuMicros: micros / 2, waits: 1, preemptions: 0)
    }

    @Test("the slowest input keeps its kind; each kind keeps its own slowest")
    func slowestByKind() {
        var record = HandlingRecord()
        #expect(record.slowestMicros == 0)
        #expect(record.slowestKind == nil)
        record.note("tick", Self.sample(0))
        // Even a handling of 0 µs names its kind: the first input is the slowest so far.
        #expect(record.slowestKind == "tick")
        record.note("request add", Self.sample(7_100))
        record.note("tick", Self.sample(300))
        record.note("stream corked", Self.sample(120))
        record.note("request add", Self.sample(2_000))
        #expect(record.slowestMicros == 7_100)
        #expect(record.slowestKind == "request add")
        #expect(record.slowestByKind == ["request add": 7_100, "tick": 300, "stream corked": 120])
        // A later input exactly as slow does not take the place of the first.
        record.note("decode trackStarted", Self.sample(7_100))
        #expect(record.slowestKind == "request add")
        #expect(record.slowestByKind["decode trackStarted"] == 7_100)
        record.note("decode trackStarted", Self.sample(7_101))
        #expect(record.slowestKind == "decode trackStarted")
        #expect(record.slowestMicros == 7_101)
        #expect(record.slowest?.sample == Self.sample(7_101))
    }

    @Test("handlings over 5 ms are counted, with how many of them waited and how many were preempted")
    func slowHandlingsCounted() {
        var record = HandlingRecord()
        record.note("tick", HandlingSample(micros: 5_000, cpuMicros: 4_900, waits: 0, preemptions: 0))
        record.note("request seek", HandlingSample(micros: 9_800, cpuMicros: 340, waits: 0, preemptions: 2))
        record.note("request add", HandlingSample(micros: 14_000, cpuMicros: 770, waits: 1, preemptions: 3))
        record.note("request status", HandlingSample(micros: 6_000, cpuMicros: 5_900, waits: 0, preemptions: 0))
        #expect(record.handled == 4)
        #expect(record.slow.count == 3)
        #expect(record.slow.waited == 1)
        #expect(record.slow.preempted == 1)
    }

    @Test("the owner thread's usage over a handling: its CPU time and its switches off the CPU")
    func threadUsage() {
        // The kernel's own count of this thread's switches, read around the sample: the sample's must fit inside it.
        // (RUSAGE_SELF would count every thread of the test process, and its switches would not fit.)
        let before = Self.kernelSwitches()
        let start = ThreadUsage.now()
        // Work on this thread, then a wait: a sleep is a voluntary switch. A preemption cannot be made to happen
        // here; the bound below is what can be checked of it.
        busyWork()
        var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        nanosleep(&pause, nil)
        let sample = ThreadUsage.sample(since: start)
        let after = Self.kernelSwitches()
        #expect(sample.micros >= 2_000)
        #expect(sample.cpuMicros > 0 && sample.cpuMicros <= sample.micros + 1_000, "\(sample)")
        #expect(sample.waits >= 1 && sample.waits <= after.voluntary - before.voluntary, "\(sample)")
        #expect(sample.preemptions <= after.involuntary - before.involuntary, "\(sample)")
    }

    /// The calling thread's context switches as /proc counts them (not `getrusage`, which `ThreadUsage` reads).
    static func kernelSwitches() -> (voluntary: Int, involuntary: Int) {
        guard let file = fopen("/proc/thread-self/status", "r") else { return (0, 0) }
        defer { fclose(file) }
        var counts = (voluntary: 0, involuntary: 0)
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let value = Int(text.split(separator: "\t").last?.filter(\.isNumber) ?? "") ?? 0
            if text.hasPrefix("voluntary_ctxt_switches:") { counts.voluntary = value }
            if text.hasPrefix("nonvoluntary_ctxt_switches:") { counts.involuntary = value }
        }
        return counts
    }

    @Test("a handling's CPU time is its own: never more than the clock measured it, even across a scheduler tick")
    func cpuTimeIsTheHandlingsOwn() {
        // 100 handlings of 0.2 ms of work each, 20 ms in all: several scheduler ticks fall inside them. getrusage's
        // CPU time, brought up to date only at a tick, charged one of them with what ran before it (0.7 ms over).
        var over: [HandlingSample] = []
        for _ in 0..<100 {
            let start = ThreadUsage.now()
            let until = ContinuousClock.now + .microseconds(200)
            while ContinuousClock.now < until {}
            let sample = ThreadUsage.sample(since: start)
            // A few microseconds pass between reading the CPU clock and the wall clock.
            if sample.cpuMicros > sample.micros + 100 { over.append(sample) }
        }
        #expect(over.isEmpty, "\(over)")
    }

    @Test("inputs are named by kind and by which request or notice, never by content")
    func inputKinds() {
        #expect(Player.Input.tick(arming: 3).kind == "tick")
        #expect(Player.Input.stream(.corked, generation: 1).kind == "stream corked")
        #expect(Player.Input.connection(.sinkRemoved(7), generation: 1).kind == "connection sinkRemoved")
        #expect(Player.Input.decode(.buffered(readableFrames: 10)).kind == "decode buffered")
        #expect(Player.Input.shutdown(signal: 15).kind == "shutdown")
    }
}

/// Two million multiplications the optimizer cannot drop: their sum is stored where another thread could read it.
private func busyWork() {
    var sum = 0
    for value in 0..<2_000_000 { sum &+= value &* value }
    busyWorkSink.store(sum, ordering: .relaxed)
}

private let busyWorkSink = Atomic<Int>(0)

