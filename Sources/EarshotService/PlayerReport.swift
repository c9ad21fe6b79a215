// What the player shows of itself, made in one place from its state: the status object of control replies (`earshot
// status`) and the snapshot MPRIS publishes. Both read the same values, so they cannot disagree about the track, the
// playback or the volume. Pure: values in, the two views out.
import AudioPipeline
import EarshotCore
import EarshotJSON
import EarshotMPRIS
import RealtimeScheduling
import TrackPaths

/// The player's state as status and MPRIS see it: what the rulebook decided and what the executor knows besides.
struct PlayerReport {
    /// What the executor knows of the output, beyond the rulebook's acknowledged facts.
    struct Output {
        /// The sink our stream plays on, when there is a stream.
        var sinkName: String?
        /// Whether a stream exists.
        var streamOpen: Bool
        /// Ring shortfalls counted by the write callback, over every stream so far.
        var underruns: Int
        /// Underflows the server reported, over every stream so far.
        var serverUnderflows: Int
        /// The server's name, once connected.
        var serverName: String?
        /// The scheduling of the mainloop thread that feeds the server; nil while not connected.
        var realtime: RealtimeOutcome?
        /// That thread's kernel id, when found.
        var realtimeThread: Int32?
        /// The service holding the desktop's idle suspend off for us (rule 23), as its adapter reports it.
        var idleInhibitorService: String? = nil
    }

    /// The rulebook's state.
    var rules: PlayerState
    /// The queued files.
    var paths: TrackList
    /// Bumped whenever the queue is replaced, so the track ids of a new queue differ from the old ones.
    var queueGeneration: Int
    /// The queue entries' ids and the queue's version (MPD's `songid` and `playlist`).
    var identities = QueueIdentities()
    /// The current track's tags, once the decoder opened it.
    var metadata: TrackMetadata?
    /// The ReplayGain settings tracks are opened with now.
    var replayGain = ReplayGainSettings()
    /// The current track's cover picture in the art cache, once stored.
    var artFile: TrackPath? = nil
    /// The position heard in the current track, in milliseconds.
    var positionMilliseconds: Int
    /// The current track's length in milliseconds, when known.
    var durationMilliseconds: Int?
    /// The output as the executor knows it.
    var output: Output
    /// The owner's slowest handling of one inbox item, overall and by kind.
    var handling: HandlingRecord
    /// The live stream's buffer, as status shows it (Player+Streams; empty for a report that shows none).
    var liveBufferStatus: [String: Any] = [:]

    /// The MPRIS track id of queue entry `index` in the queue of `queueGeneration`: unique per queued item, as clients
    /// take a new id for a new track.
    static func trackId(index: Int, queueGeneration: Int) -> String {
        MPRISSnapshot.trackId(queueGeneration * 100_000 + index)
    }

    /// The current track's id (`SetPosition` names it).
    var currentTrackId: String {
        Self.trackId(index: rules.queue.index, queueGeneration: queueGeneration)
    }

    /// The current track's file, nil when there is none to show (idle, or an index outside the queue).
    var currentPath: TrackPath? {
        rules.playback != .idle && paths.indices.contains(rules.queue.index) ? paths[rules.queue.index] : nil
    }

    /// The current track's length in microseconds, as MPRIS shows it; nil without a current track or a known length.
    var lengthMicroseconds: Int64? {
        currentPath != nil ? durationMilliseconds.map { Int64($0) * 1000 } : nil
    }

    /// The ReplayGain mode, and the gain the current track plays at and where it came from (`trackTag`, `albumTag`,
    /// `fallback` for a file with no value, `off`); the mode may have changed since the track began.
    var replayGainStatus: [String: Any] {
        let applied = currentPath != nil ? metadata?.replayGain.applied : nil
        return [
            "mode": replayGain.mode.rawValue,
            "source": applied?.source.rawValue ?? "off",
            // Rounded to a hundredth of a dB, as taggers write it.
            "gainDb": ((applied?.effectiveDecibels ?? 0) * 100).rounded() / 100,
            "limitedByPeak": applied?.limitedByPeak ?? false,
        ]
    }

