// FrameRing: the hand-over point between the decode thread (producer) and the real-time write
// callback (consumer). One producer and one consumer, no locks between them: each side owns one
// monotonic index and only reads the other's.
//
// Generations: a seek, a skip or a flush must not wait for the producer's step in progress (it may be opening a
// file on a slow disk), yet nothing that step writes may be heard. So a controller (the service's owner) starts a
// new generation (`beginGeneration`): from then on the consumer reads nothing until the producer, between two of
// its steps, answers it (`publishGenerationStart`) with the ring frame where the new position's audio starts; the
// consumer then skips every frame below that start, stale ones written meanwhile included. Three atomics carry it,
// each with one writer: `requestedGeneration` (the controller), `answeredGeneration` and `generationStart` (the
// producer). The consumer only loads them, so its side stays wait-free.
#if canImport(Glibc)
import Glibc
import SystemSupport
#endif
import Synchronization

/// Up to two contiguous pieces of the ring's storage, in order, as interleaved stereo `Int16` samples.
///
/// The second piece is empty unless the span wraps around the end of the storage. Each piece holds a
/// whole number of frames (two samples per frame). The pointers are valid until the side that asked
/// for them commits, and only on that side's thread.
public struct FrameRegions {
    /// The piece that starts at the side's current index.
    public var first: UnsafeMutableBufferPointer<Int16>
    /// The piece that continues at the start of the storage, or an empty buffer.
    public var second: UnsafeMutableBufferPointer<Int16>

    /// Total number of frames in both pieces.
    public var frameCount: Int { (first.count + second.count) / FrameRing.samplesPerFrame }
}

/// A single-producer, single-consumer lock-free ring of interleaved stereo 16-bit PCM frames.
///
/// The producer (the decode thread) and the consumer (the real-time write callback) may each run on
/// their own thread; every producer method must be called from one thread at a time, and likewise
/// every consumer method. The consumer side never allocates, locks or blocks: its only system call
/// is one `sem_post` to wake a producer that has declared itself waiting for space.
///
/// Both indices count frames since creation and only grow, so `writeIndex - readIndex` is the fill
/// level and the storage slot of an index is `index & (capacity - 1)`.
public final class FrameRing: @unchecked Sendable {
    // Sendable by discipline, not by a lock: the storage is written only by the producer in the span
    // [writeIndex, readIndex + capacity) it owns and read only by the consumer in [readIndex, writeIndex);
    // the acquire/release pairs on the two atomic indices hand each frame from one side to the other.
    // The three generation atomics have one writer each (see the file's header). Everything else is
    // immutable after `init`.

    /// Samples per frame: interleaved left and right.
    public static let samplesPerFrame = 2

    /// Bytes per frame: two 16-bit samples.
    public static let bytesPerFrame = samplesPerFrame * MemoryLayout<Int16>.size

    /// Number of frames the ring holds: a power of two.
    public let capacity: Int

    /// `capacity - 1`, to turn a monotonic index into a slot.
    private let mask: Int

    /// The sample storage, `capacity * 2` samples, allocated once.
    private let storage: UnsafeMutablePointer<Int16>

    /// Frames ever committed by the producer. Written only by the producer.
    private let writeIndex = Atomic<Int>(0)

    /// Frames ever consumed (or discarded) by the consumer. Written only by the consumer.
    private let readIndex = Atomic<Int>(0)

    /// The free space, in frames, the producer is sleeping for; 0 when it is not waiting.
    private let producerWaitingFor = Atomic<Int>(0)

    /// Set by `wakeProducer` so a waiting producer returns even though no space was freed.
    private let wakeRequested = Atomic<Bool>(false)

    /// The semaphore the producer sleeps on, allocated once so its address never moves.
    private let spaceSemaphore: UnsafeMutablePointer<sem_t>

    /// The newest generation the controller started (`beginGeneration`). Written only by the controller.
    private let requestedGeneration = Atomic<Int>(0)

    /// The newest generation the producer answered (`publishGenerationStart`). Written only by the producer.
    private let answeredGeneration = Atomic<Int>(0)

    /// The ring frame where the answered generation's audio starts. Written only by the producer, just before
    /// `answeredGeneration`; it only grows (it is the write index at the moment of the answer).
    private let generationStart = Atomic<Int>(0)

