// The rulebook: shared/RULES.md as code. Every row of its table is one branch below, named by its
// number, and has a test of the same name in Tests/EarshotCoreTests/RulesTests.swift.

/// One decision of the rules, as the executor logs it: an event as the rules understood it (a call's signal judged
/// into what it amounts to, any other event itself), the commands it produced and the playback it left.
public struct Decision: Hashable, Sendable {
    public var event: Event
    public var commands: [Command]
    public var playback: Playback

    /// Whether this is a fact about our output that the rules judged to be nothing (a change of ports no one hears,
    /// the server's own move of a virtual sink's carrier after a removal already reported): it asks for nothing and
    /// leaves the playback as it was (`before`). The executor need not log it; before the rules judged these facts
    /// the translator reported nothing for them.
    public func isOutputFactOfNoConsequence(before: Playback?) -> Bool {
        guard commands.isEmpty, playback == before else { return false }
        switch event {
        case .sinkPortsChanged, .virtualSinkSignal: return true
        default: return false
        }
    }
}

extension PlayerState {
    /// Applies `event` to the state and returns what the output must do, in order.
    ///
    /// Pure: no clock, no I/O. An event that does not fit the state (an end with no begin, a duplicate,
    /// a stale track notice) changes nothing and returns no commands (rule 15); the executor logs it.
    public mutating func apply(_ event: Event) -> [Command] {
        applyJudged(event).flatMap(\.commands)
    }

    /// Applies `event` as `apply` does, and returns its decisions one by one: what a call's signal amounted to (an
    /// interruption, an output loss) each with its own commands, so that a log of them reads in the rules' terms; a
    /// signal that amounts to nothing yet is one decision of its own, with the commands it asked for (its timer).
    public mutating func applyJudged(_ event: Event) -> [Decision] {
        // A call's signals are judged first (CallSignals.swift): what they amount to is applied in turn, and the
        // rules' timer follows whatever then waits.
        // A timer that went off is spent: whatever still waits asks for it again, even when its deadline did not move
        // (one armed for an earlier deadline that has since gone, a probe that stopped, would otherwise be the last).
        let deadline = timerDeadline
        let liveStreamHeard = isOnLiveStream ? live?.index : nil
        // So are the facts about our output: a change of our sink's ports, of what carries a virtual sink's audio on.
        var decisions = OutputFactJudge.judge(event).flatMap { outputJudged in
            calls.judge(outputJudged, timing: policy.callTiming, interrupting: interruptions)
        }.map { judged in
            let commands = decide(judged)
            return Decision(event: judged, commands: commands, playback: playback)
        }
        if decisions.isEmpty { decisions = [Decision(event: event, commands: [], playback: playback)] }
        var trailing: [Command] = []
        // Rows 38 and 42: the same timer ends a station's and the sound server's reconnection waits.
        if case .timerFired(let moment) = event {
            trailing += reconnectionTimerFired(at: moment)
            trailing += serverTimerFired(at: moment)
        }
        // Row 32: whichever event moved the cursor off the live stream, its decoder is let go (a return opens it afresh,
        // at live): what its buffer lost while paused concerns no resume any more.
        forgetOverflowOffTheLiveStream()
        // Row 40: off the live stream, or once it ended, a player quiet for want of its audio plays on.
        trailing += resumeOffTheLostNetwork(heardBefore: liveStreamHeard)
        decisions[decisions.count - 1].commands += trailing
        // Row 42: whichever decision asked for a stream while the server is away, it waits for the connection.
        for index in decisions.indices {
            decisions[index].commands = holdStreamUntilConnected(decisions[index].commands)
        }
        var closing: [Command] = []
        let timerSpent = if case .timerFired = event { true } else { false }
        if timerDeadline != deadline || (timerSpent && timerDeadline != nil) {
            closing.append(.armTimer(at: timerDeadline))
        }
        // Rule 23: the idle-suspend inhibitor follows the playback, whichever event moved it.
        if let inhibitor = idleInhibitorFollowingPlayback() { closing.append(inhibitor) }
        // Rule 19: whichever event makes the player quiet (a cork acknowledged, a stream gone), an announced sleep
        // may go ahead then; the sleep's release stays last.
        if let release = releaseSleepDelayWhenQuiet() { closing.append(release) }
        decisions[decisions.count - 1].commands += closing
        return decisions
    }