    /// The status object of control replies: kinds, states and numbers, never user content.
    var status: [String: Any] {
        var pauseReason: Any = JSONNull()
        var lossReason: Any = JSONNull()
        if case .paused(let reason) = rules.playback {
            pauseReason = reason.description
            if case .outputLost(let cause) = reason { lossReason = cause.description }
        }
        var lastError: Any = JSONNull()
        // What follows the current track when it ends (MPD's `nextsong`).
        let nextTrack = rules.playback == .idle ? nil : rules.track(after: rules.queue.index, trackEnded: true)
        if let failure = rules.lastFailure {
            lastError = ["trackIndex": failure.index, "kind": failure.failure.description]
        }
        let base: [String: Any] = [
            "playback": rules.playback == .idle ? "stopped" : rules.playback.name,
            "pauseReason": pauseReason,
            "outputLostReason": lossReason,
            "waitingForInterruptionEnd": rules.waitingForInterruptionEnd,
            "activeInterruptions": rules.interruptions.map(\.description).sorted(),
            // Inferred calls the user overruled by playing (rule 18): they interrupt no more until they end.
            "overruledInterruptions": rules.overruledInterruptions.map(\.description).sorted(),
            "resumeIntent": rules.resumeIntent.description,
            "positionMs": positionMilliseconds,
            "durationMs": durationMilliseconds.map { $0 as Any } ?? JSONNull(),
            "trackIndex": rules.queue.index,
            "trackCount": rules.queue.trackCount,
            "trackID": identities.ids.indices.contains(rules.queue.index) ? identities.ids[rules.queue.index] : 0,
            "nextTrackIndex": nextTrack.map { $0 as Any } ?? JSONNull(),
            "nextTrackID": nextTrack.flatMap { identities.ids.indices.contains($0) ? identities.ids[$0] : nil }
                .map { $0 as Any } ?? JSONNull(),
            "queueVersion": identities.version,
            "sink": output.sinkName.map { $0 as Any } ?? JSONNull(),
            // The rules' acknowledged fact, reported by the executor (`streamCorked`, `streamUncorked`, ...).
            "corked": rules.stream.isCorked,
            "streamOpen": output.streamOpen,
            "underruns": output.underruns,
            "serverUnderflows": output.serverUnderflows,
            "server": output.serverName.map { $0 as Any } ?? JSONNull(),
            "realtime": (output.realtime ?? .none(reason: "not connected")).description,
            "realtimeThread": output.realtimeThread.map { Int($0) as Any } ?? JSONNull(),
            // Rule 23: whether the rules want the idle suspend held off, and which service holds it (null: none).
            "idleInhibitorWanted": rules.idleInhibitorHeld,
            "idleInhibitorHeldBy": output.idleInhibitorService.map { $0 as Any } ?? JSONNull(),
            // A live stream's station and its current ICY title (null for files, whose tags MPRIS shows): what the
            // station broadcasts, asked for by the user's own `status`; the log never carries them.
            "station": liveStream.station.map { $0 as Any } ?? JSONNull(),
            "streamTitle": liveStream.title.map { $0 as Any } ?? JSONNull(),
            "volume": rules.volumePercent,
            "repeat": rules.repeatMode.rawValue,
            "shuffle": rules.shuffle != nil,
            "single": rules.single.rawValue,
            "consume": rules.consume,
            "replayGain": replayGainStatus,
            "lastError": lastError,
            "slowestHandlingMicros": handling.slowestMicros,
            // Input kinds only (`request add`, `stream corked`), never their content.
            "slowestHandlingKind": handling.slowestKind.map { $0 as Any } ?? JSONNull(),
            "slowestHandlingByKind": handling.slowestByKind,
            // Of the slowest: the owner thread's CPU time, and its switches off the CPU to wait or preempted.
            "slowestHandlingCPUMicros": handling.slowest?.sample.cpuMicros ?? 0,
            "slowestHandlingWaits": handling.slowest?.sample.waits ?? 0,
            "slowestHandlingPreemptions": handling.slowest?.sample.preemptions ?? 0,
            // How many inputs were handled, and how many took over 5 ms: waiting, preempted, or neither.
            "handledInputs": handling.handled,
            "slowHandlings": ["count": handling.slow.count, "waited": handling.slow.waited,
                              "preempted": handling.slow.preempted],
        ]
        // Rows 24 and 32: the live stream's buffer, counted (Player+Streams).
        return base.merging(liveBufferStatus) { first, _ in first }
    }

    /// The current track's station name and ICY title when it is a live stream; nil for files.
    var liveStream: (station: String?, title: String?) {
        guard currentPath?.isStreamURL == true else { return (nil, nil) }
        return (metadata?.album, metadata?.title)
    }

    /// What MPRIS shows: the playback, the current track and what a client may ask for.
    var mprisSnapshot: MPRISSnapshot {
        let status: MPRISSnapshot.PlaybackStatus
        switch rules.playback {
        case .playing: status = .playing
        case .paused: status = .paused
        case .idle, .stopped: status = .stopped
        }
        let path = currentPath
        let hasTrack = path != nil
        var snapshot = MPRISSnapshot(
            playbackStatus: status,
            trackId: hasTrack ? currentTrackId : nil,
            title: hasTrack ? metadata?.title : nil,
            artists: hasTrack ? (metadata?.artist).map { [$0] } ?? [] : [],
            album: hasTrack ? metadata?.album : nil,
            albumArtist: hasTrack ? metadata?.albumArtist : nil,
            trackNumber: hasTrack ? metadata?.trackNumber : nil,
            artPath: hasTrack ? artFile : nil,
            filePath: path,
            lengthMicroseconds: lengthMicroseconds,
            volume: Double(rules.volumePercent) / 100,
            canGoNext: hasTrack && rules.track(after: rules.queue.index, trackEnded: false) != nil,
            canGoPrevious: hasTrack,
            canPlay: hasTrack,
            canPause: hasTrack,
            canSeek: hasTrack,
            loopStatus: MPRISSnapshot.LoopStatus(rules.repeatMode),
            shuffle: rules.shuffle != nil)
        if hasTrack, let gain = replayGainStatus["source"] as? String {
            snapshot.replayGainSource = gain
            snapshot.replayGainDb = replayGainStatus["gainDb"] as? Double
        }
        return snapshot
    }
}
