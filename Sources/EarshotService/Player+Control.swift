// The player's time, control and persistence: the tick while playing, control requests and status, the queue, the
// saved state and MPRIS (see Player.swift).
import AudioPipeline
import EarshotCore
import EarshotMPRIS
import Glibc
import PulseOutput
import SystemSupport
import TrackPaths

extension Player {
    // MARK: Time

    func tick() {
        noteHeardSinceStart()
        // Row 40: a station run dry quiets the player once what it decoded has been read.
        if reportDryLiveStreamWhenPlayedOut() { return }
        if let stream, let silence = stream.requestSilence(), silence > stallThreshold(of: stream) {
            // The server has asked for nothing past the rulebook's threshold (the timer was armed for it), measured
            // with whether the sink has played since the stream started: whether that is a stall is the rules' call
            // (`StallRule`, `outputSilent`). Reported once per silence and per answer to that question, since the
            // tick comes again soon while the silence lasts and the rules' answer would be the same.
            let report = SilenceReport(lastRequest: stream.lastRequestUptimeNanoseconds,
                                       heardSinceStart: heardSinceStart)
            if report != reportedSilence {
                reportedSilence = report
                dispatch(.outputSilent(milliseconds: Self.milliseconds(of: silence),
                                       requestPeriodMilliseconds: requestPeriodMilliseconds(of: stream),
                                       heardSinceStart: heardSinceStart))
            }
            // A stall pauses, so the rest of the tick has no work; the journal has the rules' verdict in its own word
            // (scripts/soak counts it).
            if !rules.isPlaying {
                if rules.playback == .paused(.outputLost(.stalled)) { log.record("output", ["watchdog": "stalled"]) }
                return
            }
        }
        if observeListener() { reportTailsHandedOver() }
        if let index = heard?.trackIndex, index != announcedTrack, let stream, streamOpening == nil {
            announcedTrack = index
            do {
                try stream.updateMediaName(title(of: index))
            } catch {
                // Only the name the mixer shows is stale; what plays is untouched, so the rules have nothing to decide.
                log.record("output", ["command": "mediaName", "error": "\(error.code.rawValue)"])
            }
        }
        // The position while playing on is due every `SaveSchedule.interval`, so that a kill loses at most that.
        saveState()
        if configuration.showsProgress { showProgress() }
    }

    /// Notes the heard frame where the stream last started (the first time after `disarmWatchdog`), or whether the
    /// listener has heard past it since (`heardSinceStart`).
    func noteHeardSinceStart() {
        guard let stream else { return }
        // A flushed stream that waits for the decoder to refill it is silent because we hold the audio back (a broken
        // file skipped on a loaded machine took over a second to fail): it starts again when refilled, and only a
        // silence after that can be the server's.
        if stream.isAwaitingRefill {
            disarmWatchdog()
            return
        }
        guard !heardSinceStart, let frame = stream.heardRingFrame() else { return }
        if let base = watchdogBase {
            if frame > base { heardSinceStart = true }
        } else {
            watchdogBase = frame
        }
    }

    /// Reports that everything before a format change or the queue's end was handed over, while no drain plays it
    /// out: whether to play it out now (`drain`) is the rules' call.
    func reportTailsHandedOver() {
        if drainingFor == nil, let change = pendingFormatChange, ring.totalFramesRead >= change.ringFrame {
            dispatch(.tailHandedOver(.formatChange))
        }
        if drainingFor == nil, let end = queueEndRingFrame, ring.totalFramesRead >= end {
            dispatch(.tailHandedOver(.queueEnd))
        }
    }

    /// How often a silence past the threshold, reported before the sink played, is looked at again.
    private static let unheardSilencePoll = Duration.milliseconds(250)
    /// The progress line's rate on a terminal (4 Hz).
    private static let progressInterval = Duration.milliseconds(250)

    /// How long the server may ask for nothing before the rules count the stream as stalled (`StallRule`).
    func stallThreshold(of stream: PlaybackStream) -> Duration {
        .milliseconds(StallRule.thresholdMilliseconds(requestPeriodMilliseconds: requestPeriodMilliseconds(of: stream)))
    }

    /// How often the server asks for audio, in milliseconds (the target latency until it has asked).
    func requestPeriodMilliseconds(of stream: PlaybackStream) -> Int {
        stream.requestPeriod.map(Self.milliseconds(of:)) ?? max(stream.targetLatencyMilliseconds, 1)
    }

    /// `duration` in whole milliseconds.
    static func milliseconds(of duration: Duration) -> Int {
        let parts = duration.components
        return Int(parts.seconds) * 1000 + Int(parts.attoseconds / 1_000_000_000_000_000)
    }