    /// The moment the rules' one timer is armed for: the earliest of what the calls and the reconnections (a
    /// station's, the sound server's) wait for.
    var timerDeadline: Moment? {
        [calls.deadline, reconnectionDeadline, serverAttemptDeadline].compactMap { $0 }.min()
    }

    /// The rules' decision about `event`, before an announced sleep is let go (`apply`).
    mutating func decide(_ event: Event) -> [Command] {
        switch event {
        case .interruptionBegan(let source, let moment):
            return interruptionBegan(source, at: moment)
        case .interruptionEnded(let source, let resumeAllowed, let moment):
            return interruptionEnded(source, resumeAllowed: resumeAllowed, at: moment)
        case .outputLost(let reason):
            return outputLost(reason)
        case .sessionLeft(let departure):
            return sessionLeft(departure)
        case .sessionReturned(let departure):
            return sessionReturned(departure)
        case .duckBegan(let stream):
            return duckBegan(stream)
        case .duckEnded(let stream):
            return duckEnded(stream)
        case .playerStarted(let moment):
            return startConnecting(at: moment)
        case .serverDisconnected(let moment):
            return serverDisconnected(at: moment)
        case .serverConnected:
            return serverConnected()
        case .serverConnectFailed(let moment):
            // Row 29 within: a foreground player with no server at its first attempt has nothing to wait for; a
            // service waits (and plays nothing by itself when one comes, rule 12).
            return serverConnectFailed(at: moment)
        case .callSignal, .timerFired, .sinkPortsChanged, .virtualSinkSignal:
            // Judged into other events before this (`apply`).
            return []
        case .routeChanged, .outputAppeared:
            // Rules 11 and 12: a deliberate move keeps playing on the new sink; a device appearing never
            // starts playback by itself.
            return []
        case .userPlay:
            return play()
        case .userPause:
            return pause()
        case .externalPause(let sender):
            return externalPause(from: sender)
        case .externalPlay(let sender):
            return externalResume(from: sender, relayedUserEvent: .userPlay)
        case .externalPlayPause(let sender):
            return externalResume(from: sender, relayedUserEvent: .userToggle)
        case .userToggle:
            // Row 40: a player quiet for want of a station's audio waits to play, as rule 9's does: a toggle pauses it.
            return isPlaying || waitingForInterruptionEnd || playback == .paused(.networkLost) ? pause() : play()
        case .userStop:
            return stop()
        case .serviceStopping:
            // Quiet first, before the service stops anything that may wait: a cork of an open stream (an uncork may
            // be on its way), then the stream closed (one still opening too: the executor closes whatever it has).
            // The playback is kept: the next start restores the queue paused all the same (rule 12).
            let quiet: [Command] = stream.isOpen ? [.cork] : []
            stream = StreamCondition(isOpen: false, isCorked: true)
            return quiet + [.closeStream]
        case .userNext:
            // Under `repeat track` too, next moves on (as MPD does); past the queue's end only when it repeats. Under
            // consume the track skipped leaves the queue (rule 37).
            return skip()
        case .userPrevious:
            return moveCursor(to: track(before: queue.index))
        case .userSeek(let milliseconds):
            guard playback != .idle, playback != .stopped else { return [] }
            // Row 31: a live stream has no position to go to.
            if let live = seekInLiveStream(forward: false) { return live }
            return [.seek(milliseconds: max(milliseconds, 0))]
        case .userSeekBy(let offset, let from, let length):
            // Rows 31 and 33: in a live stream, forward is toward live, and back is refused.
            if playback != .stopped, let live = seekInLiveStream(forward: offset > 0) { return live }
            return seek(by: offset, from: from, trackLength: length)
        case .userVolume(let percent):
            volumePercent = min(max(percent, 0), 150)
            return [.setVolume(percent: volumePercent)]
        case .userRepeat(let mode):
            return setRepeat(mode)
        case .userShuffle(let on, let seed):
            return setShuffle(on: on, seed: seed)
        case .userSingle(let mode):
            return setSingle(mode)
        case .userConsume(let on):
            return setConsume(on)
        case .playModesRestored(let mode, let shuffle, let single, let consume):
            self.single = single
            self.consume = consume
            return restorePlayModes(repeat: mode, shuffle: shuffle)
        case .queueReplaced(let trackCount, let startIndex):
            return replaceQueue(trackCount: trackCount, startIndex: startIndex)
        case .queueExtended(let trackCount):
            guard trackCount > queue.trackCount else { return [] }
            if playback == .idle {
                // A first queue is ready but, as any new queue, never starts by itself.
                playback = .stopped
                queue = QueueCursor(trackCount: trackCount, index: 0)
                reshuffleForNewQueue()
            } else {
                let first = queue.trackCount
                queue.trackCount = trackCount
                tracksAdded(from: first)
            }
            return []
        case .queueEdited(let edit):
            return editQueue(edit)
        case .userPlayTrack(let index):
            return playTrack(index)
        case .userJumpToLive:
            return jumpToLive()
        case .liveStreamStarted(let index):
            return liveStreamStarted(index)
        case .liveBufferOverflowed(let index):
            return liveBufferOverflowed(index)
        case .liveStreamLost(let index, let loss, let moment):
            return liveStreamLost(index, loss, at: moment)
        case .liveStreamReconnected(let index, let moment):
            return liveStreamReconnected(index, at: moment)
        case .liveStreamRanDry(let index):
            return liveStreamRanDry(index)
        case .liveStreamNotOpen(let index):
            return liveStreamNotOpen(index)
        case .queueRestored(let trackCount, let index, let milliseconds):
            return restoreQueue(trackCount: trackCount, index: index, milliseconds: milliseconds)
        case .trackFailed(let index, let failure, let inARow):
            return trackFailed(index, failure, failuresInARow: inARow)
        case .streamCorked:
            stream.isCorked = true
            return []
        case .streamUncorked:
            stream.isCorked = false
            return []
        case .streamOpened:
            return streamOpened()
        case .streamClosed:
            stream = StreamCondition(isOpen: false, isCorked: true)
            return []
        case .outputSilent(let milliseconds, let period, let heard):
            return outputSilent(milliseconds: milliseconds, requestPeriodMilliseconds: period, heardSinceStart: heard)
        case .tailHandedOver(let boundary):
            return tailHandedOver(boundary)
        case .heardTrack(let index):
            // Rule 13: the listener reached a later track of the play order (or the same one again under `repeat
            // track`, or the first again under `repeat queue`); only the cursor moves. An earlier or the same track
            // is a stale or duplicate report (rule 15).
            guard playback != .idle, listenerMayReach(index) else { return [] }
            return heard(index)
        case .queuePlayedOut:
            // Rule 13 at the end of the queue, or rules 35 and 36 where single stopped the decoder (SingleConsume.swift).
            guard playback != .idle else { return [] }
            return playedOut()
        case .formatChangeReached:
            // Rule 13's gapless queue across a change of format: a stream keeps its format, so the output is
            // reopened in the new one when a stream is open or one is wanted (playing); otherwise the next play opens
            // it. Without a queue there is no decoder waiting (rule 15).
            guard playback != .idle else { return [] }
            return [.switchFormat(reopen: stream.isOpen || isPlaying)]
        case .outputCommandFailed:
            return outputCommandFailed()
        case .configuredSinkRefused:
            return configuredSinkRefused()
        case .outputSettingFailed(let setting):
            return outputSettingFailed(setting)
        }
    }

