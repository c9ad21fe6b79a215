// The network under a live stream in the player (rows 38-41, EarshotCore's LiveNetwork.swift): the fetch's reports
// become the rules' events, stamped with the owner's clock, and the rules' reconnections and ends are performed. The
// owner never waits for the network: a reconnection starts a fetch thread and returns.
import AudioPipeline
import EarshotCore

extension Player {
    /// The live stream at `index` lost its connection, was answered again, or ran dry: the rules decide.
    func liveNetworkNoticed(_ notice: LiveNetworkNotice, index: Int) {
        switch notice {
        case .lost(let end):
            let loss = Self.loss(of: end)
            log.record("live", ["connection": "lost", "kind": loss.description])
            dispatch(.liveStreamLost(index: index, loss, at: eventMoment()))
        case .connected:
            dryLiveStream = nil
            // The log names a connection back; a first one is the station's start, logged with it.
            if rules.live?.index == index, rules.live?.reconnection != nil {
                log.record("live", ["connection": "reconnected"])
            }
            dispatch(.liveStreamReconnected(index: index, at: eventMoment()))
        case .ranDry:
            // The ring still holds what was decoded before: the rules hear of it once the output has read it all.
            dryLiveStream = (index, ring.totalFramesWritten)
            reportDryLiveStreamWhenPlayedOut()
        }
    }

    /// Row 40: the dry station's last decoded audio has been read by the output (the tick looks while playing): the
    /// rules hear that it ran dry. True when that quieted the player.
    @discardableResult
    func reportDryLiveStreamWhenPlayedOut() -> Bool {
        guard let dry = dryLiveStream, ring.totalFramesRead >= dry.ringFrame else { return false }
        dryLiveStream = nil
        let wasPlaying = rules.isPlaying
        dispatch(.liveStreamRanDry(index: dry.index))
        return wasPlaying && !rules.isPlaying
    }

    /// The frames until the dry station's last decoded audio is read, for the tick's timer.
    var framesUntilDryLiveStreamPlayedOut: Int? {
        dryLiveStream.map { max($0.ringFrame - ring.totalFramesRead, 0) }
    }

    /// Row 38: another fetch of the station into its buffer. A station no longer open (its decoder let go) has
    /// nothing to reconnect, which the rules hear as such; one connected, or with an attempt under way, has its
    /// answer on the way already.
    func reconnectLiveStream(_ index: Int) {
        switch worker.liveBuffer.reconnect(index: index) {
        case .started:
            log.record("live", ["connection": "reconnecting"])
        case .underWay:
            log.record("live", ["connection": "reconnect", "skipped": "underWay"])
        case .notOpen:
            log.record("live", ["connection": "reconnect", "error": "notOpen"])
            dispatch(.liveStreamNotOpen(index: index))
        }
    }

    /// Row 39: the station ended; its decoder plays out what it received, and the track ends as any does.
    func endLiveStream(_ index: Int) {
        log.record("live", ["connection": "ended"])
        worker.liveBuffer.end(index: index)
    }

    /// What the fetch's end is in the rules' terms (a kind, never an address or a server's text). Only a 404 or a 410
    /// says the mount is gone; a proxy's 502 or 503 while its origin restarts, a 500, a page where audio was expected
    /// are the network's failures, waited out with the backoff.
    static func loss(of end: LiveConnectionEnd) -> LiveStreamLoss {
        switch end {
        case .serverClosed: return .closedByServer
        case .plainResponseClosed: return .plainResponseClosed
        case .mountGone: return .mountGone
        case .refused: return .networkFailed(.refused)
        case .connectionRefused: return .networkFailed(.connectionRefused)
        case .connectionLost: return .networkFailed(.connectionLost)
        case .timedOut: return .networkFailed(.timedOut)
        case .unresolvedHost: return .networkFailed(.unresolvedHost)
        case .tls: return .networkFailed(.tls)
        case .other: return .networkFailed(.other)
        }
    }
}
