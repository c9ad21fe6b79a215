// The player's side of cover pictures (see Player.swift): a started track's picture is handed to the cover worker,
// which stores it off the owner's thread, and what became of it comes back through the inbox.
import AudioPipeline
import SystemSupport

extension Player {
    /// Keeps what the decoder told of the track at `index` (started, or started again after a seek), and hands its
    /// picture, if it has one, to the cover worker: the owner neither reads, hashes nor writes it.
    func recordStartedTrack(_ index: Int, format: AudioFormat, lengthFrames: Int?, metadata: TrackMetadata) {
        let known = tracks[index]
        var metadata = metadata
        let dropped = metadata.replayGain.problems
        if !dropped.isEmpty {
            // Kinds and counts only, never the text of the tag.
            let counts = ReplayGainProblem.allCases.compactMap { problem -> String? in
                let count = dropped.filter { $0 == problem }.count
                return count > 0 ? "\(problem.rawValue)=\(count)" : nil
            }
            log.record("replaygain", ["track": "\(index + 1)", "droppedValues": counts.joined(separator: ",")])
        }
        var skipShown = known?.coverSkipShown ?? false
        if let picture = metadata.cover {
            // `coverSettled` hears back; the picture's bytes (read from the file by the worker) are not kept here.
            covers.submit(CoverArtJob(index: index, queueGeneration: queueGeneration, picture: picture))
            metadata.cover = nil
        } else if let reason = metadata.coverProblem, !skipShown {
            skipShown = true
            showCoverSkipped(index: index, reason: reason)
        }
        // A track started again keeps the picture stored for it; the worker confirms it (from its recent stores).
        tracks[index] = TrackInfo(format: format, lengthFrames: lengthFrames, metadata: metadata,
                                  artFile: known?.artFile, coverSkipShown: skipShown)
    }

    /// What the cover worker made of a track's picture: MPRIS names the stored file from the next publish on.
    func coverSettled(_ job: CoverArtJob, _ outcome: CoverArtOutcome) {
        // A picture of a queue since replaced, or of a track no longer kept, has no place to go.
        guard job.queueGeneration == queueGeneration, var info = tracks[job.index] else { return }
        switch outcome {
        case .stored(let path):
            info.artFile = path
        case .skipped(let reason):
            guard !info.coverSkipShown else { return }
            info.coverSkipShown = true
            showCoverSkipped(index: job.index, reason: reason)
        }
        tracks[job.index] = info
    }

    /// Says why track `index`'s picture is not shown, once per track; the reason names no path and no tag text.
    func showCoverSkipped(index: Int, reason: String) {
        log.tellUser("earshot: track \(index + 1) of \(paths.count): cover art skipped: \(reason)\n")
    }
}