    // MARK: Interruptions (rules 1-6, 9)

    private mutating func interruptionBegan(_ source: InterruptionSource, at moment: Moment) -> [Command] {
        // Rule 18: a capture the user overruled interrupts no more until it has ended.
        guard !overruledInterruptions.contains(source) else { return [] }
        // Rule 15: a source that is already active is a duplicate notification.
        guard interruptions.insert(source).inserted else { return [] }
        // Rule 3, with a fade-out for the first source under way: a source that must quiet at once (PulseAudio's cork
        // request, which has muted us already) cuts it short (Edges.swift).
        if isFadingOutForInterruption && !Self.pauseFades(for: source) { return [.cork] }
        // Row 40: a player quiet for want of a station's audio means to play, as a playing one does.
        guard isPlaying || isHeldByExternalPause || playback == .paused(.networkLost) else {
            // Rule 2 (first source while not playing) and rule 3 (another source while one is active:
            // the player cannot be playing then). Nothing to resume later.
            return []
        }
        // Rule 1: go quiet, keep the position, remember to come back. Rule 21: a player an outside sender has
        // just paused (WirePlumber's Pause can come before the notices of the call it pauses for) counts as
        // playing, and is already quiet.
        let wasPlaying = isPlaying
        playback = .paused(.interruption)
        resumeIntent = .afterInterruption(since: moment)
        return wasPlaying ? [Self.pauseCommand(fading: Self.pauseFades(for: source))] : []
    }

