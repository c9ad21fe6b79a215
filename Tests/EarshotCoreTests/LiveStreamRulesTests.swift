// Rows 24 and 30-33 of shared/RULES.md: a live stream (internet radio) in the rules. Each test states the whole
// resulting state and the exact commands, and fails without its row's rule.
import EarshotCore
import Testing

@Suite("RULES.md rows 24 and 30-33: live streams")
struct LiveStreamRulesTests {
    /// Playing the first of three tracks, which the decoder reported live.
    static var playingLive: PlayerState {
        var state = Given.playing
        state.live = LiveStream(index: 0)
        return state
    }

    @Test("Row 30: the decoder reports a live stream -> the rules know it; again at the same index keeps its buffer")
    func row30LiveStreamStarted() {
        var store = RuleStore(Given.playing)
        store.send(.liveStreamStarted(index: 0), commands: []) { $0.live = LiveStream(index: 0) }
        #expect(store.state.isOnLiveStream)
        // Paused, the buffer overflowed; the same fetch opened again after a reposition keeps that.
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.liveBufferOverflowed(index: 0), commands: []) { $0.live?.bufferOverflowed = true }
        store.send(.liveStreamStarted(index: 0), commands: [])
        // A stream decoded ahead (the next track) is known, but the listener is not on it.
        store.send(.liveStreamStarted(index: 1), commands: []) { $0.live = LiveStream(index: 1) }
        #expect(!store.state.isOnLiveStream)
        // A new queue forgets it; an idle player or a track out of the queue is no stream (rule 15).
        store.send(.queueReplaced(trackCount: 2, startIndex: 0), commands: [.cue(index: 0, milliseconds: 0)]) {
            $0.live = nil
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        store.send(.liveStreamStarted(index: 5), commands: [])
        var idle = RuleStore(Given.idle)
        idle.send(.liveStreamStarted(index: 0), commands: [])
    }

    @Test("Row 30: a queue edit moves the live stream with its track, and forgets it when the track is deleted")
    func row30QueueEditFollowsTheStream() {
        var state = Given.pausedByUser
        state.live = LiveStream(index: 0, bufferOverflowed: true)
        var store = RuleStore(state)
        store.send(.queueEdited(.swap(first: 0, second: 2)), commands: [.requeue(index: 2)]) {
            $0.queue.index = 2
            $0.live = LiveStream(index: 2, bufferOverflowed: true)
        }
        // The stream deleted (the queue's last track): the queue's end, and no live stream any more.
        store.send(.queueEdited(.delete(start: 2, end: 3)), commands: [.cue(index: 0, milliseconds: 0)]) {
            $0.live = nil
            $0.queue = QueueCursor(trackCount: 2, index: 0)
            $0.playback = .stopped
        }
    }

