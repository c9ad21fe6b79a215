// How long the owner takes over one input, kept by the kind of input (issue 21). The owner never waits, so a slow
// handling is a regression to look for; knowing its kind (a queue's `add`, a decoder's `trackStarted`, a server's
// `sinkChanged`) says where to look, and the owner thread's own usage over it (CPU time, waits, preemptions) says
// whether it worked, waited or was kept off the CPU by a loaded machine. Status shows the slowest with its kind and
// usage, and the slowest of every kind seen. The record is owned by the player's actor.
import AudioPipeline
import EarshotMPRIS
import Glibc
import PulseOutput

/// One input's handling: how long it took on the clock, how much of that the owner's thread ran, and how often the
/// thread left its CPU meanwhile: to wait (a voluntary switch: it blocked on a lock, a futex, a system call) or because
/// the scheduler gave the CPU to another thread (preempted). A slow handling with no waits and little CPU was the
/// machine's load; one with waits was the owner waiting for someone.
struct HandlingSample: Equatable {
    /// Microseconds on the clock.
    var micros: Int
    /// Microseconds the owner's thread ran.
    var cpuMicros: Int
    /// Voluntary context switches of the owner's thread.
    var waits: Int
    /// Involuntary context switches of the owner's thread.
    var preemptions: Int
}

/// The slowest handling of one inbox input, overall and by kind.
struct HandlingRecord: Equatable {
    /// The longest handling, and the kind of its input; nil before any.
    private(set) var slowest: (sample: HandlingSample, kind: String)?
    /// The longest input of each kind seen, in microseconds.
    private(set) var slowestByKind: [String: Int] = [:]
    /// Inputs handled.
    private(set) var handled = 0
    /// Of those, how many took longer than `slowMicros`, and of those, how many waited (at least one voluntary
    /// switch) or were preempted (at least one involuntary switch, and no wait).
    private(set) var slow = (count: 0, waited: 0, preempted: 0)

    /// A handling longer than this is counted as slow: issue 21's bound for the slowest, 5 ms.
    static let slowMicros = 5_000

    /// The longest one input took, in microseconds (0 before any).
    var slowestMicros: Int { slowest?.sample.micros ?? 0 }
    /// The kind of the input that took `slowestMicros`; nil before any.
    var slowestKind: String? { slowest?.kind }

    /// Notes that an input of `kind` was handled as `sample` says. The first input of the longest time keeps the
    /// overall place: a later one as long does not replace its kind.
    mutating func note(_ kind: String, _ sample: HandlingSample) {
        handled += 1
        if sample.micros > Self.slowMicros {
            slow.count += 1
            if sample.waits > 0 {
                slow.waited += 1
            } else if sample.preemptions > 0 {
                slow.preempted += 1
            }
        }
        if sample.micros > slowestByKind[kind] ?? -1 { slowestByKind[kind] = sample.micros }
        if slowest == nil || sample.micros > slowestMicros { slowest = (sample, kind) }
    }

    static func == (left: HandlingRecord, right: HandlingRecord) -> Bool {
        left.slowest?.sample == right.slowest?.sample && left.slowest?.kind == right.slowest?.kind
            && left.slowestByKind == right.slowestByKind && left.handled == right.handled && left.slow == right.slow
    }
}

/// The owner thread's clock and usage at a moment, to measure one handling (`HandlingSample`).
struct ThreadUsage {
    /// When it was read.
    var instant: ContinuousClock.Instant
    /// The calling thread's CPU time, user and system, in microseconds, to the nanosecond the kernel knows it.
    var cpuMicros: Int
    /// Its voluntary and involuntary context switches so far.
    var waits: Int
    var preemptions: Int

    /// The calling thread's usage now: its switches from `getrusage(RUSAGE_THREAD)`, its CPU time from its CPU clock.
    static func now() -> ThreadUsage {
        var usage = rusage()
        // RUSAGE_THREAD (1), which Swift's Glibc module does not name.
        _ = getrusage(__rusage_who_t(1), &usage)
        // Not getrusage's CPU time: Linux brings a running thread's total up to date only at a scheduler tick (4 ms at
        // HZ=250) or a switch, so a handling with a preemption in it was charged up to a tick of the CPU its thread
        // spent on earlier inputs (a seek of 0.3 ms showed 4.6 ms). The thread's CPU clock adds what ran since.
        var clock = timespec()
        _ = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &clock)
        let cpu = Int(clock.tv_sec) * 1_000_000 + Int(clock.tv_nsec) / 1_000
        return ThreadUsage(instant: .now, cpuMicros: cpu, waits: usage.ru_nvcsw, preemptions: usage.ru_nivcsw)
    }

    /// What happened on this thread from `start` to now.
    static func sample(since start: ThreadUsage) -> HandlingSample {
        let end = now()
        let took = (end.instant - start.instant).components
        return HandlingSample(
            micros: Int(took.seconds) * 1_000_000 + Int(took.attoseconds / 1_000_000_000_000),
            cpuMicros: end.cpuMicros - start.cpuMicros, waits: end.waits - start.waits,
            preemptions: end.preemptions - start.preemptions)
    }
}