    private mutating func interruptionEnded(
        _ source: InterruptionSource, resumeAllowed: Bool, at moment: Moment
    ) -> [Command] {
        // Rule 18: an overruled capture ends without a word: the user has decided about the music since.
        if overruledInterruptions.remove(source) != nil { return [] }
        // Rule 15: an end with no begin.
        guard interruptions.remove(source) != nil else { return [] }
        // Rule 4: another source still holds the player.
        guard interruptions.isEmpty else { return [] }

        let intent = resumeIntent
        resumeIntent = .none
        switch intent {
        case .userAskedToPlay:
            // Rule 9, completed: the user's own wish needs no window and no permission.
            return startPlaying() + [.clearServerMute]
        case .afterInterruption(let since):
            let withinWindow = moment.milliseconds(since: since) <= policy.resumeWindowMilliseconds
            if resumeAllowed && policy.resumeAfterInterruption && withinWindow {
                // Rule 5.
                return startPlaying() + [.clearServerMute]
            }
            // Rule 6: remembered, but resuming is not allowed or too late.
            playback = .paused(.resumeDeclined)
            return []
        case .none:
            // Rule 6: nothing was remembered (the player was not playing, or the user paused since).
            return []
        }
    }

    // MARK: Output (rules 10-12)

    mutating func outputLost(_ reason: OutputLossReason) -> [Command] {
        let wasPaused: Bool
        if case .paused = playback { wasPaused = true } else { wasPaused = false }
        let commands = pauseForLostOutput(reason)
        // Our stream died with the server, or by itself: what it had taken from the decoder and not played died too. A
        // pause corks without flushing, so nothing else moves the decoder back, and a resume would skip what the dead
        // stream held (its whole buffer): `flush`, decoding continues from the frame heard. (The executor may have
        // reported the stream closed just before: `streamClosed` comes first when it lets go of it.)
        let streamDied = reason == .serverLost || reason == .streamFailed
        // Row 24: a live stream cannot decode again from the frame heard; the flush would only drop what the ring
        // holds of the show.
        return commands + (streamDied && wasPaused && !isOnLiveStream ? [.flush] : [])
    }

