// The rules for what the executor reports about its commands (OutputOutcomes.swift): decisions the executor used to
// make on its own (closing a stream that refused a cork, falling back to the default sink, inventing the end of a
// cork request, dropping a refused setting, opening a stream nobody asked for). Each test states the whole result.
import EarshotCore
import Testing

@Suite("The executor's outcomes, decided by the rules")
struct OutputOutcomeTests {
    @Test("Rule 10: a refused cork or uncork while playing -> the stream is closed, paused (outputLost), cork, flush")
    func refusedCommandWhilePlayingClosesTheStream() {
        var store = RuleStore(Given.playing)
        store.send(.outputCommandFailed, commands: [.closeStream, .cork, .flush]) {
            $0.playback = .paused(.outputLost(.streamFailed))
            $0.stream.isOpen = false
        }
        // Rule 8: the next play opens a new stream, and its opening brings the uncork.
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
    }

    @Test("Rule 10: a refused cork while paused -> closed, and decoding continues from the frame heard (flush)")
    func refusedCommandWhilePausedClosesAndFlushes() {
        var store = RuleStore(Given.pausedByUser)
        // The user's pause stays the reason: the output loss changes nothing about a player the user paused.
        store.send(.outputCommandFailed, commands: [.closeStream, .flush]) { $0.stream.isOpen = false }
        // A report about a stream already closed closes nothing more and flushes nothing.
        store.send(.outputCommandFailed, commands: [.closeStream])
    }

    @Test("Rule 10: a stream that failed to open while none was open -> closed (nothing to), paused, no flush")
    func failedOpenWhilePlaying() {
        var store = RuleStore(Given.stopped)
        store.send(.streamClosed, commands: []) { $0.stream.isOpen = false }
        store.send(.userPlay, commands: [.openStream, .playTrack(index: 0)]) { $0.playback = .playing }
        store.send(.outputCommandFailed, commands: [.closeStream, .cork, .flush]) {
            $0.playback = .paused(.outputLost(.streamFailed))
        }
    }

    @Test("Rule 8: the configured sink refused the stream while a play waits for it -> open on the default sink")
    func configuredSinkRefusedFallsBackToTheDefault() {
        var store = RuleStore(Given.stopped)
        store.send(.streamClosed, commands: []) { $0.stream.isOpen = false }
        store.send(.userPlay, commands: [.openStream, .playTrack(index: 0)]) { $0.playback = .playing }
        store.send(.configuredSinkRefused, commands: [.openStreamOnDefaultSink])
        store.send(.streamOpened, commands: [.uncork]) { $0.stream = .openCorked }
        // Once a stream is open, a late refusal is stale (rule 15).
        store.send(.configuredSinkRefused, commands: [])
    }

    @Test("Rule 9: a play waiting for a call to end falls back to the default sink too")
    func configuredSinkRefusedWhileWaiting() {
        var state = Given.pausedByUser
        state.stream.isOpen = false
        var store = RuleStore(state)
        store.send(.interruptionBegan(Given.call, at: Given.at(0)), commands: []) { $0.interruptions = [Given.call] }
        store.send(.userPlay, commands: [.openStream]) {
            $0.playback = .paused(.interruption)
            $0.resumeIntent = .userAskedToPlay
        }
        store.send(.configuredSinkRefused, commands: [.openStreamOnDefaultSink])
    }

    @Test("Rule 8: the configured sink refused while no play wants a stream -> nothing; the next play asks again")
    func configuredSinkRefusedWhileNotWanted() {
        var state = Given.pausedByUser
        state.stream.isOpen = false
        var store = RuleStore(state)
        store.send(.configuredSinkRefused, commands: [])
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
    }

    @Test("Rule 10: the server lost during its own cork request -> the request ends with it, nothing to resume")
    func serverLostEndsItsCorkRequest() {
        var store = RuleStore(Given.playing)
        store.send(.interruptionBegan(Given.corkRequest, at: Given.at(0)), commands: [.cork]) {
            $0.playback = .paused(.interruption)
            $0.interruptions = [Given.corkRequest]
            $0.resumeIntent = .afterInterruption(since: Given.at(0))
        }
        // The stream died with the server: decoding continues from the frame heard (flush).
        store.send(.outputLost(.serverLost), commands: [.flush]) {
            $0.playback = .paused(.outputLost(.serverLost))
            $0.interruptions = []
            $0.resumeIntent = .none
            $0.stream.isOpen = false
        }
        // A play needs no end of a request that can never come.
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
    }