    /// Arms the timer for the next moment the tick has work, or disarms it when the player is not playing or the tick
    /// has none; sets the stream's silence alarm to the stall threshold while playing (the stall watchdog's wake-up,
    /// which the stream's `.requestsStopped` turns into a tick), and withdraws it otherwise.
    func armTick() {
        guard rules.isPlaying, let stream else {
            tickTimer.disarm()
            setSilenceAlarm(nil)
            return
        }
        // A little late rather than early, so that the tick finds the threshold passed.
        setSilenceAlarm(stallThreshold(of: stream) + .milliseconds(10))
        // The frame where the stream started, noted at the first input after the start rather than at the next tick,
        // which may be a track away now that the stall watchdog does not tick.
        if watchdogBase == nil { noteHeardSinceStart() }
        if let delay = nextTickDelay(stream: stream) {
            tickTimer.arm(after: delay)
        } else {
            tickTimer.disarm()
        }
    }

    /// Sets the stream's silence alarm when it differs from what that stream was last given (each setting takes
    /// libpulse's lock, and `armTick` runs after every input).
    func setSilenceAlarm(_ alarm: Duration?) {
        guard let stream else {
            silenceAlarmGiven = nil
            return
        }
        let given = SilenceAlarmSetting(streamGeneration: link.streamGeneration, alarm: alarm)
        guard given != silenceAlarmGiven else { return }
        silenceAlarmGiven = given
        stream.setSilenceAlarm(after: alarm)
    }

    /// How long until the tick has work, nil when it has none. Every tick wakes several threads, so there is no fixed
    /// rate: the tick is due when the listener reaches the current track's end, when the server has taken everything
    /// before a format change or the queue's end (both advance at the sample rate while playing), and on a terminal
    /// for the progress line. The tick is also due when the periodic save is (`SaveSchedule.interval` after the
    /// last), so that a kill loses at most that much. The stall watchdog needs no tick: the stream's silence alarm
    /// wakes the owner (`armTick`), except after a silence past the threshold reported before the sink played.
    func nextTickDelay(stream: PlaybackStream) -> Duration? {
        var delay: Duration?
        if heardSinceStart == false, watchdogBase != nil, let silence = stream.requestSilence(),
           silence > stallThreshold(of: stream) {
            // Already past it and reported, but not a stall (the sink has not played since the start): the next
            // report is due when the listener starts hearing, looked at four times a second.
            delay = Self.unheardSilencePoll
        }
        if stateWriter != nil {
            // Without a tick of its own the position would be saved only at a track's end.
            let untilSave = SaveSchedule.interval - (ContinuousClock.now - saving.lastCurrent)
            delay = Self.earliest(delay, max(untilSave, .zero) + .milliseconds(2))
        }
        if configuration.showsProgress { delay = Self.earliest(delay, Self.progressInterval) }
        var frames = Int.max
        if drainingFor == nil {
            if let change = pendingFormatChange { frames = min(frames, change.ringFrame - ring.totalFramesRead) }
            if let end = queueEndRingFrame { frames = min(frames, end - ring.totalFramesRead) }
        }
        if let left = listening.framesLeft(inTrack: rules.queue.index) { frames = min(frames, left) }
        if let dry = framesUntilDryLiveStreamPlayedOut { frames = min(frames, dry) }
        guard frames != Int.max else { return delay }
        let rate = max(worker.currentFormat?.sampleRate ?? 44_100, 1)
        // A couple of milliseconds late rather than early, so the tick finds the boundary passed.
        let milliseconds = max(frames, 0) * 1000 / rate + 2
        return Self.earliest(delay, .milliseconds(max(milliseconds, 5)))
    }

    /// The earlier of a delay that may be absent and one that is not.
    static func earliest(_ delay: Duration?, _ other: Duration) -> Duration {
        delay.map { min($0, other) } ?? other
    }

    /// Moves the listener's position to what the stream's timing says is heard now, and reports a track boundary the
    /// listener crossed since (`heardTrack`): whether that moves the queue on is the rules' call. False without a
    /// stream whose timing says what is heard.
    @discardableResult
    func observeListener() -> Bool {
        guard let stream, let frame = stream.heardRingFrame() else { return false }
        let before = heard
        if let index = listening.observe(ringFrame: frame, locate: worker.locate(ringFrame:)) {
            let playedAgain = index == rules.queue.index && before?.trackIndex == index
            dispatch(.heardTrack(index: index))
            // The same track from its start (`repeat track`): MPRIS clients learn that the position went back.
            if playedAgain { mpris?.emitSeeked(positionMicroseconds: 0) }
        }
        return true
    }