    /// Rule 10 for every loss: paused, the wish to resume forgotten, and a playing stream corked and flushed.
    mutating func pauseForLostOutput(_ reason: OutputLossReason) -> [Command] {
        if reason == .serverLost || reason == .streamFailed { stream.isOpen = false }
        // The server that asked us to cork (rule 1's `request-cork`) is gone, and with it the request: it can never
        // send its uncork, so the source ends here, with no resume (rule 10 clears the wish anyway).
        if reason == .serverLost { interruptions.remove(.serverCorkRequest) }
        // Rule 10: whatever was remembered is forgotten; only a user play makes sound again.
        resumeIntent = .none
        switch playback {
        case .playing:
            playback = .paused(.outputLost(reason))
            // Row 24: a live stream keeps what the ring and the server hold (a flush cannot take it back from the
            // frame heard, as a file's can); the resume continues with it.
            return isOnLiveStream ? [.cork] : [.cork, .flush]
        case .paused(.user), .idle, .stopped:
            return []
        case .paused:
            playback = .paused(.outputLost(reason))
            return []
        }
    }

    // MARK: User commands (rules 7-9, 16; the outside senders of rule 21 are in ExternalPauses.swift)

    private mutating func play() -> [Command] {
        switch playback {
        case .idle, .playing:
            return []
        case .stopped, .paused:
            break
        }
        if let overruled = overruleInferredCalls() { return overruled }
        guard interruptions.isEmpty else {
            // Rule 9: held until the interruption ends; get ready so the end only has to uncork.
            let preparation = prepareToPlay()
            playback = .paused(.interruption)
            resumeIntent = .userAskedToPlay
            return preparation
        }
        // Rule 8.
        return startPlaying()
    }

    private mutating func pause() -> [Command] {
        // Rules 7 and 16: idempotent; a pause clears any wish to resume.
        switch playback {
        case .idle, .stopped:
            return []
        case .playing:
            playback = .paused(.user)
            resumeIntent = .none
            return [.fadeOutAndCork]
        case .paused:
            playback = .paused(.user)
            resumeIntent = .none
            return []
        }
    }

    private mutating func stop() -> [Command] {
        guard playback != .idle else { return [] }
        let wasPlaying = isPlaying
        playback = .stopped
        resumeIntent = .none
        stopReconnecting()
        return wasPlaying ? [.fadeOutAndCork] : []
    }

    mutating func moveCursor(to index: Int?) -> [Command] {
        guard playback != .idle, let index, (0..<queue.trackCount).contains(index) else { return [] }
        // The decoder starts afresh at the new track, in the order as it is now.
        orderChangedAhead = false
        enterTrack(index)
        // A stopped player starts the current track when played; the others jump now.
        return playback == .stopped ? [] : [.playTrack(index: index)]
    }

    private mutating func replaceQueue(trackCount: Int, startIndex: Int) -> [Command] {
        let wasPlaying = isPlaying
        // Row 30: a new queue's streams are reported again as the decoder opens them.
        live = nil
        guard trackCount > 0 else {
            playback = .idle
            queue = .empty
            reshuffleForNewQueue()
            resumeIntent = .none
            // The decoder lets go of the old queue: nothing decoded from it is queued or reported as the new one's.
            return (wasPlaying ? [.cork] : []) + [.cue(index: 0, milliseconds: 0)]
        }
        queue = QueueCursor(trackCount: trackCount, index: min(max(startIndex, 0), trackCount - 1))
        reshuffleForNewQueue()
        if wasPlaying || waitingForInterruptionEnd {
            // Playing (or waiting to play) carries on with the new queue.
            return [.playTrack(index: queue.index)]
        }
        // A new queue is ready but never starts by itself; the decoder moves to its first track.
        playback = .stopped
        resumeIntent = .none
        return [.cue(index: queue.index, milliseconds: 0)]
    }

