// Repeat and shuffle: rule 13's boundary and the queue's end consult them, next and previous follow the play order,
// and a shuffled order keeps its promises (each track once a round, stable across a save and restore, additions
// placed in what is still to play).
import EarshotCore
import Testing

@Suite("Repeat and shuffle")
struct PlayOrderTests {
    @Test("Rule 13 under repeat track: the track is heard again, next moves on, the queue never runs out")
    func repeatTrack() {
        var store = RuleStore(Given.playing)
        store.send(.userRepeat(.track), commands: []) {
            $0.repeatMode = .track
            $0.orderChangedAhead = true
        }
        #expect(store.state.track(after: 0, trackEnded: true) == 0)
        // The track heard again is the one the order expects: in step again.
        store.send(.heardTrack(index: 0), commands: []) { $0.orderChangedAhead = false }
        store.send(.userNext, commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        store.send(.heardTrack(index: 1), commands: [])
        store.send(.userNext, commands: [.playTrack(index: 2)]) { $0.queue.index = 2 }
        // Next at the queue's last track has nowhere to go: only `repeat queue` wraps.
        store.send(.userNext, commands: [])
    }

    @Test("Rule 13 under repeat queue: the first track follows the last, for the decoder, the listener and next")
    func repeatQueue() {
        var store = RuleStore(Given.playing)
        store.send(.userRepeat(.queue), commands: []) {
            $0.repeatMode = .queue
            $0.orderChangedAhead = true
        }
        store.send(.heardTrack(index: 1), commands: []) {
            $0.queue.index = 1
            $0.orderChangedAhead = false
        }
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
        #expect(store.state.track(after: 2, trackEnded: true) == 0)
        store.send(.heardTrack(index: 0), commands: []) { $0.queue.index = 0 }
        store.send(.userPrevious, commands: [.playTrack(index: 0)])
        store.send(.heardTrack(index: 1), commands: []) { $0.queue.index = 1 }
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
        store.send(.userNext, commands: [.playTrack(index: 0)]) { $0.queue.index = 0 }
    }

    @Test("Repeat off again: the queue stops at its end, and an earlier track heard is stale (rule 15)")
    func repeatOffStopsAtTheEnd() {
        var store = RuleStore(Given.playing)
        store.send(.userRepeat(.queue), commands: []) {
            $0.repeatMode = .queue
            $0.orderChangedAhead = true
        }
        store.send(.userRepeat(.off), commands: []) { $0.repeatMode = .off }
        store.send(.heardTrack(index: 1), commands: []) {
            $0.queue.index = 1
            $0.orderChangedAhead = false
        }
        store.send(.heardTrack(index: 2), commands: []) { $0.queue.index = 2 }
        store.send(.heardTrack(index: 0), commands: [])
        #expect(store.state.track(after: 2, trackEnded: true) == nil)
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.queue.index = 0
            $0.playback = .stopped
        }
    }

    @Test("Repeat queue turned off after the decoder wrapped: the first track heard is taken, the cursor follows it")
    func orderChangedAfterTheDecoderWrapped() {
        var playingLast = Given.playing
        playingLast.queue.index = 2
        playingLast.repeatMode = .queue
        var store = RuleStore(playingLast)
        store.send(.userRepeat(.off), commands: []) {
            $0.repeatMode = .off
            $0.orderChangedAhead = true
        }
        // Joined under `repeat queue`, before the change: what the listener hears is a fact.
        store.send(.heardTrack(index: 0), commands: []) { $0.queue.index = 0 }
        store.send(.heardTrack(index: 1), commands: []) {
            $0.queue.index = 1
            $0.orderChangedAhead = false
        }
        // In step again: an earlier track is a stale report once more (rule 15).
        store.send(.heardTrack(index: 0), commands: [])
        // Next starts the decoder afresh in the order as it is.
        store.send(.userRepeat(.queue), commands: []) {
            $0.repeatMode = .queue
            $0.orderChangedAhead = true
        }
        store.send(.userNext, commands: [.playTrack(index: 2)]) {
            $0.queue.index = 2
            $0.orderChangedAhead = false
        }
    }

    @Test("Tracks added under repeat queue after the decoder wrapped: the first track heard is taken all the same")
    func additionAfterTheDecoderWrapped() {
        var playingLast = Given.playing
        playingLast.queue.index = 2
        playingLast.repeatMode = .queue
        var store = RuleStore(playingLast)
        store.send(.queueExtended(trackCount: 4), commands: []) {
            $0.queue.trackCount = 4
            $0.orderChangedAhead = true
        }
        #expect(store.state.track(after: 2, trackEnded: true) == 3)
        store.send(.heardTrack(index: 0), commands: []) { $0.queue.index = 0 }
        store.send(.heardTrack(index: 1), commands: []) {
            $0.queue.index = 1
            $0.orderChangedAhead = false
        }
    }

