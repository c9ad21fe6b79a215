// DecodeWorker with generated files: notice order, skipping a corrupt file, gapless seams, the
// pause/discard/resume protocol, and the format-change hand-shake. The test thread is the consumer.
@testable import AudioPipeline
import CThreadShim
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing
import TrackPaths

/// The voluntary context switches so far of the thread `threadID` of this process (from /proc): one worker's
/// decode thread, since the whole suite runs side by side with other tests whose decode threads come and go.
func threadWakeUps(_ threadID: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/task/\(threadID)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") })
    else { return nil }
    return Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "")
}

/// Reads everything readable from `ring` (in chunks of varying size) and returns the samples.
func drainReadable(_ ring: FrameRing, chunkFrames: Int = 1_000) -> [Int16] {
    var samples: [Int16] = []
    var chunk = [Int16](repeating: 0, count: chunkFrames * 2)
    while true {
        let frames = chunk.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: chunkFrames) }
        if frames == 0 {
            return samples
        }
        samples.append(contentsOf: chunk[0..<(frames * 2)])
    }
}

/// Whether `notice` is a queue-finished notice.
func isQueueFinished(_ notice: DecodeNotice) -> Bool {
    if case .queueFinished = notice { return true }
    return false
}

/// The decode thread driven the way the service and the output will drive it.
@Suite("DecodeWorker")
struct DecodeWorkerTests {
    /// The decoder's output format for 44.1 kHz files.
    let stereo44 = AudioFormat(sampleRate: 44_100)
    /// The decoder's output format for 48 kHz files.
    let stereo48 = AudioFormat(sampleRate: 48_000)

    @Test("a queue with a corrupt middle file: notices in order, corrupt one skipped, gapless seam")
    func queueWithCorruptMiddle() throws {
        let first = try TestAudio.sine(seconds: 1, frequency: 440)
        let corrupt = try TestAudio.bytesFile("corrupt-middle.mp3", TestAudio.randomBytes(count: 50_000, seed: 9))
        let last = try TestAudio.sine(seconds: 1.5, frequency: 880)
        let firstSamples = try TestAudio.decodeAll(try MP3Decoder(path: first))
        let lastSamples = try TestAudio.decodeAll(try MP3Decoder(path: last))
        let firstFrames = firstSamples.count / 2
        let lastFrames = lastSamples.count / 2

        let ring = FrameRing(minimumCapacity: 8_192)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: TrackList([first, corrupt, last].map { TrackPath($0) }), startIndex: 0, startFrame: 0)

        var heard: [Int16] = []
        let finished = eventually(timeout: .seconds(30), interval: .milliseconds(1)) {
            heard += drainReadable(ring, chunkFrames: 777)
            // The worker waits for the controller to name the track after a failure (the rules' play order).
            if log.contains(where: { if case .trackFailed = $0 { true } else { false } }) {
                worker.skipFailedTrack(1, next: 2)
            }
            return log.contains(where: isQueueFinished) && ring.readableFrames == 0
        }
        #expect(finished)
        // Gapless: the ring holds exactly the two good files back to back, nothing between them.
        #expect(heard.count == firstSamples.count + lastSamples.count)
        #expect(heard == firstSamples + lastSamples)

