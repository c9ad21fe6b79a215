// FrameRing: index arithmetic, the two-region views, the producer wake-up, and a two-thread stress
// test that must stay clean under ThreadSanitizer (swift test --sanitize=thread --filter FrameRing).
@testable import AudioPipeline
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing

/// The ring's arithmetic, views and wake-up, single- and two-threaded.
@Suite("FrameRing")
struct FrameRingTests {
    /// Writes `count` frames whose left sample is `first + i` and right sample its negation.
    @discardableResult
    func writeCounting(_ ring: FrameRing, from first: Int, count: Int) -> Int {
        let samples = (0..<count).flatMap {
            [Int16(truncatingIfNeeded: first + $0), Int16(truncatingIfNeeded: -(first + $0))]
        }
        return samples.withUnsafeBufferPointer { ring.write($0) }
    }

    /// Reads up to `count` frames with `copyOut` and returns their samples.
    func read(_ ring: FrameRing, count: Int) -> [Int16] {
        var samples = [Int16](repeating: 0, count: count * 2)
        let frames = samples.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: count) }
        return Array(samples[0..<(frames * 2)])
    }

    @Test("capacity rounds up to a power of two", arguments: [
        (1, 2), (2, 2), (3, 4), (1_000, 1_024), (1_024, 1_024), (1_025, 2_048), (88_200, 131_072),
    ])
    func capacityRounding(requested: Int, expected: Int) {
        #expect(FrameRing(minimumCapacity: requested).capacity == expected)
    }

    @Test("an empty ring has nothing to read and everything to write")
    func emptyRing() {
        let ring = FrameRing(minimumCapacity: 8)
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 8)
        #expect(ring.readableRegions().frameCount == 0)
        #expect(ring.writableRegions().frameCount == 8)
        #expect(ring.writableRegions().second.count == 0)
        #expect(read(ring, count: 4).isEmpty)
        #expect(ring.discardReadable() == 0)
        #expect(ring.totalFramesWritten == 0 && ring.totalFramesRead == 0)
    }

    @Test("a full ring takes no more and gives everything back in order")
    func fullRing() {
        let ring = FrameRing(minimumCapacity: 8)
        #expect(writeCounting(ring, from: 0, count: 5) == 5)
        #expect(writeCounting(ring, from: 5, count: 10) == 3)
        #expect(ring.writableFrames == 0)
        #expect(ring.writableRegions().frameCount == 0)
        #expect(ring.readableFrames == 8)
        #expect(writeCounting(ring, from: 8, count: 1) == 0)
        #expect(read(ring, count: 100) == (0..<8).flatMap { [Int16($0), Int16(-$0)] })
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 8)
    }

    @Test("a span across the end of storage comes as two regions, in order")
    func wrapAround() {
        let ring = FrameRing(minimumCapacity: 8)
        writeCounting(ring, from: 0, count: 6)
        #expect(read(ring, count: 6).count == 12)
        // Indices at 6: the free space is slots 6, 7 then 0...5.
        let free = ring.writableRegions()
        #expect(free.first.count == 2 * 2)
        #expect(free.second.count == 6 * 2)
        #expect(free.second.baseAddress != nil)
        #expect(free.first.baseAddress! == free.second.baseAddress! + 6 * 2)

        writeCounting(ring, from: 100, count: 5)
        let filled = ring.readableRegions()
        #expect(filled.first.count == 2 * 2)
        #expect(filled.second.count == 3 * 2)
        #expect(Array(filled.first) == [100, -100, 101, -101])
        #expect(Array(filled.second) == [102, -102, 103, -103, 104, -104])
        ring.commitRead(frames: 3)
        #expect(ring.readableRegions().first.count == 2 * 2)
        #expect(ring.readableRegions().second.count == 0)
        #expect(Array(ring.readableRegions().first) == [103, -103, 104, -104])
        #expect(ring.totalFramesWritten == 11)
        #expect(ring.totalFramesRead == 9)
    }

    @Test("writing in place through the regions then committing publishes the frames")
    func inPlaceWrite() {
        let ring = FrameRing(minimumCapacity: 4)
        writeCounting(ring, from: 0, count: 3)
        _ = read(ring, count: 3)
        let regions = ring.writableRegions()
        #expect(regions.frameCount == 4)
        for index in regions.first.indices { regions.first[index] = 7 }
        for index in regions.second.indices { regions.second[index] = 9 }
        ring.commitWrite(frames: 4)
        #expect(read(ring, count: 4) == [7, 7, 9, 9, 9, 9, 9, 9])
    }

    @Test("discardReadable drops exactly the unread frames")
    func discard() {
        let ring = FrameRing(minimumCapacity: 16)
        writeCounting(ring, from: 0, count: 10)
        _ = read(ring, count: 4)
        #expect(ring.discardReadable() == 6)
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 16)
        #expect(ring.totalFramesRead == 10)
        #expect(ring.totalFramesWritten == 10)
        writeCounting(ring, from: 50, count: 2)
        #expect(read(ring, count: 10) == [50, -50, 51, -51])
    }

    @Test("indices run far beyond the capacity without losing a frame")
    func manyLaps() {
        let ring = FrameRing(minimumCapacity: 16)
        var generator = SplitMix(seed: 3)
        var written = 0
        var expected = 0
        for _ in 0..<20_000 {
            written += writeCounting(ring, from: written, count: generator.next(upTo: 20))
            let samples = read(ring, count: generator.next(upTo: 20))
            for frame in 0..<(samples.count / 2) {
                #expect(samples[frame * 2] == Int16(truncatingIfNeeded: expected))
                expected += 1
            }
            #expect(ring.readableFrames + ring.writableFrames == 16)
        }
        #expect(written > 16 * 1_000)
        #expect(ring.totalFramesWritten == written)
        #expect(ring.totalFramesRead == expected)
    }

    @Test("waitForSpace returns at once with space, and times out when the ring stays full")
    func waitWithoutConsumer() {
        let ring = FrameRing(minimumCapacity: 8)
        #expect(ring.waitForSpace(minimumFrames: 8, timeoutMilliseconds: 0))
        writeCounting(ring, from: 0, count: 8)
        let start = ContinuousClock.now
        #expect(!ring.waitForSpace(minimumFrames: 1, timeoutMilliseconds: 50))
        #expect(ContinuousClock.now - start >= .milliseconds(40))
    }

    @Test("a consumer's commitRead wakes a waiting producer; wakeProducer wakes it without space")
    func wakeUps() {
        let ring = FrameRing(minimumCapacity: 8)
        writeCounting(ring, from: 0, count: 8)
        let consumer = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            // Two small reads: only the second makes enough room for the waiter.
            ring.commitRead(frames: 2)
            Thread.sleep(forTimeInterval: 0.02)
            ring.commitRead(frames: 2)
        }
        consumer.start()
        let start = ContinuousClock.now
        #expect(ring.waitForSpace(minimumFrames: 4, timeoutMilliseconds: 5_000))
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(ring.writableFrames >= 4)

        writeCounting(ring, from: 8, count: 4)
        let waker = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            ring.wakeProducer()
        }
        waker.start()
        let wakeStart = ContinuousClock.now
        #expect(!ring.waitForSpace(minimumFrames: 1, timeoutMilliseconds: 5_000))
        #expect(ContinuousClock.now - wakeStart < .seconds(2))
    }

    @Test("two threads move millions of frames through a small ring: each exactly once, in order")
    func twoThreadStress() throws {
        let totalFrames = 20_000_000
        let ring = FrameRing(minimumCapacity: 1_024)
        let outcome = LockedValue<(frames: Int, firstMismatch: Int?)>((0, nil))
        let finished = DispatchSemaphore(value: 0)

        let producer = Thread {
            var generator = SplitMix(seed: 11)
            var next = 0
            while next < totalFrames {
                let wanted = min(generator.next(upTo: 700), totalFrames - next)
                if ring.writableFrames < wanted {
                    _ = ring.waitForSpace(minimumFrames: wanted, timeoutMilliseconds: 1_000)
                    continue
                }
                let regions = ring.writableRegions()
                var frame = next
                for region in [regions.first, regions.second] {
                    guard let base = region.baseAddress else { continue }
                    let frames = min(region.count / 2, next + wanted - frame)
                    for offset in 0..<frames {
                        // The counter's low and high halves, so every frame of the run is distinct.
                        base[offset * 2] = Int16(truncatingIfNeeded: frame + offset)
                        base[offset * 2 + 1] = Int16(truncatingIfNeeded: (frame + offset) >> 16)
                    }
                    frame += frames
                }
                ring.commitWrite(frames: wanted)
                next += wanted
            }
            finished.signal()
        }

        let consumer = Thread {
            var generator = SplitMix(seed: 12)
            var expected = 0
            var mismatch: Int?
            let scratch = UnsafeMutablePointer<Int16>.allocate(capacity: 2 * 1_024)
            defer { scratch.deallocate() }
            while expected < totalFrames && mismatch == nil {
                let wanted = generator.next(upTo: 700)
                if ring.readableFrames == 0 {
                    sched_yield()
                    continue
                }
                // Alternate the two consumer paths: in-place regions and copyOut.
                if wanted % 2 == 0 {
                    let regions = ring.readableRegions()
                    var taken = 0
                    for region in [regions.first, regions.second] where taken < wanted {
                        guard let base = region.baseAddress else { continue }
                        let frames = min(region.count / 2, wanted - taken)
                        for offset in 0..<frames where mismatch == nil {
                            if !Self.matches(base + offset * 2, frame: expected + taken + offset) {
                                mismatch = expected + taken + offset
                            }
                        }
                        taken += frames
                    }
                    ring.commitRead(frames: taken)
                    expected += taken
                } else {
                    let frames = ring.copyOut(to: scratch, maxFrames: wanted)
                    for offset in 0..<frames where mismatch == nil {
                        if !Self.matches(scratch + offset * 2, frame: expected + offset) {
                            mismatch = expected + offset
                        }
                    }
                    expected += frames
                }
            }
            outcome.withLock { $0 = (expected, mismatch) }
            finished.signal()
        }

        producer.start()
        consumer.start()
        #expect(finished.wait(timeout: .now() + 60) == .success)
        #expect(finished.wait(timeout: .now() + 60) == .success)
        let result = outcome.withLock { $0 }
        #expect(result.firstMismatch == nil)
        #expect(result.frames == totalFrames)
        #expect(ring.totalFramesWritten == totalFrames)
        #expect(ring.totalFramesRead == totalFrames)
    }

    /// Whether the frame at `pointer` carries counter value `frame`.
    static func matches(_ pointer: UnsafePointer<Int16>, frame: Int) -> Bool {
        pointer[0] == Int16(truncatingIfNeeded: frame) && pointer[1] == Int16(truncatingIfNeeded: frame >> 16)
    }
}

/// A tiny deterministic random number generator for chunk sizes.
struct SplitMix {
    /// The generator's state.
    var state: UInt64

    /// Creates a generator from `seed`.
    init(seed: UInt64) { state = seed }

    /// A value in 1...limit.
    mutating func next(upTo limit: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((mixed ^ (mixed >> 31)) % UInt64(limit)) + 1
    }
}
