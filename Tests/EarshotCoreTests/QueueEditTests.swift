// Rule 25 (shared/RULES.md): the queue edited in place (MPD's delete, move, swap, insert at a position, shuffle of a
// range) and a track chosen to play (MPD's `play POSITION`). The current track plays on wherever it goes; a deleted
// one gives way to the track at its place, or to the queue's end; a chosen track is the user's play, which a call
// holds back (rule 9).
import EarshotCore
import Testing

@Suite("Queue edits")
struct QueueEditTests {
    @Test("Each edit's arrangement: where every track goes, nil for an inserted one, nil for an edit that does not fit")
    func arrangements() {
        #expect(QueueEdit.delete(start: 1, end: 3).arrangement(ofTrackCount: 4) == [0, 3])
        #expect(QueueEdit.move(start: 0, end: 2, to: 2).arrangement(ofTrackCount: 4) == [2, 3, 0, 1])
        #expect(QueueEdit.move(start: 3, end: 4, to: 0).arrangement(ofTrackCount: 4) == [3, 0, 1, 2])
        #expect(QueueEdit.swap(first: 0, second: 2).arrangement(ofTrackCount: 3) == [2, 1, 0])
        #expect(QueueEdit.insert(count: 2, at: 1).arrangement(ofTrackCount: 2) == [0, nil, nil, 1])
        #expect(QueueEdit.insert(count: 1, at: 2).arrangement(ofTrackCount: 2) == [0, 1, nil])
        let shuffled = QueueEdit.shuffle(start: 1, end: 4, seed: 7).arrangement(ofTrackCount: 5)
        #expect(shuffled?.first == 0 && shuffled?.last == 4)
        #expect(Set((shuffled ?? []).compactMap { $0 }) == Set(0..<5))
        // Out of the queue, empty, or landing past the end: refused.
        #expect(QueueEdit.delete(start: 2, end: 2).arrangement(ofTrackCount: 4) == nil)
        #expect(QueueEdit.delete(start: 3, end: 5).arrangement(ofTrackCount: 4) == nil)
        #expect(QueueEdit.move(start: 0, end: 2, to: 3).arrangement(ofTrackCount: 4) == nil)
        #expect(QueueEdit.swap(first: 0, second: 4).arrangement(ofTrackCount: 4) == nil)
        #expect(QueueEdit.insert(count: 1, at: 5).arrangement(ofTrackCount: 4) == nil)
        #expect(QueueEdit.insert(count: 0, at: 0).arrangement(ofTrackCount: 4) == nil)
    }

    @Test("Rule 25: the current track moved plays on at its new place: the decoder takes the edited queue from there")
    func currentTrackMoved() {
        var store = RuleStore(Given.playing)
        store.send(.queueEdited(.move(start: 0, end: 1, to: 2)), commands: [.requeue(index: 2)]) {
            $0.queue.index = 2
        }
        // Tracks before it deleted: it plays on, earlier in the queue.
        store.send(.queueEdited(.delete(start: 0, end: 1)), commands: [.requeue(index: 1)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 1)
        }
        // Tracks inserted before it.
        store.send(.queueEdited(.insert(count: 2, at: 0)), commands: [.requeue(index: 3)]) {
            $0.queue = QueueCursor(trackCount: 4, index: 3)
        }
    }

    @Test("Rule 25: the current track deleted while playing: the track at its place plays; the last: stopped, quiet")
    func currentTrackDeleted() {
        var store = RuleStore(Given.playing)
        store.send(.queueEdited(.delete(start: 0, end: 1)), commands: [.playTrack(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        store.send(.heardTrack(index: 1), commands: []) { $0.queue.index = 1 }
        store.send(.queueEdited(.delete(start: 1, end: 2)), commands: [.cork, .cue(index: 0, milliseconds: 0)]) {
            $0.queue = QueueCursor(trackCount: 1, index: 0)
            $0.playback = .stopped
        }
        store.send(.queueEdited(.delete(start: 0, end: 1)), commands: [.cue(index: 0, milliseconds: 0)]) {
            $0.queue = .empty
            $0.playback = .idle
        }
    }

    @Test("Rule 25: an edit during a call never sounds: the player stays paused for it, the resume still waits")
    func editDuringCall() {
        var state = Given.playing
        _ = state.apply(.interruptionBegan(Given.call, at: Given.at(0)))
        var store = RuleStore(state)
        store.send(.queueEdited(.delete(start: 0, end: 1)), commands: [.playTrack(index: 0)]) {
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        store.send(.queueEdited(.swap(first: 0, second: 1)), commands: [.requeue(index: 1)]) { $0.queue.index = 1 }
        #expect(store.state.playback == .paused(.interruption))
        // Choosing a track during the call is the user's play: it waits for the call's end (rule 9).
        store.send(.userPlayTrack(index: 0), commands: [.playTrack(index: 0)]) {
            $0.queue.index = 0
            $0.resumeIntent = .userAskedToPlay
        }
    }

    @Test("Rule 25: a stopped player's edit cues the decoder; an idle player's insertion is a first queue")
    func stoppedAndIdle() {
        var store = RuleStore(Given.stopped)
        store.send(.queueEdited(.move(start: 0, end: 1, to: 1)), commands: [.cue(index: 1, milliseconds: 0)]) {
            $0.queue.index = 1
        }
        var idle = RuleStore(Given.idle)
        idle.send(.queueEdited(.delete(start: 0, end: 1)), commands: [])
        idle.send(.queueEdited(.insert(count: 2, at: 0)), commands: []) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        // An edit that does not fit changes nothing (rule 15).
        idle.send(.queueEdited(.delete(start: 5, end: 6)), commands: [])
    }

    @Test("Rule 25: a chosen track plays from its beginning: stopped, paused by the user, or playing")
    func chosenTrack() {
        var stopped = RuleStore(Given.stopped)
        stopped.send(.userPlayTrack(index: 2), commands: [.playTrack(index: 2), .uncork]) {
            $0.queue.index = 2
            $0.playback = .playing
        }
        var paused = RuleStore(Given.pausedByUser)
        paused.send(.userPlayTrack(index: 1), commands: [.playTrack(index: 1), .uncork]) {
            $0.queue.index = 1
            $0.playback = .playing
        }
        var playing = RuleStore(Given.playing)
        playing.send(.userPlayTrack(index: 0), commands: [.playTrack(index: 0)])
        // Past the queue: nothing (rule 15).
        playing.send(.userPlayTrack(index: 3), commands: [])
    }

    @Test("Rule 25 under shuffle: an edit draws a new round with the current track first")
    func shuffleRedrawn() {
        var state = Given.playing
        _ = state.apply(.userShuffle(on: true, seed: 42))
        _ = state.apply(.queueEdited(.insert(count: 2, at: 3)))
        #expect(state.queue == QueueCursor(trackCount: 5, index: 0))
        #expect(state.shuffle?.order.first == 0)
        #expect(state.shuffle?.isPermutation(ofTrackCount: 5) == true)
    }
}