    @Test("Rule 4: the server lost during its cork request and a phone stream -> only the server's request ends")
    func serverLostKeepsOtherSources() {
        var state = Given.pausedByUser
        state.interruptions = [Given.corkRequest, Given.call]
        var store = RuleStore(state)
        store.send(.outputLost(.serverLost), commands: [.flush]) {
            $0.interruptions = [Given.call]
            $0.stream.isOpen = false
        }
    }

    @Test("Rule 10: the stream dies under a paused player -> decoding continues from the frame heard (flush)")
    func deadStreamWhilePausedRestartsDecoding() {
        for reason in [OutputLossReason.serverLost, .streamFailed] {
            // Paused by the user: still the user's pause, and what the dead stream held is decoded again.
            var store = RuleStore(Given.pausedByUser)
            store.send(.outputLost(reason), commands: [.flush]) { $0.stream.isOpen = false }
            // The executor reports the stream closed as it lets go of it, before the loss: the flush is still due.
            var closedFirst = RuleStore(Given.pausedByUser)
            closedFirst.send(.streamClosed, commands: []) { $0.stream = StreamCondition(isOpen: false, isCorked: true) }
            closedFirst.send(.outputLost(reason), commands: [.flush])
            // Paused by a call: paused for the loss now, and flushed the same way.
            var called = Given.pausedByUser
            called.playback = .paused(.interruption)
            called.interruptions = [Given.call]
            var interrupted = RuleStore(called)
            interrupted.send(.outputLost(reason), commands: [.flush]) {
                $0.playback = .paused(.outputLost(reason))
                $0.stream.isOpen = false
            }
        }
        // A removed device leaves our stream alive (moved, corked): nothing of it died.
        var unplugged = RuleStore(Given.pausedByUser)
        unplugged.send(.outputLost(.deviceRemoved), commands: [])
        // Stopped: nothing is to be resumed from the frame heard.
        var stopped = RuleStore(Given.stopped)
        stopped.send(.outputLost(.serverLost), commands: []) { $0.stream.isOpen = false }
    }

    @Test("Rule 15: a refused unmute or volume -> unchanged, whatever the playback")
    func refusedSettingChangesNothing() {
        for start in [Given.playing, Given.pausedByUser, Given.stopped, Given.idle] {
            var store = RuleStore(start)
            store.send(.outputSettingFailed(.unmute), commands: [])
            store.send(.outputSettingFailed(.volume), commands: [])
        }
    }

    @Test("Rule 8: a new stream gets the user's volume before its uncork")
    func newStreamGetsTheVolume() {
        var state = Given.stopped
        state.stream.isOpen = false
        var store = RuleStore(state)
        store.send(.userVolume(percent: 40), commands: [.setVolume(percent: 40)]) { $0.volumePercent = 40 }
        store.send(.userPlay, commands: [.openStream, .playTrack(index: 0)]) { $0.playback = .playing }
        store.send(.streamOpened, commands: [.setVolume(percent: 40), .uncork]) { $0.stream = .openCorked }
    }

    @Test("Rule 12: a restored queue opens no stream; the play that follows opens one")
    func restoredQueueOpensNoStream() {
        var store = RuleStore(PlayerState(stream: StreamCondition(isOpen: false, isCorked: true)))
        store.send(.queueRestored(trackCount: 3, index: 1, positionMilliseconds: 0),
                   commands: [.cue(index: 1, milliseconds: 0)]) {
            $0.playback = .paused(.restored)
            $0.queue = QueueCursor(trackCount: 3, index: 1)
        }
        store.send(.userPlay, commands: [.openStream]) { $0.playback = .playing }
    }
}

@Suite("The executor's measurements, judged by the rules")
struct OutputMeasurementTests {
    @Test("Rule 10: a silence past the threshold (a second, or three request periods) is a stall; shorter is nothing")
    func stallThreshold() {
        #expect(StallRule.thresholdMilliseconds(requestPeriodMilliseconds: 50) == 1_000)
        #expect(StallRule.thresholdMilliseconds(requestPeriodMilliseconds: 333) == 1_000)
        #expect(StallRule.thresholdMilliseconds(requestPeriodMilliseconds: 400) == 1_200)
        var store = RuleStore(Given.playing)
        store.send(.outputSilent(milliseconds: 1_000, requestPeriodMilliseconds: 50, heardSinceStart: true),
                   commands: [])
        store.send(.outputSilent(milliseconds: 1_200, requestPeriodMilliseconds: 400, heardSinceStart: true),
                   commands: [])
        store.send(.outputSilent(milliseconds: 1_201, requestPeriodMilliseconds: 400, heardSinceStart: true),
                   commands: [.cork, .flush]) { $0.playback = .paused(.outputLost(.stalled)) }
    }

