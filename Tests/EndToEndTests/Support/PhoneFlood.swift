// A flood of short phone calls from inside the test process: each call is a libpulse client of its own
// (PulseOutput's `PulseConnection` and `PlaybackStream`, the same code Earshot plays with) that opens a playback
// stream with `media.role=phone` on a sink, plays a little dial tone, and hangs up: stream closed, client
// disconnected. Several lanes place calls at once, so calls overlap at random. Spawning a paplay per call would
// cost a process start each, too slow for a thousand calls on a two-core machine.

import AudioPipeline
import EarshotTestSupport
import Foundation
import PulseOutput
import Synchronization
import SystemSupport

/// What a flood of phone calls did: how many calls were placed, how long it took, and what failed.
struct PhoneFloodOutcome: Sendable {
    /// Calls that played and hung up.
    var completed = 0
    /// Calls that could not be placed, with the error (the first few).
    var failures: [String] = []
    /// How many calls failed in all.
    var failureCount = 0
    /// The most calls that were on the server at one moment.
    var mostAtOnce = 0
    /// From the first call to the last hang-up.
    var duration: Duration = .zero
}

/// Places many short phone calls at once through libpulse, on threads of its own (the calls block while they
/// wait for the server, which must not happen on Swift's cooperative threads).
enum PhoneFlood {
    /// The sample rate of the calls' audio.
    private static let sampleRate = 8_000

    /// Places `calls` phone calls on `sink` from `lanes` lanes at once, each call holding its stream playing for a
    /// random 0...`longestHold` before hanging up, and each lane waiting a random 0...`longestGap` before its next
    /// call (so that at times no call is active and the music may come back); returns when every call has ended.
    static func run(
        calls: Int, lanes: Int, sink: String, longestHold: Duration = .milliseconds(60),
        longestGap: Duration = .milliseconds(40)
    ) async -> PhoneFloodOutcome {
        let next = Atomic<Int>(0)
        let active = Atomic<Int>(0)
        let outcome = LockedValue(PhoneFloodOutcome())
        let done = AsyncStream<Void>.makeStream()
        let started = ContinuousClock.now
        for lane in 0..<lanes {
            let thread = Thread {
                defer { done.continuation.yield() }
                while next.add(1, ordering: .relaxed).oldValue < calls {
                    do {
                        try placeCall(on: sink, hold: .milliseconds(Int.random(in: 0...longestHold.milliseconds))) {
                            let now = active.add(1, ordering: .relaxed).newValue
                            outcome.withLock { $0.mostAtOnce = max($0.mostAtOnce, now) }
                        } hangingUp: {
                            active.subtract(1, ordering: .relaxed)
                        }
                        outcome.withLock { $0.completed += 1 }
                    } catch {
                        outcome.withLock {
                            $0.failureCount += 1
                            if $0.failures.count < 5 { $0.failures.append("\(error)") }
                        }
                    }
                    Thread.sleep(forTimeInterval: Double(Int.random(in: 0...longestGap.milliseconds)) / 1000)
                }
            }
            thread.name = "phone-flood-\(lane)"
            thread.start()
        }
        var ended = 0
        for await _ in done.stream {
            ended += 1
            if ended == lanes { break }
        }
        return outcome.withLock {
            $0.duration = ContinuousClock.now - started
            return $0
        }
    }

    /// One call: connects, opens a phone stream on `sink` with 100 ms of dial tone queued, uncorks it, holds it for
    /// `hold`, then closes the stream and disconnects. `answered` runs once the stream plays, `hangingUp` before
    /// it is closed (also when a step after the uncork fails).
    private static func placeCall(
        on sink: String, hold: Duration, answered: () -> Void, hangingUp: () -> Void
    ) throws {
        let connection = try PulseConnection(operationTimeout: .seconds(20))
        defer { connection.disconnect() }
        try connection.connect(applicationName: "Earshot test phone")
        let ring = FrameRing(minimumCapacity: sampleRate)
        _ = dialTone.withUnsafeBufferPointer { ring.write($0) }
        let notices = NoticeRecorder<StreamNotice>()
        let stream = try PlaybackStream(
            connection: connection, sampleRate: sampleRate, ring: ring,
            properties: StreamProperties(mediaRole: "phone", applicationName: "Earshot test phone",
                                         iconName: "phone", mediaName: "call"),
            sinkName: sink) { notices.record($0) }
        defer { stream.close() }
        // The stream's open and its commands do not wait; a call, on a thread of its own, waits for their notices.
        try notices.wait(for: "the open") { notice in
            if case .ready = notice { return true }
            return false
        }
        try stream.uncork()
        try notices.wait(for: "the uncork") { notice in notice == .uncorked }
        answered()
        defer { hangingUp() }
        if hold > .zero { Thread.sleep(forTimeInterval: hold.seconds) }
    }

    /// 100 ms of the dial tone's frequencies, interleaved stereo at `sampleRate`.
    private static let dialTone: [Int16] = {
        let frames = sampleRate / 10
        var samples: [Int16] = []
        samples.reserveCapacity(frames * 2)
        for frame in 0..<frames {
            let time = Double(frame) / Double(sampleRate)
            let value = Fixtures.phoneCallFrequencies.map { sin(2 * .pi * $0 * time) }.reduce(0, +) * 0.2
            let sample = Int16(value * Double(Int16.max))
            samples.append(sample)
            samples.append(sample)
        }
        return samples
    }()
}

extension Duration {
    /// This duration in whole milliseconds.
    var milliseconds: Int { Int(seconds * 1000) }
}

extension NoticeRecorder<StreamNotice> {
    /// Blocks the call's own thread (a test may wait; the product does not), up to 20 s, the calls' operation
    /// timeout, until a notice matching `predicate` has arrived; throws when the stream failed or a command was
    /// refused first, or on timeout.
    fileprivate func wait(for step: String, until predicate: (StreamNotice) -> Bool) throws {
        guard let found = waitBlocking(.seconds(20), where: { predicate($0) || Self.isFailure($0) }) else {
            throw CallFailed(description: "\(step): no answer within 20 s")
        }
        if !predicate(found.notice) && !contains(where: predicate) {
            throw CallFailed(description: "\(step): \(found.notice)")
        }
    }

    private static func isFailure(_ notice: StreamNotice) -> Bool {
        switch notice {
        case .failed, .killed, .commandFailed: return true
        default: return false
        }
    }
}

/// A call that could not be placed, and why.
private struct CallFailed: Error, CustomStringConvertible {
    let description: String
}