    /// Moves the listener's position to what the stream's timing says is heard now (between ticks it is the last
    /// tick's).
    func settleAtHeardPosition() {
        if let position = currentHeardPosition() { listening.settle(at: position) }
    }

    func title(of index: Int?) -> String {
        guard let index, let metadata = tracks[index]?.metadata else { return "Earshot" }
        return metadata.title ?? "Earshot"
    }

    /// Draws the progress line over the last. Only queued: a terminal stopped with Ctrl-S holds the log's
    /// standard-output writer, never the owner (issue 35).
    func showProgress() {
        guard rules.playback != .idle else { return }
        let state = rules.isPlaying ? "playing" : rules.playback.description
        let line = StatusText.progressLine(track: rules.queue.index, of: paths.count, at: positionMilliseconds,
                                           length: durationMilliseconds, state: state)
        log.showProgress(line)
        progressShown = true
        shownPlayback = rules.playback
    }

    /// Ends the progress line, so that what the shell writes next starts a line of its own; queued like the line.
    func finishProgressLine() {
        if progressShown { log.showProgress("\n") }
    }

    // MARK: Control

    var positionMilliseconds: Int {
        milliseconds(at: heard)
    }

    /// `position` in milliseconds into the current track; 0 when it is in another track (or none).
    func milliseconds(at position: TrackPosition?) -> Int {
        guard let position, position.trackIndex == rules.queue.index, position.sampleRate > 0 else { return 0 }
        return position.frame * 1000 / position.sampleRate
    }

    var durationMilliseconds: Int? {
        guard let info = tracks[rules.queue.index], let length = info.lengthFrames else { return nil }
        return length * 1000 / info.format.sampleRate
    }

    func answer(_ request: ControlRequest) -> String {
        switch request {
        case .load(let newPaths, let play): replaceQueue(with: newPaths, play: play)
        case .add(let newPaths): appendToQueue(newPaths)
        case .clear: replaceQueue(with: [], play: false)
        case .queue:
            // The user's own terminal asks: the paths are theirs to see (never logged).
            return ControlReply.success(["queue": paths.map(\.jsonValue), "current": rules.queue.index,
                                         "ids": identities.ids, "versions": identities.versions,
                                         "version": identities.version])
        case .edit(let edit, let newPaths):
            if let refusal = editQueue(edit, paths: newPaths) { return ControlReply.failure(refusal) }
        case .jump(let index):
            if let refusal = jump(to: index) { return ControlReply.failure(refusal) }
        case .byID(let request):
            if let refusal = perform(request) { return ControlReply.failure(refusal) }
        case .play: dispatch(.userPlay)
        case .pause: dispatch(.userPause)
        case .toggle: dispatch(.userToggle)
        case .stop: dispatch(.userStop)
        case .next: dispatch(.userNext)
        case .previous: dispatch(.userPrevious)
        case .seek(let seconds):
            if let refused = dispatchRefusable(.userSeek(milliseconds: Int(seconds * 1000))) {
                return ControlReply.failure("cannot seek: " + refused.explanation)
            }
        case .live:
            if let refused = dispatchRefusable(.userJumpToLive) {
                return ControlReply.failure("cannot jump to live: " + refused.explanation)
            }
        case .volume(let percent): dispatch(.userVolume(percent: percent))
        case .repeatMode(let mode): choosePlayOrder(repeat: mode, shuffle: nil)
        case .shuffle(let on): choosePlayOrder(repeat: nil, shuffle: on)
        case .single(let mode): dispatch(.userSingle(mode))
        case .consume(let on): dispatch(.userConsume(on))
        case .replayGain(let mode):
            // From the next track the decoder opens: the one playing keeps the gain it started with.
            replayGain.mode = mode
            worker.replayGain.set(replayGain, shuffled: rules.shuffle != nil)
        case .status, .events: break
        case .update, .libraryQuery, .browse:
            // The control server's handler answers these from the library, off the owner; one that reaches the owner
            // came where no library runs.
            return ControlReply.failure("no music library in this player")
        }
        // The tick runs only when it has work (a track's end, a save): the position a reply shows is read from the
        // stream now, with the track it is in (a boundary crossed since the last tick moves the cursor first, or the
        // reply would show the old track at the new one's position).
        if !observeListener() { settleAtHeardPosition() }
        var status = report().status
        if let library { status["library"] = library.jsonObject }
        return ControlReply.success(["status": status])
    }