    @Test("Row 32: the cursor leaving the live stream forgets its overflow: a return opens it afresh, at live")
    func row32LeavingForgetsTheOverflow() {
        var state = Given.pausedByUser
        state.live = LiveStream(index: 0, bufferOverflowed: true)
        var store = RuleStore(state)
        store.send(.userNext, commands: [.playTrack(index: 1)]) {
            $0.queue.index = 1
            $0.live?.bufferOverflowed = false
        }
        store.send(.userPrevious, commands: [.playTrack(index: 0)]) { $0.queue.index = 0 }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Row 31: a seek in a live stream is refused with its reason; forward is a jump to live")
    func row31SeekRefused() {
        var store = RuleStore(Self.playingLive)
        store.send(.userSeek(milliseconds: 2_000), commands: [.refuse(.seekInLiveStream)])
        store.send(.userSeekBy(offsetMilliseconds: -5_000, fromMilliseconds: 9_000, trackLengthMilliseconds: nil),
                   commands: [.refuse(.seekInLiveStream)])
        store.send(.userSeekBy(offsetMilliseconds: 5_000, fromMilliseconds: 9_000, trackLengthMilliseconds: nil),
                   commands: [.rejoinLive(.userAsked)])
        #expect(Refusal.seekInLiveStream.explanation.contains("live stream"))
        // Not on the live stream (it is the next track): an ordinary seek.
        var file = Self.playingLive
        file.live = LiveStream(index: 1)
        var other = RuleStore(file)
        other.send(.userSeek(milliseconds: 2_000), commands: [.seek(milliseconds: 2_000)])
    }

    @Test("Row 24: paused for a call, an unplug or the user, the stream's buffer holds; the resume continues")
    func row24PauseKeepsTheShow() {
        // The user's pause and play: a cork and an uncork, no flush, no rejoin.
        var user = RuleStore(Self.playingLive)
        user.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        user.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        // A call: the same.
        var call = RuleStore(Self.playingLive)
        call.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        call.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(60_000)),
                  commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
        // An unplug: corked, but not flushed (a live stream cannot decode again from the frame heard; the flush would
        // drop what the ring holds of the show), also when the stream died with the server.
        for reason in [OutputLossReason.portUnplugged, .deviceRemoved, .serverLost] {
            var unplug = RuleStore(Self.playingLive)
            unplug.send(.outputLost(reason), commands: [.cork]) {
                $0.playback = .paused(.outputLost(reason))
                if reason == .serverLost { $0.stream.isOpen = false }
            }
        }
        var died = Self.playingLive
        died.playback = .paused(.user)
        var paused = RuleStore(died)
        paused.send(.outputLost(.streamFailed), commands: []) { $0.stream.isOpen = false }
    }

    @Test("Row 32: the buffer overflowed while paused -> the resume rejoins live first, and says why")
    func row32OverflowRejoinsLive() {
        var store = RuleStore(Self.playingLive)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: [.fadeOutAndCork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.call]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        store.send(.liveBufferOverflowed(index: 0), commands: []) { $0.live?.bufferOverflowed = true }
        // A report for another track (one decoded ahead, a stale one) changes nothing (rule 15).
        store.send(.liveBufferOverflowed(index: 1), commands: [])
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(60_000)),
                   commands: [.rejoinLive(.bufferOverflowed), .uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
            $0.live?.bufferOverflowed = false
        }
        // Playing, an overflow concerns no pause: nothing to remember.
        store.send(.liveBufferOverflowed(index: 0), commands: [])
        // The user's pause and play: the same.
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.liveBufferOverflowed(index: 0), commands: []) { $0.live?.bufferOverflowed = true }
        store.send(.userPlay, commands: [.rejoinLive(.bufferOverflowed), .uncork]) {
            $0.playback = .playing
            $0.live?.bufferOverflowed = false
        }
    }

    @Test("Row 33: `earshot live` jumps to live, playing or paused; refused when the track is not live")
    func row33JumpToLive() {
        var store = RuleStore(Self.playingLive)
        store.send(.userJumpToLive, commands: [.rejoinLive(.userAsked)])
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.liveBufferOverflowed(index: 0), commands: []) { $0.live?.bufferOverflowed = true }
        // Paused: the buffer goes now, the player stays paused, and the play after needs no second rejoin.
        store.send(.userJumpToLive, commands: [.rejoinLive(.userAsked)]) { $0.live?.bufferOverflowed = false }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        for start in [Given.playing, Given.stopped, Given.idle] {
            var notLive = RuleStore(start)
            notLive.send(.userJumpToLive, commands: [.refuse(.notLive)])
        }
    }

    @Test("Row 34: a stopped live stream played again starts at live, in place of the track's restart")
    func row34StoppedStreamRestartsAtLive() {
        var store = RuleStore(Self.playingLive)
        store.send(.userStop, commands: [.fadeOutAndCork]) { $0.playback = .stopped }
        // An overflow while stopped needs no second rejoin.
        store.send(.liveBufferOverflowed(index: 0), commands: []) { $0.live?.bufferOverflowed = true }
        store.send(.userPlay, commands: [.rejoinLive(.restarted), .uncork]) {
            $0.playback = .playing
            $0.live?.bufferOverflowed = false
        }
        // A stopped file restarts from its beginning, as ever.
        var file = RuleStore(Given.stopped)
        file.send(.userPlay, commands: [.playTrack(index: 0), .uncork]) { $0.playback = .playing }
    }
}