    @Test("Shuffle on while the decoder had joined the queue's next track: it plays next, and the round stays whole")
    func shuffleOnAfterTheDecoderJoinedTheNextTrack() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 8, index: 3)
        _ = state.apply(.userShuffle(on: true, seed: 31))
        #expect(state.orderChangedAhead)
        #expect(state.apply(.heardTrack(index: 4)) == [])
        #expect(state.queue.index == 4 && Array(state.playOrder.prefix(2)) == [3, 4])
        var heard = [3, 4]
        while let next = state.track(after: state.queue.index, trackEnded: true) {
            _ = state.apply(.heardTrack(index: next))
            heard.append(next)
        }
        #expect(heard.sorted() == Array(0..<8), "heard \(heard)")
        #expect(!state.orderChangedAhead)
    }

    @Test("Shuffle off after the decoder joined a shuffled successor: it is taken, though earlier in the queue")
    func shuffleOffAfterTheDecoderJoinedAShuffledTrack() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 6, index: 5)
        _ = state.apply(.userShuffle(on: true, seed: 8))
        _ = state.apply(.heardTrack(index: state.track(after: 5, trackEnded: true)!))
        let shuffledNext = state.track(after: state.queue.index, trackEnded: true)!
        _ = state.apply(.userShuffle(on: false, seed: 0))
        #expect(state.apply(.heardTrack(index: shuffledNext)) == [])
        #expect(state.queue.index == shuffledNext && state.shuffle == nil)
    }

    @Test("Shuffle on keeps the current track playing and orders the rest; off returns to the queue's order")
    func shuffleOnAndOff() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 8, index: 3)
        #expect(state.apply(.userShuffle(on: true, seed: 42)) == [])
        #expect(state.isPlaying && state.queue.index == 3)
        let order = state.playOrder
        #expect(order.first == 3)
        #expect(order.sorted() == Array(0..<8))
        // A second `on` keeps the order the listener is in.
        #expect(state.apply(.userShuffle(on: true, seed: 7)) == [])
        #expect(state.playOrder == order)
        #expect(state.apply(.userNext) == [.playTrack(index: order[1])])
        #expect(state.apply(.userPrevious) == [.playTrack(index: 3)])
        #expect(state.apply(.userShuffle(on: false, seed: 0)) == [])
        #expect(state.shuffle == nil && state.playOrder == Array(0..<8))
        #expect(state.track(after: 3, trackEnded: true) == 4)
    }

    @Test("The same seed gives the same order; another seed another")
    func shuffleIsDeterministic() {
        func order(seed: UInt64) -> [Int] {
            var state = Given.stopped
            state.queue = QueueCursor(trackCount: 20, index: 0)
            _ = state.apply(.userShuffle(on: true, seed: seed))
            return state.playOrder
        }
        #expect(order(seed: 1) == order(seed: 1))
        #expect(order(seed: 1) != order(seed: 2))
    }

    @Test("Each track once per round, rounds after rounds under repeat queue, never the same track back to back")
    func eachTrackOncePerRound() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 7, index: 0)
        _ = state.apply(.userRepeat(.queue))
        _ = state.apply(.userShuffle(on: true, seed: 2026))
        var heard = [state.queue.index]
        for _ in 0..<(7 * 5 - 1) {
            // What the decoder joins at the boundary is what the listener then hears.
            let next = state.track(after: state.queue.index, trackEnded: true)
            #expect(next != nil)
            guard let next else { return }
            #expect(state.apply(.heardTrack(index: next)) == [])
            #expect(state.queue.index == next)
            heard.append(next)
        }
        for round in 0..<5 {
            #expect(heard[(round * 7)..<(round * 7 + 7)].sorted() == Array(0..<7), "round \(round)")
        }
        #expect(zip(heard, heard.dropFirst()).allSatisfy { $0 != $1 })
        // Rounds differ: the generator moves on.
        #expect(Array(heard[0..<7]) != Array(heard[7..<14]))
    }

    @Test("Without repeat, a shuffled queue plays each track once, stops, and the next play draws a new round")
    func shuffledQueueEnds() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 5, index: 0)
        _ = state.apply(.userShuffle(on: true, seed: 9))
        var heard = [state.queue.index]
        while let next = state.track(after: state.queue.index, trackEnded: true) {
            _ = state.apply(.heardTrack(index: next))
            heard.append(next)
        }
        #expect(heard.sorted() == Array(0..<5))
        #expect(state.apply(.queuePlayedOut) == [.cork])
        #expect(state.playback == .stopped)
        #expect(state.playOrder.sorted() == Array(0..<5) && state.queue.index == state.playOrder[0])
    }

    @Test("Added tracks take places among the tracks still to play, never among those played")
    func additionsGoIntoTheRemainingOrder() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 6, index: 0)
        _ = state.apply(.userShuffle(on: true, seed: 5))
        for _ in 0..<3 { _ = state.apply(.heardTrack(index: state.track(after: state.queue.index, trackEnded: true)!)) }
        let before = state.playOrder
        let played = Array(before[0...3])
        #expect(state.apply(.queueExtended(trackCount: 10)) == [])
        let after = state.playOrder
        #expect(after.sorted() == Array(0..<10))
        #expect(Array(after[0...3]) == played)
        #expect(Set(after[4...]) == Set(before[4...]).union(6..<10))
        // What was still to play keeps its own order among the additions.
        #expect(after[4...].filter { $0 < 6 } == Array(before[4...]))
    }

    @Test("The tables handed to the decoder agree with track(after:) for every track, mode and shuffle")
    func tablesAgreeWithTrackAfter() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 6, index: 2)
        for shuffled in [false, true] {
            _ = state.apply(.userShuffle(on: shuffled, seed: 11))
            for mode in RepeatMode.allCases {
                _ = state.apply(.userRepeat(mode))
                for ended in [true, false] {
                    let table = state.followingTracks(trackEnded: ended)
                    #expect(table == (0..<6).map { state.track(after: $0, trackEnded: ended) }, "\(mode) \(ended)")
                }
            }
        }
    }

    @Test("Repeat off and no shuffle is the queue's own order: each track followed by the next, none after the last")
    func queueOrderNeedsNoTables() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 5, index: 1)
        #expect(state.followsQueueOrder)
        // What the decoder does with empty tables (TrackSuccessors): the next index, the end after the last.
        for ended in [true, false] {
            #expect((0..<5).map { state.track(after: $0, trackEnded: ended) } == [1, 2, 3, 4, nil])
        }
        #expect(state.track(before: 0) == 0 && state.track(before: 3) == 2)
        for mode in [RepeatMode.track, .queue] {
            _ = state.apply(.userRepeat(mode))
            #expect(!state.followsQueueOrder, "\(mode)")
        }
        _ = state.apply(.userRepeat(.off))
        _ = state.apply(.userShuffle(on: true, seed: 3))
        #expect(!state.followsQueueOrder)
        _ = state.apply(.userShuffle(on: false, seed: 0))
        #expect(state.followsQueueOrder)
    }

    @Test("A saved order and generator restore to the same order and the same future")
    func shuffleSurvivesARestore() {
        var state = Given.playing
        state.queue = QueueCursor(trackCount: 9, index: 4)
        _ = state.apply(.userRepeat(.queue))
        _ = state.apply(.userShuffle(on: true, seed: 77))
        _ = state.apply(.heardTrack(index: state.track(after: 4, trackEnded: true)!))
        // What the service saves: the queue's place, the repeat mode, the order and its generator.
        let saved = state.shuffle
        var restored = PlayerState()
        _ = restored.apply(.queueRestored(trackCount: 9, index: state.queue.index, positionMilliseconds: 0))
        #expect(restored.apply(.playModesRestored(repeat: .queue, shuffle: saved)) == [])
        #expect(restored.playOrder == state.playOrder)
        for _ in 0..<20 {
            let next = state.track(after: state.queue.index, trackEnded: true)!
            #expect(restored.track(after: restored.queue.index, trackEnded: true) == next)
            _ = state.apply(.heardTrack(index: next))
            _ = restored.apply(.heardTrack(index: next))
        }
        #expect(restored.shuffle == state.shuffle && restored.queue == state.queue)
    }

    @Test("A saved order that does not fit the queue is drawn again, keeping the restored track")
    func mismatchedOrderIsRedrawn() {
        var state = PlayerState()
        _ = state.apply(.queueRestored(trackCount: 4, index: 2, positionMilliseconds: 0))
        let broken = ShuffleOrder(order: [0, 0, 1], generator: ShuffleGenerator(seed: 3))
        #expect(state.apply(.playModesRestored(repeat: .track, shuffle: broken)) == [])
        #expect(state.repeatMode == .track)
        #expect(state.playOrder.sorted() == Array(0..<4) && state.playOrder.first == 2)
    }

    @Test("A failed track under repeat track is skipped, not retried: the rules name the next")
    func failedTrackUnderRepeatTrack() {
        var store = RuleStore(Given.playing)
        store.send(.userRepeat(.track), commands: []) {
            $0.repeatMode = .track
            $0.orderChangedAhead = true
        }
        #expect(store.state.track(after: 0, trackEnded: false) == 1)
        store.send(.trackFailed(index: 0, failure: .decodeFailed, failuresInARow: 1),
                   commands: [.skipFailedTrack(failed: 0, next: 1)]) {
            $0.queue.index = 1
            $0.lastFailure = FailedTrack(index: 0, failure: .decodeFailed)
        }
    }
}