    /// The player's state as status and MPRIS show it, read in one place (see `PlayerReport`).
    func report() -> PlayerReport {
        PlayerReport(
            rules: rules, paths: paths, queueGeneration: queueGeneration, identities: identities,
            metadata: tracks[rules.queue.index]?.metadata,
            replayGain: replayGain, artFile: tracks[rules.queue.index]?.artFile,
            positionMilliseconds: positionMilliseconds, durationMilliseconds: durationMilliseconds,
            output: PlayerReport.Output(
                sinkName: stream?.sinkName, streamOpen: stream != nil,
                underruns: link.underruns, serverUnderflows: link.serverUnderflows, serverName: link.serverName,
                realtime: link.realtime?.outcome, realtimeThread: link.realtime?.threadID,
                idleInhibitorService: idleInhibitor?.heldThrough),
            handling: handling, liveBufferStatus: liveBufferStatus)
    }

    func shutdown(signal: Int32) {
        // Saved where the listener is now, not where the last tick (up to a track ago) found them.
        settleAtHeardPosition()
        // Quiet first, before anything that may wait: the log (a client reading it), MPRIS's stop (its bus thread may
        // be waiting for this owner, up to its 10 s timeout). The rules cork and close the stream.
        dispatch(.serviceStopping)
        log.record("service", ["state": "stopping", "signal": signal == SIGINT ? "INT" : "TERM"])
        // Handed to the writer, flushed to disk by it; the service waits for that after the owner has stopped.
        saveState(final: true)
        // The one place the owner waits, and only once quiet: it stops the threads it started (MPRIS's bus thread, the
        // decoder, libpulse's thread), each joined.
        WaitGuard.allowWaiting()
        mpris?.stop()
        worker.stop()
        link.disconnect()
        if case .foreground = mode {
            exitCode = signal == SIGINT ? 130 : 0
        } else {
            exitCode = 0
        }
    }

    // MARK: Queue and persistence

    /// Replaces the queue with `newPaths`, playing them when `play`.
    func replaceQueue(with newPaths: [TrackPath], play: Bool) {
        saving.queueDidChange()
        paths = TrackList(newPaths)
        identities.replace(count: paths.count)
        tracks = [:]
        queueGeneration += 1
        announcedTrack = nil
        // The rules move the decoder to the new queue (`playTrack` or `cue`).
        dispatch(.queueReplaced(trackCount: newPaths.count, startIndex: 0))
        if play { dispatch(.userPlay) }
        saveState()
    }

    /// Appends `newPaths` to the queue; decoding continues into them without a gap.
    func appendToQueue(_ newPaths: [TrackPath]) {
        let added = TrackList(newPaths)
        saving.queueDidChange()
        paths.append(contentsOf: added)
        identities.append(count: added.count)
        if workerLoaded { worker.append(paths: added) }
        let endWithdrawn = queueEndRingFrame != nil
        if endWithdrawn {
            queueEndRingFrame = nil
            // Withdrawing the end of the data cancels a drain: the queue's end is not reached after all.
            stream?.setEndOfData(false)
            drainingFor = nil
        }
        dispatch(.queueExtended(trackCount: paths.count))
        // A format change's tail whose drain that cancelled is still all handed over: the fact is reported again, and
        // whether to play it out now is the rules' call (`tailHandedOver`).
        if endWithdrawn { reportTailsHandedOver() }
        saveState()
    }

    /// Restores the saved queue, paused at the saved position; a corrupt state file is reported and set aside.
    func restoreSavedState() {
        // Read on the service's main thread before the owner started (`StateWriter.loadSavedState`): nothing here
        // waits for the disk.
        guard let loaded = stateWriter?.takeLoadedState() else { return }
        switch loaded {
        case .empty:
            log.record("state", ["restored": "nothing"])
        case .corrupt(let reason, let keptAs):
            let name = PathText.lastComponent(of: keptAs)
            log.record("state", ["restored": "corrupt", "keptAs": name])
            log.tellUser(
                "earshot: the saved state could not be read (\(reason)); kept aside as \(name), starting empty\n")
        case .restored(let saved, let positionFile):
            paths = saved.queue
            identities.replace(count: paths.count)
            dispatch(.userVolume(percent: saved.volumePercent))
            // The rules cue the decoder at the saved position (in milliseconds: the decoder turns them into frames at
            // the track's rate once it has opened it, off this thread).
            dispatch(.queueRestored(trackCount: saved.queue.count, index: saved.trackIndex,
                                    positionMilliseconds: saved.positionMilliseconds))
            restorePlayModes(saved.playModes)
            savedModes = savedPlayModes
            // Without a queue id (an earlier version's file) the queue is written again with one: the next save.
            saving.restored(saved, repositions: repositionCount)
            log.record("state", ["restored": "queue", "tracks": "\(saved.queue.count)",
                                 "position": positionFile?.kind ?? "positionFile",
                                 "format": saved.queueId == nil ? "singleFile" : "current"])
        }
    }

