// FrameRing's generations: what a controller starts to reposition without waiting for the producer's step, what the
// producer answers, and what the consumer may read in between. A three-thread stress test (controller, producer,
// consumer) checks the promise under real concurrency and must stay clean under ThreadSanitizer
// (swift test --sanitize=thread --filter FrameRingGeneration).
@testable import AudioPipeline
import Foundation
import SystemSupport
import Testing

@Suite("FrameRing generations")
struct FrameRingGenerationTests {
    /// Writes `count` frames tagged `tag` (left sample) and numbered from `first` (right sample).
    @discardableResult
    func write(_ ring: FrameRing, tag: Int, first: Int, count: Int) -> Int {
        let samples = (0..<count).flatMap { [Int16(truncatingIfNeeded: tag), Int16(truncatingIfNeeded: first + $0)] }
        return samples.withUnsafeBufferPointer { ring.write($0) }
    }

    /// Reads up to `count` frames with `copyOut` and returns them as (tag, number) pairs.
    func read(_ ring: FrameRing, count: Int) -> [[Int16]] {
        var samples = [Int16](repeating: 0, count: count * 2)
        let frames = samples.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: count) }
        return (0..<frames).map { [samples[2 * $0], samples[2 * $0 + 1]] }
    }

    @Test("nothing is readable between a generation's start and its answer; then only frames from its start")
    func staleFramesAreSkipped() {
        let ring = FrameRing(minimumCapacity: 64)
        write(ring, tag: 0, first: 0, count: 10)
        #expect(read(ring, count: 4).count == 4)
        let generation = ring.beginGeneration()
        #expect(generation == 1 && ring.currentGeneration == 1)
        #expect(ring.readableFrames == 0)
        #expect(ring.readableRegions().frameCount == 0)
        #expect(read(ring, count: 10).isEmpty)
        #expect(ring.discardReadable() == 6)
        // The producer's step in progress writes on, unaware: none of it is readable.
        write(ring, tag: 0, first: 10, count: 5)
        #expect(ring.readableFrames == 0)
        #expect(ring.publishGenerationStart(generation) == 15)
        #expect(ring.readableFrames == 0)
        write(ring, tag: 1, first: 0, count: 3)
        #expect(ring.readableFrames == 3)
        #expect(read(ring, count: 10) == [[1, 0], [1, 1], [1, 2]])
        // The skipped frames count as read: the producer has the whole ring again.
        #expect(ring.totalFramesRead == 18)
        #expect(ring.writableFrames == 64)
    }

    @Test("a generation superseded before its answer keeps the consumer waiting for the newest")
    func newestGenerationWins() {
        let ring = FrameRing(minimumCapacity: 64)
        let first = ring.beginGeneration()
        let second = ring.beginGeneration()
        ring.publishGenerationStart(first)
        write(ring, tag: 1, first: 0, count: 4)
        #expect(ring.readableFrames == 0)
        ring.publishGenerationStart(second)
        write(ring, tag: 2, first: 0, count: 2)
        #expect(read(ring, count: 10) == [[2, 0], [2, 1]])
    }

    @Test("three threads: a frame read after a generation was started is never older than that generation")
    func threeThreadStress() throws {
        let ring = FrameRing(minimumCapacity: 1_024)
        let generations = 3_000
        // The controller's hand-over to the producer (what DecodeWorker's control lock carries).
        let handedOver = LockedValue(0)
        let stop = LockedValue(false)
        let outcome = LockedValue<(frames: Int, violation: String?)>((0, nil))
        let finished = DispatchSemaphore(value: 0)

        // Frames the consumer has read so far. The controller stops the run only once it holds `wanted` of them (or
        // after half a minute): how many frames fit into the generations' time depends on the machine (a run under
        // ThreadSanitizer on two loaded cores read 5 079), so the count waits for the work instead of racing a clock.
        let framesRead = LockedValue(0)
        let wanted = 10_000
        let controller = Thread {
            for _ in 0..<generations {
                let generation = ring.beginGeneration()
                handedOver.withLock { $0 = generation }
                usleep(UInt32.random(in: 0...300))
            }
            usleep(20_000)
            for _ in 0..<30_000 where framesRead.withLock({ $0 }) < wanted { usleep(1_000) }
            stop.withLock { $0 = true }
            finished.signal()
        }
        let producer = Thread {
            var answered = 0
            var number = 0
            var generator = SplitMix(seed: 21)
            while !stop.withLock({ $0 }) {
                let wanted = handedOver.withLock { $0 }
                if wanted != answered {
                    ring.publishGenerationStart(wanted)
                    answered = wanted
                    number = 0
                }
                let count = generator.next(upTo: 300)
                if ring.writableFrames < count {
                    _ = ring.waitForSpace(minimumFrames: count, timeoutMilliseconds: 1)
                    continue
                }
                number += write(ring, tag: answered, first: number, count: count)
            }
            finished.signal()
        }
        let consumer = Thread {
            var frames = 0
            var violation: String?
            var last: [Int16] = [-1, -1]
            var generator = SplitMix(seed: 22)
            while violation == nil && !stop.withLock({ $0 }) {
                let known = ring.currentGeneration
                for frame in read(ring, count: generator.next(upTo: 400)) {
                    frames += 1
                    if Int(frame[0]) < Int(Int16(truncatingIfNeeded: known)) {
                        violation = "generation \(frame[0]) read after \(known) was started"
                    } else if frame[0] == last[0] && frame[1] != last[1] &+ 1 {
                        violation = "frame \(frame[1]) of generation \(frame[0]) after \(last[1])"
                    } else if frame[0] != last[0] && frame[1] != 0 {
                        violation = "generation \(frame[0]) heard from frame \(frame[1]), not its start"
                    }
                    last = frame
                }
                framesRead.withLock { $0 = frames }
            }
            outcome.withLock { $0 = (frames, violation) }
            finished.signal()
        }
        controller.start()
        producer.start()
        consumer.start()
        for _ in 0..<3 { #expect(finished.wait(timeout: .now() + 60) == .success) }
        let result = outcome.withLock { $0 }
        #expect(result.violation == nil, "\(result.violation ?? "")")
        #expect(result.frames >= wanted)
    }
}
