// The user-facing commands and the executor's feedback, beyond the table's rows: each states the whole
// resulting state and the exact commands.
import EarshotCore
import Testing

@Suite("User commands and stream feedback")
struct UserCommandTests {
    @Test("Toggle plays a paused player and pauses a playing one")
    func toggle() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.userToggle, commands: [.uncork]) { $0.playback = .playing }
        store.send(.userToggle, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
    }

    @Test("Toggle while waiting for an interruption to end withdraws the wish to play")
    func toggleWhileWaiting() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: []) {
            $0.interruptions = [Given.call]
        }
        store.send(.userToggle, commands: []) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        store.send(.userToggle, commands: []) {
            $0.playback = .paused(.user)
            $0.resumeIntent = .none
        }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(5)), commands: []) {
            $0.interruptions = []
        }
    }

    @Test("Play on a stopped player during an interruption prepares the track but stays quiet")
    func playStoppedDuringInterruption() {
        var store = RuleStore(Given.stopped)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: []) {
            $0.interruptions = [Given.corkRequest]
        }
        store.send(.userPlay, commands: [.playTrack(index: 0)]) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        store.send(.interruptionEnded(Given.corkRequest, resumeAllowed: true, at: Given.at(9)),
                   commands: [.uncork, .clearServerMute]) {
            $0.playback = .playing
            $0.interruptions = []
            $0.resumeIntent = .none
        }
    }

    @Test("Stop corks a playing player; play then restarts the current track")
    func stop() {
        var store = RuleStore(Given.playing)
        store.send(.userStop, commands: [.fadeOutAndCork]) { $0.playback = .stopped }
        store.send(.userStop, commands: [])
        store.send(.userPlay, commands: [.playTrack(index: 0), .uncork]) { $0.playback = .playing }
    }

    @Test("Next and previous jump within the queue and keep the playback state")
    func nextAndPrevious() {
        var store = RuleStore(Given.playing)
        store.send(.userNext, commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        store.send(.userNext, commands: [.playTrack(index: 2)]) { $0.queue.index = 2 }
        store.send(.userNext, commands: [])
        store.send(.userPrevious, commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        store.send(.userPrevious, commands: [.playTrack(index: 0)]) { $0.queue.index = 0 }
        store.send(.userPrevious, commands: [.playTrack(index: 0)])
    }

    @Test("Next on a stopped player only moves the cursor")
    func nextWhileStopped() {
        var store = RuleStore(Given.stopped)
        store.send(.userNext, commands: []) { $0.queue.index = 1 }
        store.send(.userPlay, commands: [.playTrack(index: 1), .uncork]) { $0.playback = .playing }
    }

    @Test("Seek is passed on while a track is current, clamped at zero, and ignored when stopped or idle")
    func seek() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.userSeek(milliseconds: 30_000), commands: [.seek(milliseconds: 30_000)])
        store.send(.userSeek(milliseconds: -5), commands: [.seek(milliseconds: 0)])
        var stopped = RuleStore(Given.stopped)
        stopped.send(.userSeek(milliseconds: 10), commands: [])
        var idle = RuleStore(Given.idle)
        idle.send(.userSeek(milliseconds: 10), commands: [])
    }

    @Test("Volume is clamped to 0...150 percent")
    func volume() {
        var store = RuleStore(Given.playing)
        store.send(.userVolume(percent: 50), commands: [.setVolume(percent: 50)]) { $0.volumePercent = 50 }
        store.send(.userVolume(percent: 400), commands: [.setVolume(percent: 150)]) { $0.volumePercent = 150 }
        store.send(.userVolume(percent: -1), commands: [.setVolume(percent: 0)]) { $0.volumePercent = 0 }
    }

    @Test("A new queue never starts by itself, but a playing player carries on with it; the decoder always moves to it")
    func replaceQueue() {
        // Never the executor's own move: the decoder is cued at the new queue's track (or lets go of the old queue).
        var idle = RuleStore(Given.idle)
        idle.send(.queueReplaced(trackCount: 4, startIndex: 2), commands: [.cue(index: 2, milliseconds: 0)]) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 4, index: 2)
        }
        var paused = RuleStore(Given.pausedByUser)
        paused.send(.queueReplaced(trackCount: 2, startIndex: 0), commands: [.cue(index: 0, milliseconds: 0)]) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        var playing = RuleStore(Given.playing)
        playing.send(.queueReplaced(trackCount: 5, startIndex: 9), commands: [.playTrack(index: 4)]) {
            $0.queue = QueueCursor(trackCount: 5, index: 4)
        }
        playing.send(.queueReplaced(trackCount: 0, startIndex: 0), commands: [.cork, .cue(index: 0, milliseconds: 0)]) {
            $0.playback = .idle
            $0.queue = .empty
        }
    }

    @Test("A stopping service corks an open stream and closes it, whatever it was doing; the playback is kept")
    func serviceStopping() {
        var playing = RuleStore(Given.playing)
        playing.send(.serviceStopping, commands: [.cork, .closeStream]) {
            $0.stream = StreamCondition(isOpen: false, isCorked: true)
        }
        var paused = RuleStore(Given.pausedByUser)
        paused.send(.serviceStopping, commands: [.cork, .closeStream]) {
            $0.stream = StreamCondition(isOpen: false, isCorked: true)
        }
        // No stream the rules know of (one may be opening): it is closed all the same.
        var idle = RuleStore(PlayerState(stream: StreamCondition(isOpen: false, isCorked: true)))
        idle.send(.serviceStopping, commands: [.closeStream])
    }

    @Test("A restored queue waits, paused, for the user; play then uncorks at the saved position")
    func restoredQueue() {
        var store = RuleStore(Given.idle)
        store.send(.queueRestored(trackCount: 3, index: 2, positionMilliseconds: 83_250),
                   commands: [.cue(index: 2, milliseconds: 83_250)]) {
            $0.playback = .paused(.restored)
            $0.queue = QueueCursor(trackCount: 3, index: 2)
        }
        store.send(.outputAppeared, commands: [])
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: []) { $0.interruptions = [Given.call] }
        store.send(.interruptionEnded(Given.call, resumeAllowed: true, at: Given.at(9)), commands: []) {
            $0.interruptions = []
        }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        // Only a fresh player restores; a bad index restores nothing.
        store.send(.queueRestored(trackCount: 1, index: 0, positionMilliseconds: 0), commands: [])
        var idle = RuleStore(Given.idle)
        idle.send(.queueRestored(trackCount: 2, index: 5, positionMilliseconds: 0), commands: [])
    }

    @Test("Adding tracks grows the queue; an idle player becomes stopped, never playing")
    func extendQueue() {
        var idle = RuleStore(Given.idle)
        idle.send(.queueExtended(trackCount: 2), commands: []) {
            $0.playback = .stopped
            $0.queue = QueueCursor(trackCount: 2, index: 0)
        }
        var playing = RuleStore(Given.playing)
        playing.send(.queueExtended(trackCount: 5), commands: []) { $0.queue.trackCount = 5 }
        playing.send(.queueExtended(trackCount: 4), commands: [])
    }

    @Test("Idle ignores play, pause, stop, next and previous")
    func idleIgnoresTransport() {
        var store = RuleStore(Given.idle)
        for event in [Event.userPlay, .userPause, .userToggle, .userStop, .userNext, .userPrevious] {
            store.send(event, commands: [])
        }
    }

    @Test("Stream feedback records what the server really did")
    func streamFeedback() {
        var store = RuleStore(Given.pausedByUser)
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        #expect(store.state.stream.isCorked, "the reducer's wish is not the stream's fact")
        store.send(.streamUncorked, commands: []) { $0.stream.isCorked = false }
        store.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        store.send(.streamCorked, commands: []) { $0.stream.isCorked = true }
    }

    @Test("A failed output command while playing is an output loss, and the stream that failed it is closed")
    func commandFailure() {
        var store = RuleStore(Given.playing)
        store.send(.outputCommandFailed, commands: [.closeStream, .cork, .flush]) {
            $0.playback = .paused(.outputLost(.streamFailed))
            $0.stream.isOpen = false
        }
        store.send(.streamOpened, commands: []) { $0.stream = .openCorked }
        store.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
    }

    @Test("Status names are the ones the control protocol promises")
    func names() {
        #expect(Playback.paused(.outputLost(.deviceRemoved)).name == "paused")
        #expect(PauseReason.outputLost(.serverLost).description == "outputLost")
        #expect(Playback.paused(.interruption).description == "paused(interruption)")
        #expect(Event.interruptionBegan(.triggerStream(index: 4), at: Given.at(0)).description
            == "interruptionBegan(stream#4)")
    }
}
