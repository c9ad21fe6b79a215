// Internet streams in the player: a station's tags change while it plays (ICY titles), and status and MPRIS follow.
import AudioPipeline

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