    /// Creates a ring holding at least `minimumCapacity` frames (rounded up to a power of two, at least 2).
    public init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "a ring needs room for at least one frame")
        var rounded = 2
        while rounded < minimumCapacity {
            rounded <<= 1
        }
        capacity = rounded
        mask = rounded - 1
        // Zeroed so that a reader of a region never sees uninitialised memory, even by mistake; by calloc, which
        // takes a block this large (512 KiB by default) from fresh pages the kernel zeroes when first written, so
        // the ring costs no resident memory until audio is decoded into it (a service that has not played yet).
        guard let zeroed = calloc(rounded * Self.samplesPerFrame, MemoryLayout<Int16>.stride) else {
            fatalError("cannot allocate the frame ring (\(rounded) frames)")
        }
        storage = zeroed.bindMemory(to: Int16.self, capacity: rounded * Self.samplesPerFrame)
        spaceSemaphore = .allocate(capacity: 1)
        sem_init(spaceSemaphore, 0, 0)
    }

    deinit {
        sem_destroy(spaceSemaphore)
        spaceSemaphore.deallocate()
        // Int16 is trivial: nothing to deinitialise before the block goes back to calloc's allocator.
        free(storage)
    }

    // MARK: - Totals

    /// Frames the producer has committed since the ring was created (the write index).
    public var totalFramesWritten: Int {
        // Acquiring: a caller that sees this total also sees the frames below it.
        writeIndex.load(ordering: .acquiring)
    }

    /// Frames the consumer has read or discarded since the ring was created (the read index).
    public var totalFramesRead: Int {
        // Acquiring: a caller that sees this total also sees that the consumer is done with those slots.
        readIndex.load(ordering: .acquiring)
    }

    // MARK: - Producer side

    /// Frames the producer can write now without overwriting unread audio.
    public var writableFrames: Int {
        let written = writeIndex.load(ordering: .relaxed)
        // Acquiring pairs with the consumer's releasing store in `commitRead`: once we see the new
        // read index, the consumer's copies out of those slots are finished, so they may be reused.
        let read = readIndex.load(ordering: .acquiring)
        return capacity - (written - read)
    }

    /// The free space as up to two pieces the producer can fill in place, then `commitWrite`.
    public func writableRegions() -> FrameRegions {
        let written = writeIndex.load(ordering: .relaxed)
        // Acquiring: see `writableFrames`; the slots handed out here are no longer being read.
        let read = readIndex.load(ordering: .acquiring)
        return regions(start: written, count: capacity - (written - read))
    }

    /// Publishes `frames` frames the producer has written into `writableRegions()` to the consumer.
    public func commitWrite(frames: Int) {
        let written = writeIndex.load(ordering: .relaxed)
        precondition(frames >= 0 && frames <= capacity - (written - readIndex.load(ordering: .acquiring)),
                     "commitWrite beyond the writable space")
        // Releasing: the sample stores into those slots happen before the consumer can observe the
        // new index with its acquiring load, so it never reads a frame before it is complete.
        writeIndex.store(written + frames, ordering: .releasing)
    }

    /// Copies as many whole frames of `samples` (interleaved stereo) as fit and commits them.
    ///
    /// Returns the number of frames written.
    public func write(_ samples: UnsafeBufferPointer<Int16>) -> Int {
        guard let source = samples.baseAddress else { return 0 }
        let target = writableRegions()
        let frames = min(samples.count / Self.samplesPerFrame, target.frameCount)
        let firstSamples = min(frames * Self.samplesPerFrame, target.first.count)
        let secondSamples = frames * Self.samplesPerFrame - firstSamples
        if firstSamples > 0, let first = target.first.baseAddress {
            first.update(from: source, count: firstSamples)
        }
        if secondSamples > 0, let second = target.second.baseAddress {
            second.update(from: source + firstSamples, count: secondSamples)
        }
        commitWrite(frames: frames)
        return frames
    }

    /// Sleeps until at least `minimumFrames` frames are writable, the timeout passes (nil: never), or
    /// `wakeProducer`.
    ///
    /// Returns `true` when the space is there. The producer is told, not polled: the consumer's
    /// `commitRead` posts a semaphore once the producer has declared what it waits for. Call it
    /// from the producer thread only. `minimumFrames` is capped at the capacity.
    public func waitForSpace(minimumFrames: Int, timeoutMilliseconds: Int?) -> Bool {
        let wanted = max(1, min(minimumFrames, capacity))
        let deadline = timeoutMilliseconds.map { Self.deadline(afterMilliseconds: $0) }
        while true {
            if wakeRequested.exchange(false, ordering: .acquiring) {
                return writableFrames >= wanted
            }
            if writableFrames >= wanted {
                return true
            }
            producerWaitingFor.store(wanted, ordering: .relaxed)
            // Dekker-style hand-shake with `notifyProducerIfWaiting` (and `wakeProducer`): our store of
            // the wish above and their store of the read index are both followed by a full fence and
            // then a load of the other's variable, so at least one side sees the other. Either the
            // consumer sees our wish and posts, or we see its new read index here and do not sleep.
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if writableFrames >= wanted || wakeRequested.load(ordering: .relaxed) {
                // A consumer that already claimed the wish will post anyway; that stale post only
                // shortens a later wait by one loop turn, which re-checks the space.
                producerWaitingFor.store(0, ordering: .relaxed)
                continue
            }
            let result: Int32
            WaitGuard.check("the ring's wait for space")
            if var time = deadline {
                result = sem_timedwait(spaceSemaphore, &time)
            } else {
                result = sem_wait(spaceSemaphore)
            }
            let failure = result == 0 ? 0 : errno
            producerWaitingFor.store(0, ordering: .relaxed)
            if failure == ETIMEDOUT {
                return writableFrames >= wanted
            }
        }
    }

    /// Makes a producer sleeping in `waitForSpace` return now (for shutdown or a control change).
    ///
    /// Safe to call from any thread; if the producer is not waiting, its next wait returns at once.
    public func wakeProducer() {
        wakeRequested.store(true, ordering: .releasing)
        // Not on the real-time path, so an unconditional post is fine: it cannot be lost, and a
        // surplus post only costs the producer one extra loop turn.
        sem_post(spaceSemaphore)
    }

    // MARK: - Consumer side (real-time safe)

    /// Frames the consumer can read now: none while the newest generation has no start yet, and none below its start.
    ///
    /// Only loads: any thread may ask (the producer does, for `.buffered`; the owner, before an uncork).
    public var readableFrames: Int {
        guard let span = readableSpan() else { return 0 }
        return span.written - span.read
    }

    /// The readable audio as up to two pieces the consumer can copy from, then `commitRead`.
    ///
    /// Consumer side: frames below the current generation's start are skipped here first (the read index moves
    /// past them as if they had been read); while the newest generation has no start, nothing is readable.
    public func readableRegions() -> FrameRegions {
        guard let span = readableSpan() else { return FrameRegions(first: .init(start: nil, count: 0),
                                                                   second: .init(start: nil, count: 0)) }
        if span.read != readIndex.load(ordering: .relaxed) {
            // Releasing, as in `commitRead`: the skipped slots go back to the producer.
            readIndex.store(span.read, ordering: .releasing)
            notifyProducerIfWaiting(read: span.read)
        }
        return regions(start: span.read, count: span.written - span.read)
    }

    /// Gives `frames` frames back to the producer after the consumer has copied them out.
    public func commitRead(frames: Int) {
        let read = readIndex.load(ordering: .relaxed)
        precondition(frames >= 0 && frames <= writeIndex.load(ordering: .acquiring) - read,
                     "commitRead beyond the readable audio")
        // Releasing: our loads from those slots happen before the producer, acquiring the new index,
        // may overwrite them.
        readIndex.store(read + frames, ordering: .releasing)
        notifyProducerIfWaiting(read: read + frames)
    }

    /// Copies up to `maxFrames` frames into `destination` (`frames * 4` bytes) and commits them.
    ///
    /// Returns the number of frames copied; the caller fills any shortfall with silence.
    public func copyOut(to destination: UnsafeMutableRawPointer, maxFrames: Int) -> Int {
        let source = readableRegions()
        let frames = min(max(maxFrames, 0), source.frameCount)
        let firstSamples = min(frames * Self.samplesPerFrame, source.first.count)
        let secondSamples = frames * Self.samplesPerFrame - firstSamples
        let bytesPerSample = MemoryLayout<Int16>.size
        if firstSamples > 0, let first = source.first.baseAddress {
            destination.copyMemory(from: first, byteCount: firstSamples * bytesPerSample)
        }
        if secondSamples > 0, let second = source.second.baseAddress {
            (destination + firstSamples * bytesPerSample)
                .copyMemory(from: second, byteCount: secondSamples * bytesPerSample)
        }
        commitRead(frames: frames)
        return frames
    }

    /// Drops everything written but not yet read (whatever its generation) and returns how many frames that was.
    ///
    /// Consumer side: call it on the consumer's thread (or while the consumer is excluded, for
    /// example under the audio lock). Frames the producer's step in progress writes after it are kept out
    /// by a generation started before it (`beginGeneration`): this only frees their room at once, so that a
    /// consumer that does not run (a corked stream) cannot leave the producer without space.
    public func discardReadable() -> Int {
        // Acquiring: the frames we skip were completely written, so the producer is done with them.
        let written = writeIndex.load(ordering: .acquiring)
        let read = readIndex.load(ordering: .relaxed)
        // Releasing: the producer may reuse the slots only after any copy we made before this call.
        readIndex.store(written, ordering: .releasing)
        notifyProducerIfWaiting(read: written)
        return written - read
    }

    // MARK: - Generations

    /// Controller side: starts a new generation and returns its number. From now on the consumer reads nothing until
    /// the producer answers this generation (`publishGenerationStart`), then nothing written before its start.
    ///
    /// Any thread, one at a time. A consumer callback already running may finish with what it had seen; one that
    /// starts after this call returns (ordered after it by a lock both take, for example libpulse's mainloop lock
    /// around a flush) sees the new generation.
    public func beginGeneration() -> Int {
        // Releasing: pairs with the acquiring loads in `readableSpan` and `publishGenerationStart`, so whoever sees
        // this number also sees what the controller did before (the new start point it hands the producer next
        // travels by the producer's own lock; this ordering only keeps the ring's reasoning self-contained).
        requestedGeneration.wrappingAdd(1, ordering: .releasing).newValue
    }

    /// The newest generation started (`beginGeneration`).
    public var currentGeneration: Int {
        requestedGeneration.load(ordering: .acquiring)
    }

    /// Producer side, between two writes: the audio of `generation` starts at the write index, now. Everything
    /// written before it (older generations, stale frames of a step that began before the generation) is never read.
    ///
    /// Returns the start (a `totalFramesWritten` value).
    @discardableResult
    public func publishGenerationStart(_ generation: Int) -> Int {
        // Relaxed: the producer's own index.
        let start = writeIndex.load(ordering: .relaxed)
        // Releasing, before the generation: a consumer that acquires either value also sees every write index up to
        // `start`, so the start it uses is never beyond what it can read.
        generationStart.store(start, ordering: .releasing)
        answeredGeneration.store(generation, ordering: .releasing)
        return start
    }

    /// The span the consumer may read, `[read, written)`, after the current generation's start; nil while the newest
    /// generation has not been answered. Loads only.
    private func readableSpan() -> (read: Int, written: Int)? {
        // Acquiring both: seeing a generation answered means seeing the start published with it (released before).
        // Equal means the producer has answered the newest generation this consumer knows of. The producer answers
        // only generations already started, but this snapshot may pair an older `requested` with a newer answer (a
        // generation started and answered between the two loads): unequal too, so nothing is read this time.
        let requested = requestedGeneration.load(ordering: .acquiring)
        let answered = answeredGeneration.load(ordering: .acquiring)
        guard answered == requested else { return nil }
        // Acquiring: pairs with the release in `publishGenerationStart`. A later generation's start may be seen here
        // (the producer answered again meanwhile); it is larger, and the frames it skips belong to a generation
        // already superseded.
        let start = generationStart.load(ordering: .acquiring)
        // Acquiring pairs with the producer's releasing store in `commitWrite`: every frame below the index we see
        // has been completely written. Loaded after the start, so it is at least the start.
        let written = writeIndex.load(ordering: .acquiring)
        let read = readIndex.load(ordering: .relaxed)
        return (max(read, min(start, written)), written)
    }

    // MARK: - Internals

    /// Posts the space semaphore if the producer waits for no more space than is now free.
    private func notifyProducerIfWaiting(read: Int) {
        // The full fence orders our read-index store before the load of the producer's wish; see
        // `waitForSpace` for the hand-shake this completes.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let wanted = producerWaitingFor.load(ordering: .relaxed)
        guard wanted > 0 else { return }
        let free = capacity - (writeIndex.load(ordering: .relaxed) - read)
        guard free >= wanted else { return }
        // The exchange makes the claim exclusive: one post per declared wait, however many commits.
        if producerWaitingFor.compareExchange(expected: wanted, desired: 0, ordering: .relaxed).exchanged {
            sem_post(spaceSemaphore)
        }
    }

    /// The pieces of storage for `count` frames starting at monotonic index `start`.
    private func regions(start: Int, count: Int) -> FrameRegions {
        let slot = start & mask
        let firstFrames = min(count, capacity - slot)
        let secondFrames = count - firstFrames
        let first = UnsafeMutableBufferPointer(start: storage + slot * Self.samplesPerFrame,
                                               count: firstFrames * Self.samplesPerFrame)
        let second = UnsafeMutableBufferPointer(start: secondFrames > 0 ? storage : nil,
                                                count: secondFrames * Self.samplesPerFrame)
        return FrameRegions(first: first, second: second)
    }

    /// The absolute `CLOCK_REALTIME` time `milliseconds` from now, as `sem_timedwait` wants it.
    private static func deadline(afterMilliseconds milliseconds: Int) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let clamped = max(0, milliseconds)
        var seconds = now.tv_sec + clamped / 1000
        var nanoseconds = now.tv_nsec + (clamped % 1000) * 1_000_000
        if nanoseconds >= 1_000_000_000 {
            seconds += 1
            nanoseconds -= 1_000_000_000
        }
        return timespec(tv_sec: seconds, tv_nsec: nanoseconds)
    }
}
