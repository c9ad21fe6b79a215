// The owner's position bookkeeping: ring frames in, the listener's position and heard track boundaries out.
import AudioPipeline
import Testing

@testable import EarshotService

struct HeardPositionTests {
    /// Two tracks at 48 kHz as the decoder lays them out: track 0 from ring frame 0, track 1 from ring frame 96 000.
    private static func locate(_ ringFrame: Int) -> TrackPosition? {
        guard ringFrame >= 0 else { return nil }
        if ringFrame < 96_000 { return TrackPosition(trackIndex: 0, frame: ringFrame, sampleRate: 48_000) }
        return TrackPosition(trackIndex: 1, frame: ringFrame - 96_000, sampleRate: 48_000)
    }

    @Test("the first heard frame reports its track once; later frames of the same track report nothing")
    func firstTrackIsReportedOnce() {
        var book = HeardPosition()
        #expect(book.observe(ringFrame: 100, locate: Self.locate) == 0)
        #expect(book.observe(ringFrame: 4_800, locate: Self.locate) == nil)
        #expect(book.current == TrackPosition(trackIndex: 0, frame: 4_800, sampleRate: 48_000))
    }

    @Test("crossing a track boundary is reported when the listener crosses it, not before")
    func boundaryIsReportedWhenHeard() {
        var book = HeardPosition()
        _ = book.observe(ringFrame: 0, locate: Self.locate)
        book.trackDecoded(0, endsAtRingFrame: 96_000)
        #expect(book.observe(ringFrame: 95_999, locate: Self.locate) == nil)
        #expect(book.framesLeft(inTrack: 0) == 1)
        #expect(book.observe(ringFrame: 96_010, locate: Self.locate) == 1)
        #expect(book.current == TrackPosition(trackIndex: 1, frame: 10, sampleRate: 48_000))
    }

    @Test("a track joined to itself (repeat track) is reported again at each new start, and ends once a round")
    func repeatedTrackIsReportedAtEachStart() {
        var book = HeardPosition()
        // Three rounds of a 1 s track at 48 kHz, one after the other in the ring.
        let rounds = { (ringFrame: Int) -> TrackPosition? in
            TrackPosition(trackIndex: 0, frame: ringFrame % 48_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 100, locate: rounds) == 0)
        book.trackDecoded(0, endsAtRingFrame: 48_000)
        book.trackDecoded(0, endsAtRingFrame: 96_000)
        #expect(book.observe(ringFrame: 47_990, locate: rounds) == nil)
        #expect(book.framesLeft(inTrack: 0) == 10)
        #expect(book.observe(ringFrame: 48_010, locate: rounds) == 0)
        // The next round's end, not the one just passed, and not the last decoded.
        #expect(book.framesLeft(inTrack: 0) == 47_990)
        #expect(book.observe(ringFrame: 60_000, locate: rounds) == nil)
        book.trackDecoded(0, endsAtRingFrame: 144_000)
        #expect(book.framesLeft(inTrack: 0) == 36_000)
        #expect(book.observe(ringFrame: 96_005, locate: rounds) == 0)
    }

    @Test("after a reposition the target is the position until audio written after it is heard")
    func repositionHoldsTheTargetUntilNewAudioIsHeard() {
        var book = HeardPosition()
        _ = book.observe(ringFrame: 50_000, locate: Self.locate)
        book.trackDecoded(0, endsAtRingFrame: 96_000)
        let target = TrackPosition(trackIndex: 1, frame: 24_000, sampleRate: 48_000)
        // The decoder had written up to ring frame 120 000 when the reposition dropped it.
        book.repositioned(to: target, floorRingFrame: 120_000)
        #expect(book.current == target)
        // The stream's clock still names dropped audio: the position stays the target, and no boundary is reported
        // (track 1 is where the reposition put the listener, already known).
        #expect(book.position(atRingFrame: 100_000, locate: Self.locate) == target)
        #expect(book.observe(ringFrame: 100_000, locate: Self.locate) == nil)
        #expect(book.current == target)
        // The decoder's old track end no longer holds.
        #expect(book.framesLeft(inTrack: 0) == nil)
        // Heard past the floor: the decoder's mapping counts again.
        let past = { (ringFrame: Int) -> TrackPosition? in
            TrackPosition(trackIndex: 1, frame: 24_000 + ringFrame - 120_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 120_480, locate: past) == nil)
        #expect(book.current == TrackPosition(trackIndex: 1, frame: 24_480, sampleRate: 48_000))
        // A frame below the floor was dropped unheard: once heard past it, the clock stepping back there leaves the
        // last heard position (not the target, not what the decoder's markers say of the dropped audio).
        #expect(book.position(atRingFrame: 100_000, locate: past) == book.current)
    }