        let notices = log.all
        guard notices.count == 6 else {
            Issue.record("expected 6 notices, got \(notices)")
            return
        }
        #expect(notices[0] == .trackStarted(index: 0, ringFrame: 0, format: stereo44, lengthFrames: firstFrames,
                                            metadata: TrackMetadata()))
        #expect(notices[1] == .trackDecoded(index: 0, ringFrame: firstFrames))
        if case .trackFailed(let index, let error, let inARow) = notices[2] {
            #expect(index == 1 && inARow == 1)
            #expect(error.kind == .notMPEGAudio)
        } else {
            Issue.record("third notice should be trackFailed(1), got \(notices[2])")
        }
        #expect(notices[3] == .trackStarted(index: 2, ringFrame: firstFrames, format: stereo44,
                                            lengthFrames: lastFrames, metadata: TrackMetadata()))
        #expect(notices[4] == .trackDecoded(index: 2, ringFrame: firstFrames + lastFrames))
        #expect(notices[5] == .queueFinished(ringFrame: firstFrames + lastFrames))

        // Markers map ring frames on both sides of the seam.
        #expect(worker.locate(ringFrame: 0) == TrackPosition(trackIndex: 0, frame: 0, sampleRate: 44_100))
        #expect(worker.locate(ringFrame: firstFrames - 1)
            == TrackPosition(trackIndex: 0, frame: firstFrames - 1, sampleRate: 44_100))
        #expect(worker.locate(ringFrame: firstFrames) == TrackPosition(trackIndex: 2, frame: 0, sampleRate: 44_100))
        #expect(worker.locate(ringFrame: firstFrames + 12_345)
            == TrackPosition(trackIndex: 2, frame: 12_345, sampleRate: 44_100))
        #expect(worker.locate(ringFrame: -1) == nil)
        #expect(worker.currentFormat == stereo44)
    }

    @Test("reposition: a new generation, a discard, a new start point: the ring continues from that frame")
    func repositionContinuesAtTheFrame() throws {
        let path = try TestAudio.sine(seconds: 2, frequency: 1_000)
        let reference = try TestAudio.decodeAll(try MP3Decoder(path: path))
        let ring = FrameRing(minimumCapacity: 4_096)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })

        // Play 3000 frames, then the user seeks to frame 50000.
        var played = [Int16](repeating: 0, count: 3_000 * 2)
        let copied = played.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: 3_000) }
        #expect(copied == 3_000)
        #expect(played == Array(reference[0..<6_000]))

        let generation = ring.beginGeneration()
        // From here on nothing is readable until the worker answers, whatever it writes meanwhile.
        #expect(ring.readableFrames == 0)
        #expect(ring.discardReadable() > 0)
        let readWhenDiscarded = ring.totalFramesRead
        worker.reposition(paths: [TrackPath(path)], trackIndex: 0, frame: 50_000, generation: generation)

        // Read as the write callback does, a little at a time: the step under way when the generation began may
        // land its stale frames after the discard, and they hold ring space (4 096 frames here) until a read skips
        // them, so waiting for 4 000 readable frames without reading could wait for ever.
        var afterSeek: [Int16] = []
        var chunk = [Int16](repeating: 0, count: 1_000 * 2)
        #expect(eventually {
            let wanted = min(1_000, 4_000 - afterSeek.count / 2)
            let got = chunk.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: wanted) }
            afterSeek += chunk.prefix(got * 2)
            return afterSeek.count >= 4_000 * 2
        })
        #expect(afterSeek == Array(reference[100_000..<108_000]))

        // `.restarted` comes first, and the track starts at the very ring frame the generation starts at.
        let notices = log.all
        guard let restartedAt = notices.firstIndex(where: { if case .restarted = $0 { true } else { false } }),
              case .restarted(let answered, let start) = notices[restartedAt]
        else {
            Issue.record("no .restarted in \(notices)")
            return
        }
        #expect(answered == generation)
        #expect(start >= readWhenDiscarded)
        #expect(notices[restartedAt + 1] == .trackStarted(index: 0, ringFrame: start, format: stereo44,
                                                            lengthFrames: reference.count / 2,
                                                            metadata: TrackMetadata()))
        #expect(worker.locate(ringFrame: 2_999) == TrackPosition(trackIndex: 0, frame: 2_999, sampleRate: 44_100))
        #expect(worker.locate(ringFrame: start + 10)
            == TrackPosition(trackIndex: 0, frame: 50_010, sampleRate: 44_100))
    }

    @Test("a worker stuck opening a file (held by a lease) holds up no reposition, and none of its step is heard")
    func stuckWorkerHoldsUpNothing() throws {
        let slow = try TestAudio.sine(seconds: 1, frequency: 440)
        let good = try TestAudio.sine(seconds: 1, frequency: 660)
        let reference = try TestAudio.decodeAll(try MP3Decoder(path: good))
        let queue = TrackList([TrackPath(slow), TrackPath(good)])
        let ring = FrameRing(minimumCapacity: 16_384)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        // While the lease is held, the worker's open(2) of the first track blocks in the kernel. Released before
        // `stop` (declared after it) whatever happens.
        let lease = try FileLease(path: slow)
        defer { lease.release() }
        worker.load(paths: queue, startIndex: 0, startFrame: 0)
        usleep(100_000)

        // Were any of these to wait for the worker, still blocked in open(2) until the lease is released below, they
        // would not return.
        let generation = ring.beginGeneration()
        let returned = returnsWhileStuck(limit: .seconds(20)) {
            _ = ring.discardReadable()
            worker.reposition(paths: queue, trackIndex: 1, frame: 0, generation: generation)
            worker.noticeWhenBuffered(frames: 1_000)
        }
        #expect(returned, "the reposition waited for the worker stuck opening a file")
        usleep(100_000)
        #expect(log.all.isEmpty, "\(log.all)")
        #expect(ring.readableFrames == 0)

        lease.release()
        var heard: [Int16] = []
        #expect(eventually {
            heard += drainReadable(ring)
            return log.contains(where: isQueueFinished) && ring.readableFrames == 0
        })
        // Only the new position's audio is heard: the first track, opened at last, is abandoned unheard.
        #expect(heard == reference)
        // The step that was blocked finished opening the first track and reported it, before `.restarted` (an owner
        // drops what comes before it); nothing of that track was written.
        let notices = log.all
        guard let restarted = notices.firstIndex(of: .restarted(generation: generation, ringFrame: 0)) else {
            Issue.record("no .restarted: \(notices)")
            return
        }
        #expect(notices[..<restarted].allSatisfy { if case .trackStarted(0, 0, _, _, _) = $0 { true } else { false } })
        #expect(notices[restarted + 1] == .trackStarted(index: 1, ringFrame: 0, format: stereo44,
                                                         lengthFrames: reference.count / 2, metadata: TrackMetadata()))
        #expect(notices[restarted...].contains { if case .buffered = $0 { true } else { false } })
    }

    @Test("a track at another rate is converted to the ring's rate: no format change, no gap, right pitch")
    func otherRateIsConverted() throws {
        let first = try TestAudio.sine(seconds: 0.5, frequency: 440)
        let second = try TestAudio.sine(seconds: 0.5, frequency: 660, rate: 48_000)
        let firstFrames = try TestAudio.decodeAll(try MP3Decoder(path: first)).count / 2
        let ring = FrameRing(minimumCapacity: 8_192)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(first), TrackPath(second)], startIndex: 0, startFrame: 0)

        var heard: [Int16] = []
        #expect(eventually {
            heard += drainReadable(ring)
            return log.contains(where: isQueueFinished) && ring.readableFrames == 0
        })
        #expect(!log.contains { if case .formatChange = $0 { return true } else { return false } })
        #expect(worker.currentFormat == stereo44)
        // Half a second of 48 kHz audio becomes half a second at 44.1 kHz (libmpg123's resampler, within a
        // frame or two of rounding), directly after the first track.
        let secondFrames = heard.count / 2 - firstFrames
        #expect(abs(secondFrames - 22_050) <= 64)
        #expect(log.all.contains(.trackStarted(index: 1, ringFrame: firstFrames, format: stereo44,
                                                   lengthFrames: secondFrames, metadata: TrackMetadata())))
        let converted = Signal.channel(Array(heard[(firstFrames * 2)...]), 0)
        #expect(abs(Signal.zeroCrossingFrequency(converted, rate: 44_100) - 660) < 10)
        #expect(worker.locate(ringFrame: firstFrames + 5) == TrackPosition(trackIndex: 1, frame: 5, sampleRate: 44_100))
    }

    @Test("appending to a finished queue continues right after what is in the ring")
    func appendAfterFinish() throws {
        let first = try TestAudio.sine(seconds: 0.3, frequency: 440)
        let second = try TestAudio.sine(seconds: 0.3, frequency: 880)
        let firstFrames = try TestAudio.decodeAll(try MP3Decoder(path: first)).count / 2
        let ring = FrameRing(minimumCapacity: 65_536)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(first)], startIndex: 0, startFrame: 0)
        #expect(eventually { log.contains(where: isQueueFinished) })
        worker.append(paths: [TrackPath(second)])
        #expect(eventually { log.all.filter(isQueueFinished).count == 2 })
        #expect(log.all.contains(.trackStarted(index: 1, ringFrame: firstFrames, format: stereo44,
                                                   lengthFrames: firstFrames, metadata: TrackMetadata())))
        #expect(ring.totalFramesWritten == 2 * firstFrames)
    }

    @Test("the worker fills the ring ahead, sleeps when it is full, and stop joins it promptly")
    func fillsAheadAndStops() throws {
        let path = try TestAudio.sine(seconds: 2)
        let ring = FrameRing(minimumCapacity: 16_384)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })
        usleep(50_000)
        #expect(ring.totalFramesWritten == ring.capacity)

        // Playing a little (below the refill threshold) does not wake the worker for a dribble...
        var scratch = [Int16](repeating: 0, count: 200)
        #expect(scratch.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: 100) } == 100)
        usleep(50_000)
        #expect(ring.totalFramesWritten == ring.capacity)
        // ...but freeing a large part does: the worker refills the ring.
        // Exactly what is there (the worker may start refilling while we read, so read a bounded amount).
        var rest = [Int16](repeating: 0, count: (ring.capacity - 100) * 2)
        #expect(rest.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: ring.capacity - 100) }
            == ring.capacity - 100)
        #expect(eventually { ring.readableFrames == ring.capacity })
        #expect(ring.totalFramesWritten == 2 * ring.capacity)

        let start = ContinuousClock.now
        worker.stop()
        worker.stop()
        #expect(ContinuousClock.now - start < .seconds(1))
        // After stop, control calls return at once.
        worker.reposition(paths: [TrackPath(path)], trackIndex: 0, frame: 0, generation: ring.beginGeneration())
        worker.continueAfterFormatChange()
    }

    @Test("a worker asleep for space in a full ring does not wake until space is freed or it is given work")
    func sleepsUntilNeeded() throws {
        let path = try TestAudio.sine(seconds: 2)
        let ring = FrameRing(minimumCapacity: 16_384)
        let log = NoticeRecorder<DecodeNotice>()
        // Notices are sent on the decode thread: the first one names it.
        let decodeThread = LockedValue<Int32?>(nil)
        let worker = DecodeWorker(ring: ring) { notice in
            decodeThread.withLock { $0 = $0 ?? earshot_thread_id() }
            log.record(notice)
        }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })
        let threadID = try #require(decodeThread.withLock { $0 })
        // A paused player's ring stays full: its decode thread must not wake on a timer of its own. Counted from the
        // kernel's switch count of that thread over 2.5 s (a timed wait of 2 s or less wakes at least once).
        usleep(100_000)
        let before = try #require(threadWakeUps(threadID))
        usleep(2_500_000)
        #expect(threadWakeUps(threadID) == before)
        #expect(ring.totalFramesWritten == ring.capacity)

        // A reposition is work: the sleeping worker takes it at once (its track starts again).
        let generation = ring.beginGeneration()
        _ = ring.discardReadable()
        worker.reposition(paths: [TrackPath(path)], trackIndex: 0, frame: 0, generation: generation)
        #expect(eventually { log.all.filter { if case .trackStarted = $0 { true } else { false } }.count == 2 })
    }

    @Test("a seek in the track being decoded seeks in its open decoder; the same index of another file opens that")
    func seekInTheOpenTrack() throws {
        let source = try TestAudio.sine(seconds: 2, frequency: 1_000)
        let reference = try TestAudio.decodeAll(try MP3Decoder(path: source))
        let other = try TestAudio.sine(seconds: 2, frequency: 440)
        let otherReference = try TestAudio.decodeAll(try MP3Decoder(path: other))
        // A copy of its own, removed once open: only a decoder that is not opened again can seek in it.
        let path = TestAudio.folder + "/seek-in-open-\(UUID().uuidString).mp3"
        try FileManager.default.copyItem(atPath: source, toPath: path)
        let ring = FrameRing(minimumCapacity: 4_096)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })
        try FileManager.default.removeItem(atPath: path)

        // Reads `frames` frames after a reposition, a little at a time as the write callback does.
        func read(_ frames: Int) -> [Int16] {
            var samples: [Int16] = []
            var chunk = [Int16](repeating: 0, count: 1_000 * 2)
            _ = eventually(interval: .milliseconds(1)) {
                let wanted = min(1_000, frames - samples.count / 2)
                let got = chunk.withUnsafeMutableBytes { ring.copyOut(to: $0.baseAddress!, maxFrames: wanted) }
                samples += chunk.prefix(got * 2)
                return samples.count >= frames * 2
            }
            return samples
        }
        var generation = ring.beginGeneration()
        _ = ring.discardReadable()
        worker.reposition(paths: [TrackPath(path)], trackIndex: 0, frame: 50_000, generation: generation)
        #expect(read(4_000) == Array(reference[100_000..<108_000]))
        #expect(!log.contains { if case .trackFailed = $0 { true } else { false } }, "\(log.all)")
        #expect(log.all.filter { if case .trackStarted = $0 { true } else { false } }.count == 2)

        // A new queue with another file at the same index: that file is opened, from its start.
        generation = ring.beginGeneration()
        _ = ring.discardReadable()
        worker.reposition(paths: [TrackPath(other)], trackIndex: 0, frame: 0, generation: generation)
        #expect(read(4_000) == Array(otherReference[0..<8_000]))
    }

    @Test("resuming beyond the queue, or loading an empty queue, finishes the queue")
    func emptyAndOutOfRange() throws {
        let ring = FrameRing(minimumCapacity: 1_024)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [], startIndex: 0, startFrame: 0)
        #expect(eventually { log.all == [.queueFinished(ringFrame: 0)] })
        worker.load(paths: [TrackPath(try TestAudio.sine(seconds: 0.5))], startIndex: 3, startFrame: 0)
        #expect(eventually { log.all.count == 2 })
        #expect(log.all.last == .queueFinished(ringFrame: 0))
        #expect(worker.currentFormat == nil)
        #expect(worker.locate(ringFrame: 0) == nil)
    }

    @Test("after a failed track the worker waits to be told the next: nothing until then, none finishes the queue")
    func failureWaitsForTheNextTrack() throws {
        let good = try TestAudio.sine(seconds: 0.2, frequency: 440)
        let broken = try TestAudio.bytesFile("broken-waits.mp3", TestAudio.randomBytes(count: 20_000, seed: 3))
        let ring = FrameRing(minimumCapacity: 65_536)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        let queue = TrackList([broken, broken, good].map { TrackPath($0) })
        worker.load(paths: queue, startIndex: 0, startFrame: 0)
        #expect(eventually { log.all.count == 1 })
        guard case .trackFailed(0, _, 1) = log.all[0] else {
            Issue.record("expected the first track's failure, got \(log.all)")
            return
        }
        // A skip for another track is not the one awaited: the worker goes on waiting.
        worker.skipFailedTrack(1, next: 2)
        // The next broken track, named by the controller, is the second failure in a row.
        worker.skipFailedTrack(0, next: 1)
        #expect(eventually { log.all.count == 2 })
        guard case .trackFailed(1, _, 2) = log.all[1] else {
            Issue.record("expected the second track's failure, two in a row, got \(log.all)")
            return
        }
        // None: the queue is finished, though a good track is left (the rules' verdict, not the worker's).
        worker.skipFailedTrack(1, next: nil)
        #expect(eventually { log.contains(where: isQueueFinished) })
        #expect(!log.contains { if case .trackStarted = $0 { true } else { false } }, "\(log.all)")
        // A new start point takes the place of an awaited skip; the late skip is ignored. It is a new start: the
        // failures in a row count afresh (two before it would make a queue of two look failed whole at its first).
        worker.load(paths: queue, startIndex: 0, startFrame: 0)
        #expect(eventually { log.all.count == 4 })
        guard case .trackFailed(0, _, 1) = log.all[3] else {
            Issue.record("expected the first track's failure, counted afresh after the new start, got \(log.all)")
            return
        }
        worker.load(paths: queue, startIndex: 2, startFrame: 0)
        worker.skipFailedTrack(0, next: 1)
        #expect(eventually { log.all.filter(isQueueFinished).count == 2 })
        let started = log.all.compactMap { notice -> Int? in
            if case .trackStarted(let index, _, _, _, _) = notice { index } else { nil }
        }
        #expect(started == [2], "\(log.all)")
        // The ignored skip opened nothing: the second track failed once only, when it was named.
        #expect(log.all.filter { if case .trackFailed(1, _, _) = $0 { true } else { false } }.count == 1)
    }
}
