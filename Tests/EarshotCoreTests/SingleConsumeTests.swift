// Single and consume (rules 35-37 of shared/RULES.md): single stops the player after a track, at the track the order
// names next (with repeat on, `single on` plays the track again); `oneshot` stops after the current track once and
// returns to off; consume takes a track out of the queue once the listener left it, by playing on or by `next`.
import EarshotCore
import Testing

@Suite("Single and consume")
struct SingleConsumeTests {
    /// A player playing the first of three tracks with `single` set (`orderChangedAhead` as the choice leaves it).
    static func playing(single: SingleMode, repeat mode: RepeatMode = .off, consume: Bool = false) -> PlayerState {
        var state = Given.playing
        state.single = single
        state.repeatMode = mode
        state.consume = consume
        return state
    }

    @Test("Rule 35: single on stops after each track, at the next one, which the user's play starts")
    func singleOnStopsAfterEachTrack() {
        var store = RuleStore(Given.playing)
        store.send(.userSingle(.on), commands: []) {
            $0.single = .on
            $0.orderChangedAhead = true
        }
        // The decoder joins nothing to any track: each one's end is the queue's end for it.
        #expect(store.state.track(after: 0, trackEnded: true) == nil)
        #expect(store.state.followingTracks(trackEnded: true) == [nil, nil, nil])
        #expect(!store.state.followsQueueOrder)
        // Next still moves on, as under repeat.
        #expect(store.state.track(after: 0, trackEnded: false) == 1)
        store.send(.tailHandedOver(.queueEnd), commands: [.drain(.queueEnd)])
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 1
            $0.orderChangedAhead = false
        }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
        store.send(.userPlay, commands: [.playTrack(index: 1), .uncork]) { $0.playback = .playing }
        store.send(.streamUncorked, commands: []) { $0.stream.isCorked = false }
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 2
        }
        // After the last track it is the queue's end: stopped at the start, as without single.
        store.send(.userPlay, commands: [.playTrack(index: 2), .uncork]) { $0.playback = .playing }
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 0
        }
        #expect(store.state.single == .on)
    }

    @Test("Rule 35: single on with repeat plays the track again (MPD's single with repeat); next moves on")
    func singleWithRepeatRepeatsTheTrack() {
        var store = RuleStore(Self.playing(single: .on, repeat: .queue))
        #expect(store.state.track(after: 0, trackEnded: true) == 0)
        #expect(store.state.followingTracks(trackEnded: true) == [0, 1, 2])
        store.send(.heardTrack(index: 0), commands: [])
        store.send(.userNext, commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        // Single off again: the queue's repeat as before.
        store.send(.userSingle(.off), commands: []) {
            $0.single = .off
            $0.orderChangedAhead = true
        }
        #expect(store.state.track(after: 2, trackEnded: true) == 0)
        #expect(store.state.track(after: 1, trackEnded: true) == 2)
    }

    @Test("Rule 36: oneshot stops after the current track only, then single is off again, even under repeat track")
    func oneshotStopsOnce() {
        var store = RuleStore(Self.playing(single: .oneshot, repeat: .track))
        #expect(store.state.track(after: 0, trackEnded: true) == nil)
        // Only the current track's end stops the decoder; the others follow the order (here, themselves).
        #expect(store.state.followingTracks(trackEnded: true) == [nil, 1, 2])
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 1
            $0.single = .off
        }
        #expect(store.state.track(after: 1, trackEnded: true) == 1)
    }

    @Test("Rule 36: a track the decoder had joined before the oneshot is heard, and the oneshot waits for its end")
    func oneshotAfterAJoinedTrack() {
        var store = RuleStore(Given.playing)
        store.send(.userSingle(.oneshot), commands: []) {
            $0.single = .oneshot
            $0.orderChangedAhead = true
        }
        store.send(.heardTrack(index: 1), commands: []) { $0.queue.index = 1 }
        #expect(store.state.followingTracks(trackEnded: true) == [1, nil, nil])
        store.send(.queuePlayedOut, commands: [.cork]) {
            $0.playback = .stopped
            $0.queue.index = 2
            $0.single = .off
            $0.orderChangedAhead = false
        }
    }

    @Test("Rule 37: consume removes the track the listener left by playing on, and the decoder takes the new queue")
    func consumeOnTrackEnd() {
        var store = RuleStore(Given.playing)
        store.send(.userConsume(true), commands: []) { $0.consume = true }
        store.send(.heardTrack(index: 1), commands: [.removeTrack(index: 0), .requeue(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        store.send(.heardTrack(index: 1), commands: [.removeTrack(index: 0), .requeue(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 1, index: 0)
        }
        // The last track played out: it goes too, and the player is idle with an empty queue (MPD's end of queue).
        store.send(.queuePlayedOut, commands: [.cork, .removeTrack(index: 0), .cue(index: 0, milliseconds: 0)]) {
            $0.playback = .idle
            $0.queue = .empty
        }
    }

    @Test("Rule 37: next removes the skipped track and plays the next without it; previous and a chosen track do not")
    func consumeOnNext() {
        var store = RuleStore(Self.playing(single: .off, consume: true))
        store.send(.userNext, commands: [.removeTrack(index: 0), .playTrack(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        store.send(.userNext, commands: [.removeTrack(index: 0), .playTrack(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 1, index: 0)
        }
        // Nowhere to go: nothing is removed.
        store.send(.userNext, commands: [])
        var longer = RuleStore(Self.playing(single: .off, consume: true))
        longer.send(.userPlayTrack(index: 2), commands: [.playTrack(index: 2)]) { $0.queue.index = 2 }
        longer.send(.userPrevious, commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        // A stopped player's next only moves the cursor: nothing was played.
        longer.send(.userStop, commands: [.fadeOutAndCork]) { $0.playback = .stopped }
        longer.send(.userNext, commands: []) { $0.queue.index = 2 }
    }

    @Test("Rule 37: the queue's last track played out leaves it; a shuffled order closes up behind a removed track")
    func consumeAtTheEndAndUnderShuffle() {
        var last = PlayerState(playback: .playing, queue: QueueCursor(trackCount: 3, index: 2),
                               stream: StreamCondition(isOpen: true, isCorked: false))
        last.consume = true
        var store = RuleStore(last)
        store.send(.queuePlayedOut, commands: [.cork, .removeTrack(index: 2)]) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        var shuffled = Self.playing(single: .off, consume: true)
        shuffled.shuffle = ShuffleOrder(order: [2, 0, 1], generator: ShuffleGenerator(seed: 3))
        shuffled.queue.index = 2
        var order = RuleStore(shuffled)
        order.send(.heardTrack(index: 0), commands: [.removeTrack(index: 2), .requeue(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 0)
            $0.shuffle?.order = [0, 1]
        }
        #expect(order.state.shuffle?.isPermutation(ofTrackCount: 2) == true)
    }

    @Test("Rules 35 and 37 together: the track stopped after leaves the queue, the cursor at the one after it")
    func singleAndConsume() {
        var store = RuleStore(Self.playing(single: .on, consume: true))
        store.send(.queuePlayedOut, commands: [.cork, .removeTrack(index: 0)]) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
    }

    @Test("Single and consume are choices: they change no playback, and a restore brings them back")
    func choicesAndRestore() {
        var store = RuleStore(Given.stopped)
        store.send(.userSingle(.oneshot), commands: []) {
            $0.single = .oneshot
            $0.orderChangedAhead = true
        }
        store.send(.userConsume(true), commands: []) { $0.consume = true }
        var fresh = RuleStore(Given.idle)
        fresh.send(.playModesRestored(repeat: .off, shuffle: nil, single: .on, consume: true), commands: []) {
            $0.single = .on
            $0.consume = true
        }
    }
}
