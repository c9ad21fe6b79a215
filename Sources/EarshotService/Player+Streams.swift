// Internet streams in the player: a station's tags change while it plays (ICY titles), and status and MPRIS follow.
import AudioPipeline
import EarshotCore
import EarshotJSON

extension Player {
    /// The live stream at `index` has new tags: they replace the track's, and MPRIS publishes them.
    func streamMetadataChanged(_ index: Int, _ metadata: TrackMetadata) {
        guard var info = tracks[index] else { return }
        info.metadata = metadata
        tracks[index] = info
        // Kinds only: never the title's text.
        log.record("stream", ["track": "\(index + 1)", "titleChanged": metadata.title == nil ? "cleared" : "set"])
        publish()
    }
}

// Live streams in the rules (RULES.md rows 24 and 30-33): the executor performs the rules' rejoin and refusal.
extension Player {
    /// Rows 32 and 33: the live stream drops what its buffer and the ring hold, and goes on from its live edge; the
    /// playback stays as the rules left it (a paused player stays corked). Said in the log and in status, by kind.
    func rejoinLive(_ reason: LiveRejoin) {
        lastLiveRejoin = reason
        let dropped = worker.liveBuffer.counts
        log.record("live", ["rejoined": reason.description, "droppedMs": "\(dropped?.milliseconds ?? 0)",
                            "droppedBytes": "\(dropped?.bytes ?? 0)"])
        let index = rules.queue.index
        let position = currentHeardPosition()
            ?? TrackPosition(trackIndex: index, frame: 0, sampleRate: tracks[index]?.format.sampleRate ?? 44_100)
        reposition(to: position, rejoinLive: true)
    }

    /// Rows 31 and 33: the rules turned the request down; the front-end that asked answers with the reason.
    func refuse(_ reason: Refusal) {
        refusal = reason
        log.record("refused", ["reason": reason.description])
    }

    /// Dispatches a user's `event` and returns the rules' refusal of it, if they refused it.
    func dispatchRefusable(_ event: Event) -> Refusal? {
        refusal = nil
        dispatch(event)
        defer { refusal = nil }
        return refusal
    }

    /// What status shows of the live stream's buffer: its bytes and how far behind live its oldest byte is, the bytes
    /// dropped, and the last rejoin's reason. Null fields for files.
    var liveBufferStatus: [String: Any] {
        let counts = worker.liveBuffer.counts.flatMap { $0.index == rules.queue.index ? $0 : nil }
        return [
            "liveBufferBytes": counts.map { $0.bytes as Any } ?? JSONNull(),
            "liveBufferMs": counts.map { $0.milliseconds as Any } ?? JSONNull(),
            "liveDroppedBytes": counts.map { Int($0.droppedBytes) as Any } ?? JSONNull(),
            "liveRejoined": lastLiveRejoin.map { $0.description as Any } ?? JSONNull(),
            "liveBufferMinutes": configuration.liveBufferSeconds / 60,
            // Rows 38-41: the station's connection, while lost: `reconnecting`, `waiting`, `gaveUp` or `ended`.
            "liveNetwork": rules.liveReconnection.map { $0.phase.description as Any } ?? JSONNull(),
        ]
    }
}
