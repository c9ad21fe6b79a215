// DecodeWorker's `.buffered` notice: the event an uncork waits for instead of sleeping until the ring holds audio.
import Foundation
import Testing
import TrackPaths
@testable import AudioPipeline
import EarshotTestSupport

@Suite("DecodeWorker: the buffered notice")
struct BufferedNoticeTests {
    /// Whether `notice` is a buffered notice.
    static func isBuffered(_ notice: DecodeNotice) -> Bool {
        if case .buffered = notice { return true }
        return false
    }

    @Test("asked before a seek empties the ring: announced once, when the ring holds the frames asked for")
    func announcedOnceWhenBuffered() throws {
        let path = try TestAudio.sine(seconds: 2, frequency: 440)
        let ring = FrameRing(minimumCapacity: 16_384)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })
        // Nothing asked, nothing announced.
        #expect(!log.contains(where: Self.isBuffered))

        let generation = ring.beginGeneration()
        _ = ring.discardReadable()
        worker.noticeWhenBuffered(frames: 4_000)
        worker.reposition(paths: [TrackPath(path)], trackIndex: 0, frame: 10_000, generation: generation)
        #expect(eventually { log.contains(where: Self.isBuffered) })
        let announced = log.all.compactMap { notice -> Int? in
            if case .buffered(let frames) = notice { return frames }
            return nil
        }
        #expect(announced.count == 1 && announced[0] >= 4_000, "\(announced)")
        // Once per request: filling up further announces nothing more.
        #expect(eventually { ring.readableFrames == ring.capacity })
        #expect(log.all.filter(Self.isBuffered).count == 1)
    }

    @Test("a withdrawn request is not announced")
    func withdrawnIsNotAnnounced() throws {
        let path = try TestAudio.sine(seconds: 2, frequency: 440)
        let ring = FrameRing(minimumCapacity: 16_384)
        let log = NoticeRecorder<DecodeNotice>()
        let worker = DecodeWorker(ring: ring) { log.record($0) }
        defer { worker.stop() }
        worker.noticeWhenBuffered(frames: 4_000)
        worker.noticeWhenBuffered(frames: nil)
        worker.load(paths: [TrackPath(path)], startIndex: 0, startFrame: 0)
        #expect(eventually { ring.readableFrames == ring.capacity })
        #expect(!log.contains(where: Self.isBuffered))
    }
}