    /// Hands what changed to the state writer, which saves it off the owner's thread: the queue when it changed, the
    /// position when `SaveSchedule` says it is due; `final` (a clean exit) has the writer flush the position to disk.
    func saveState(final: Bool = false) {
        guard let stateWriter else { return }
        // Repeat and shuffle live in `state.json`: a change of them (a shuffled round drawn anew too) writes it.
        if savedPlayModes != savedModes {
            savedModes = savedPlayModes
            saving.queueDidChange()
        }
        guard let due = saving.due(
            trackIndex: rules.queue.index, positionMilliseconds: positionMilliseconds,
            volumePercent: rules.volumePercent, repositions: repositionCount, playing: rules.isPlaying, final: final)
        else { return }
        let state = due.newQueueId.map { id in
            var state = PersistedState(
                queue: paths, trackIndex: rules.queue.index, positionMilliseconds: positionMilliseconds,
                volumePercent: rules.volumePercent, queueId: id)
            state.playModes = savedModes
            return state
        }
        stateWriter.save(state: state, position: due.position, durable: final)
    }

    // MARK: MPRIS

    /// Publishes the current state to MPRIS when it changed (the adapter then sends only the changed properties),
    /// and the position for `Position`, which MPRIS clients read when they want it.
    func publish() {
        guard let mpris else { return }
        let report = report()
        // The cell is anchored at now, so it takes the position the stream's timing says is heard now: the last
        // tick's (up to a track old) would set MPRIS's Position back at every publish between ticks. Read, not
        // settled: a settled position would differ at every inbox item and make each one rewrite the state file.
        positionCell.store(microseconds: Int64(milliseconds(at: currentHeardPosition())) * 1000,
                           advancing: rules.isPlaying, limit: report.lengthMicroseconds)
        let snapshot = report.mprisSnapshot
        // Told only changes: an unchanged snapshot would still wake the bus thread.
        guard snapshot != publishedSnapshot else { return }
        publishedSnapshot = snapshot
        mpris.update(snapshot)
    }

    /// Carries out an MPRIS request through the same rules as every other command.
    func answer(_ command: MPRISCommand) -> MPRISReply {
        switch command {
        // Rule 19: KDE's power daemon pauses players only as the machine goes to sleep (it sends nothing else), so its
        // Pause announces the sleep, as logind's PrepareForSleep does.
        case .pause(.powerManager): dispatch(.sessionLeft(.sleep))
        // Rule 21: the session manager's and the phone bridges' requests are theirs, not the user's.
        case .play(let sender): dispatch(sender.outsideSender.map(Event.externalPlay) ?? .userPlay)
        case .pause(let sender): dispatch(sender.outsideSender.map(Event.externalPause) ?? .userPause)
        case .playPause(let sender): dispatch(sender.outsideSender.map(Event.externalPlayPause) ?? .userToggle)
        case .stop: dispatch(.userStop)
        case .next: dispatch(.userNext)
        case .previous: dispatch(.userPrevious)
        case .seek(let offset):
            // Past the end, MPRIS says the next track: the rules' call (`seek(by:)`).
            dispatch(.userSeekBy(offsetMilliseconds: Int(offset / 1000), fromMilliseconds: positionMilliseconds,
                                 trackLengthMilliseconds: durationMilliseconds))
        case .setPosition(let trackId, let position):
            guard trackId == report().currentTrackId else { return .done }
            dispatch(.userSeek(milliseconds: Int(position / 1000)))
        case .openUri(let paths):
            replaceQueue(with: paths, play: true)
        case .setVolume(let volume):
            dispatch(.userVolume(percent: Int((volume * 100).rounded())))
        case .setLoopStatus(let loop):
            choosePlayOrder(repeat: RepeatMode(loop), shuffle: nil)
        case .setShuffle(let on):
            choosePlayOrder(repeat: nil, shuffle: on)
        case .quit:
            inbox.yield(.shutdown(signal: SIGTERM))
        }
        return .done
    }
}

extension MPRISSender {
    /// The rules' name for a sender that pauses for an event of its own (rule 21); nil for the user, and for the power
    /// manager, whose only request, Pause, is rule 19's sleep (any other would be relayed as the user's).
    fileprivate var outsideSender: ExternalSender? {
        switch self {
        case .user, .powerManager: return nil
        case .sessionManager: return .sessionManager
        case .phoneBridge: return .phoneBridge
        }
    }
}