    @Test("Rule 10: a silence before the sink has played since the stream started (a sink still waking) is no stall")
    func noStallBeforeTheSinkPlayed() {
        var store = RuleStore(Given.playing)
        // Far past the threshold, but nothing heard since the uncork, the new stream, the flush or the move: a
        // suspended device or a waking Bluetooth link took the first request's audio and has not started playing.
        store.send(.outputSilent(milliseconds: 5_000, requestPeriodMilliseconds: 50, heardSinceStart: false),
                   commands: [])
        store.send(.outputSilent(milliseconds: 1_601, requestPeriodMilliseconds: 400, heardSinceStart: false),
                   commands: [])
        // Once the sink has played, the same silence is a stall.
        store.send(.outputSilent(milliseconds: 5_000, requestPeriodMilliseconds: 50, heardSinceStart: true),
                   commands: [.cork, .flush]) { $0.playback = .paused(.outputLost(.stalled)) }
    }

    @Test("Rule 13: the tail before a format change or the queue's end is played out while playing, kept otherwise")
    func tailIsDrainedWhilePlaying() {
        var store = RuleStore(Given.playing)
        store.send(.tailHandedOver(.formatChange), commands: [.drain(.formatChange)])
        store.send(.tailHandedOver(.queueEnd), commands: [.drain(.queueEnd)])
        for start in [Given.pausedByUser, Given.stopped, Given.idle] {
            var quiet = RuleStore(start)
            quiet.send(.tailHandedOver(.queueEnd), commands: [])
        }
    }

    @Test("Rule 13: a format change's drain cancelled by a queue addition -> drained again while playing, not paused")
    func cancelledFormatChangeDrainIsDrainedAgain() {
        // The executor withdraws the end of the data for the added tracks, which cancels the drain under way, and
        // reports again that everything before the format change is handed over: the rules play it out again.
        var store = RuleStore(Given.playing)
        store.send(.tailHandedOver(.formatChange), commands: [.drain(.formatChange)])
        store.send(.queueExtended(trackCount: 4), commands: []) { $0.queue.trackCount = 4 }
        store.send(.tailHandedOver(.formatChange), commands: [.drain(.formatChange)])
        store.send(.formatChangeReached, commands: [.switchFormat(reopen: true)])
        // Paused meanwhile (the drain was cancelled by the cork): kept, until the tick reports it again while playing.
        var paused = RuleStore(Given.playing)
        paused.send(.tailHandedOver(.formatChange), commands: [.drain(.formatChange)])
        paused.send(.userPause, commands: [.fadeOutAndCork]) { $0.playback = .paused(.user) }
        paused.send(.queueExtended(trackCount: 4), commands: []) { $0.queue.trackCount = 4 }
        paused.send(.tailHandedOver(.formatChange), commands: [])
        paused.send(.userPlay, commands: [.uncork]) { $0.playback = .playing }
        paused.send(.tailHandedOver(.formatChange), commands: [.drain(.formatChange)])
    }

    @Test("MPRIS Seek: past the track's end -> the next track; within it -> the position, never before the start")
    func seekBy() {
        var store = RuleStore(Given.playing)
        store.send(.userSeekBy(offsetMilliseconds: 10_000, fromMilliseconds: 1_000, trackLengthMilliseconds: 5_000),
                   commands: [.playTrack(index: 1)]) { $0.queue.index = 1 }
        store.send(.userSeekBy(offsetMilliseconds: 2_000, fromMilliseconds: 1_000, trackLengthMilliseconds: 5_000),
                   commands: [.seek(milliseconds: 3_000)])
        store.send(.userSeekBy(offsetMilliseconds: -9_000, fromMilliseconds: 1_000, trackLengthMilliseconds: nil),
                   commands: [.seek(milliseconds: 0)])
        // On the last track there is no next one: nothing.
        store.send(.userNext, commands: [.playTrack(index: 2)]) { $0.queue.index = 2 }
        store.send(.userSeekBy(offsetMilliseconds: 9_000, fromMilliseconds: 0, trackLengthMilliseconds: 5_000),
                   commands: [])
    }
}