    @Test("after a queue edit's reposition is heard, the clock stepping back into dropped audio hears no boundary")
    func steppingBackBelowThePassedFloorHearsNoBoundary() {
        // MPD's `moveid` then `swap` of the playing track (MPDQueueTests, PipeWire 1.6.9 under load): the move put the
        // playing track, heard at index 1 of the queue of before, at index 0. Its dropped audio is still marked as
        // track 1 in the decoder's markers; the stream's clock ran past the new audio's start, then a timing reading
        // (or the frame kept at the flush) put it back before it. Reported as a boundary into track 1, the rules moved
        // the cursor there, and the swap that followed played the other track from its start.
        var book = HeardPosition()
        let beforeEdit = { (ringFrame: Int) -> TrackPosition? in
            TrackPosition(trackIndex: ringFrame < 200_000 ? 1 : 0, frame: ringFrame % 200_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 11_000, locate: beforeEdit) == 1)
        let target = TrackPosition(trackIndex: 0, frame: 11_000, sampleRate: 48_000)
        book.repositioned(to: target, floorRingFrame: nil)
        book.newAudioStarts(atRingFrame: 200_000)
        let afterEdit = { (ringFrame: Int) -> TrackPosition? in
            ringFrame < 200_000 ? beforeEdit(ringFrame)
                : TrackPosition(trackIndex: 0, frame: 11_000 + ringFrame - 200_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 200_480, locate: afterEdit) == nil)
        let heard = TrackPosition(trackIndex: 0, frame: 11_480, sampleRate: 48_000)
        #expect(book.current == heard)
        #expect(book.observe(ringFrame: 12_000, locate: afterEdit) == nil, "the dropped audio was taken as heard")
        #expect(book.current == heard)
        #expect(book.position(atRingFrame: 12_000, locate: afterEdit) == heard)
        // From the new audio on, the decoder's markers count again.
        #expect(book.observe(ringFrame: 201_000, locate: afterEdit) == nil)
        #expect(book.current == TrackPosition(trackIndex: 0, frame: 12_000, sampleRate: 48_000))
    }

    @Test("until the decoder says where the reposition's audio starts, every ring frame is below the floor")
    func floorUnknownUntilTheDecoderAnswers() {
        var book = HeardPosition()
        _ = book.observe(ringFrame: 50_000, locate: Self.locate)
        let target = TrackPosition(trackIndex: 0, frame: 4_800, sampleRate: 48_000)
        book.repositioned(to: target, floorRingFrame: nil)
        // Frames the decoder's abandoned step wrote after the reposition (never heard) map to the target too.
        #expect(book.position(atRingFrame: 130_000, locate: Self.locate) == target)
        #expect(book.observe(ringFrame: 130_000, locate: Self.locate) == nil)
        #expect(book.current == target)
        // `.restarted`: the new audio starts at ring frame 140 000.
        book.newAudioStarts(atRingFrame: 140_000)
        #expect(book.position(atRingFrame: 139_999, locate: Self.locate) == target)
        let fromStart = { (ringFrame: Int) -> TrackPosition? in
            TrackPosition(trackIndex: 0, frame: 4_800 + ringFrame - 140_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 140_480, locate: fromStart) == nil)
        #expect(book.current == TrackPosition(trackIndex: 0, frame: 5_280, sampleRate: 48_000))
    }

    @Test("a reposition to another track reports the track the listener then hears only if it changes again")
    func repositionSetsTheReportedTrack() {
        var book = HeardPosition()
        _ = book.observe(ringFrame: 10, locate: Self.locate)
        book.repositioned(to: TrackPosition(trackIndex: 1, frame: 0, sampleRate: 48_000), floorRingFrame: 96_000)
        #expect(book.observe(ringFrame: 96_200, locate: Self.locate) == nil)
        // Track 0 again after it (as `previous` would lay it out): a change, reported.
        let thenFirst = { (ringFrame: Int) -> TrackPosition? in
            TrackPosition(trackIndex: ringFrame < 100_000 ? 1 : 0, frame: ringFrame % 4_000, sampleRate: 48_000)
        }
        #expect(book.observe(ringFrame: 100_050, locate: thenFirst) == 0)
    }

    @Test("without a stream, or for a frame the decoder cannot place, the last known position stands")
    func unknownFramesKeepTheLastPosition() {
        var book = HeardPosition()
        #expect(book.position(atRingFrame: nil, locate: Self.locate) == nil)
        _ = book.observe(ringFrame: 480, locate: Self.locate)
        let heard = TrackPosition(trackIndex: 0, frame: 480, sampleRate: 48_000)
        #expect(book.position(atRingFrame: nil, locate: Self.locate) == heard)
        #expect(book.position(atRingFrame: -5, locate: Self.locate) == heard)
        #expect(book.observe(ringFrame: -5, locate: Self.locate) == nil)
        #expect(book.current == heard)
        #expect(book.lastRingFrame == -5)
    }

    @Test("settling keeps the position read as the stream corked or died")
    func settleKeepsThePosition() {
        var book = HeardPosition()
        _ = book.observe(ringFrame: 480, locate: Self.locate)
        let corkedAt = TrackPosition(trackIndex: 0, frame: 960, sampleRate: 48_000)
        book.settle(at: corkedAt)
        #expect(book.current == corkedAt)
        #expect(book.position(atRingFrame: nil, locate: Self.locate) == corkedAt)
    }
}