    private mutating func restoreQueue(trackCount: Int, index: Int, milliseconds: Int) -> [Command] {
        // Only a fresh player restores: anything else already has a queue the user chose.
        guard playback == .idle, trackCount > 0, (0..<trackCount).contains(index) else { return [] }
        queue = QueueCursor(trackCount: trackCount, index: index)
        playback = .paused(.restored)
        // The saved order follows (`playModesRestored`); until then a shuffle on keeps the restored track.
        if shuffle != nil { _ = restorePlayModes(repeat: repeatMode, shuffle: shuffle) }
        // The decoder waits at the saved position, for the user's play.
        return [.cue(index: index, milliseconds: max(milliseconds, 0))]
    }

    // MARK: Helpers

    /// Commands that make the stream ready to be uncorked at the current track.
    private mutating func prepareToPlay() -> [Command] {
        var commands: [Command] = []
        if !stream.isOpen { commands.append(.openStream) }
        // Row 34: a stopped live stream starts again at live, as a stopped file starts again at its beginning.
        if playback == .stopped {
            commands.append(isOnLiveStream ? .rejoinLive(.restarted) : .playTrack(index: queue.index))
        }
        return commands
    }

    /// Starts playing at the current track: the stream is made ready and uncorked (rules 5, 8, 9 and 18).
    mutating func startPlaying() -> [Command] {
        // Rows 40 and 41: a station with its connection down and nothing left to decode waits for the network, quiet.
        let wasStopped = playback == .stopped
        let network = waitForTheNetwork()
        // Row 34: a stopped station starts again at live, when it first waits for the network too.
        if network.waits { return network.commands + (wasStopped ? [.rejoinLive(.restarted)] : []) }
        // Row 32: a live stream whose buffer overflowed while paused rejoins live before it sounds again.
        let rejoin = network.commands + rejoinLiveIfOverflowed()
        let preparation = prepareToPlay()
        playback = .playing
        // Without a stream there is nothing to uncork yet: `streamOpened` brings the uncork.
        return rejoin + (stream.isOpen ? preparation + [.uncork] : preparation)
    }

    /// Moves to `next` after the current track ended or failed, or stops at the end of the queue; `nothingPlayed` when
    /// it ends because every track failed in a row.
    mutating func advance(to next: Int?, nothingPlayed: Bool = false) -> [Command] {
        if let next, (0..<queue.trackCount).contains(next) {
            enterTrack(next)
            return []
        }
        // Rule 22: leaving playing always quiets the stream. A queue played out has nothing left to sound, but a
        // failed track's end does not say what the stream still holds (the failed track's first part, or audio of
        // the order before a change); a cork makes "stopped" true whatever it holds.
        let cork: [Command] = isPlaying ? [.cork] : []
        rewindAfterQueueEnd()
        playback = .stopped
        resumeIntent = .none
        // A foreground `earshot play` has done its work; the service waits for the user.
        guard policy.frontEnd == .foreground else { return cork }
        return cork + [.exitForeground(nothingPlayed ? .nothingPlayable : .queuePlayed)]
    }

    /// Rules 14 and 22: track `index` failed. The rules name the track the decoder tries next, from their own play
    /// order (repeat, shuffle), so that the decoder and the cursor never part; a queue whose every track failed in a
    /// row plays nothing, and trying on (a repeated order would, for ever) is stopped here.
    private mutating func trackFailed(_ index: Int, _ failure: TrackFailure, failuresInARow: Int) -> [Command] {
        guard playback != .idle, (0..<queue.trackCount).contains(index) else { return [] }
        lastFailure = FailedTrack(index: index, failure: failure)
        let next = failuresInARow >= queue.trackCount ? nil : track(after: index, trackEnded: false)
        let decoder = Command.skipFailedTrack(failed: index, next: next)
        // A track decoded ahead of the listener failed: the cursor stays with what the listener hears, and reaches
        // the next one by playing on (`heardTrack`) or at the queue's end (`queuePlayedOut`).
        guard index == queue.index else { return [decoder] }
        return [decoder] + advance(to: next, nothingPlayed: failuresInARow >= queue.trackCount)
    }
}