extension Player.Input {
    /// The input's kind as `HandlingRecord` keeps it: its case, and for a control request, an MPRIS call, a server or
    /// stream notice and a decoder notice, which one (`request add`, `stream corked`). Names only, never content.
    var kind: String {
        switch self {
        case .decode(let notice): return "decode " + notice.kindName
        case .cover: return "cover"
        case .stream(let notice, _): return "stream " + notice.kindName
        case .connection(let notice, _): return "connection " + notice.kindName
        case .inventory: return "inventory"
        case .connected: return "connected"
        case .connectFailed: return "connectFailed"
        case .tick: return "tick"
        case .rulesTimerDue: return "rulesTimerDue"
        case .request(let request, _): return "request " + request.name
        case .mpris(let command, _): return "mpris " + command.kindName
        case .session: return "session"
        case .liveBufferOverflowed: return "liveBufferOverflowed"
        case .liveNetwork: return "liveNetwork"
        case .edgeDue: return "edgeDue"
        case .library: return "library"
        case .shutdown: return "shutdown"
        }
    }
}

extension DecodeNotice {
    /// The notice's case name.
    fileprivate var kindName: String {
        switch self {
        case .restarted: return "restarted"
        case .trackStarted: return "trackStarted"
        case .metadataChanged: return "metadataChanged"
        case .trackFailed: return "trackFailed"
        case .trackDecoded: return "trackDecoded"
        case .formatChange: return "formatChange"
        case .queueFinished: return "queueFinished"
        case .buffered: return "buffered"
        }
    }
}

extension StreamNotice {
    /// The notice's case name.
    fileprivate var kindName: String {
        switch self {
        case .ready: return "ready"
        case .corked: return "corked"
        case .uncorked: return "uncorked"
        case .flushed: return "flushed"
        case .applied: return "applied"
        case .commandFailed: return "commandFailed"
        case .started: return "started"
        case .underflow: return "underflow"
        case .corkRequested: return "corkRequested"
        case .uncorkRequested: return "uncorkRequested"
        case .unknownEvent: return "unknownEvent"
        case .moved: return "moved"
        case .leftSink: return "leftSink"
        case .failed: return "failed"
        case .killed: return "killed"
        case .drained: return "drained"
        case .requestsStopped: return "requestsStopped"
        }
    }
}

extension ConnectionNotice {
    /// The notice's case name.
    fileprivate var kindName: String {
        switch self {
        case .ready: return "ready"
        case .failed: return "failed"
        case .terminated: return "terminated"
        case .serverChange: return "serverChange"
        case .serverInfoChanged: return "serverInfoChanged"
        case .sinkAdded: return "sinkAdded"
        case .sinkChanged: return "sinkChanged"
        case .sinkRemoved: return "sinkRemoved"
        case .sinkInputChanged: return "sinkInputChanged"
        case .sinkInputRemoved: return "sinkInputRemoved"
        case .cardChanged: return "cardChanged"
        case .cardRemoved: return "cardRemoved"
        case .sourceChanged: return "sourceChanged"
        case .sourceRemoved: return "sourceRemoved"
        case .sourceOutputChanged: return "sourceOutputChanged"
        case .sourceOutputRemoved: return "sourceOutputRemoved"
        }
    }
}

extension MPRISCommand {
    /// The MPRIS method or property the command comes from.
    fileprivate var kindName: String {
        switch self {
        case .play: return "Play"
        case .pause: return "Pause"
        case .playPause: return "PlayPause"
        case .stop: return "Stop"
        case .next: return "Next"
        case .previous: return "Previous"
        case .seek: return "Seek"
        case .setPosition: return "SetPosition"
        case .openUri: return "OpenUri"
        case .setVolume: return "Volume"
        case .setLoopStatus: return "LoopStatus"
        case .setShuffle: return "Shuffle"
        case .quit: return "Quit"
        }
    }
}
