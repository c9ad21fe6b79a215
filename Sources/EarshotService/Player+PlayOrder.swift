// Repeat and shuffle on the executor's side (see Player.swift): the rules decide the order; here it is handed to the
// decoder, which joins tracks in it, and to the state writer, which keeps it. The seed a shuffle starts from is drawn
// here, the core having no source of chance.
import AudioPipeline
import EarshotCore
import EarshotMPRIS

/// The rules' choices of order, as the decoder and the saved state follow them.
struct PlayModes: Equatable {
    /// What follows a track's end and the queue's end.
    var repeatMode: RepeatMode
    /// The shuffled order and its generator, nil when shuffle is off.
    var shuffle: ShuffleOrder?
    /// The queue's length the order is for.
    var trackCount: Int
    /// Whether the player stops after a track, and the track it stops after (a `oneshot`'s is the current one).
    var single: SingleMode
    /// The current track, which a `oneshot` stops after.
    var index: Int

    /// The modes of `rules` now.
    init(_ rules: PlayerState) {
        repeatMode = rules.repeatMode
        shuffle = rules.shuffle
        trackCount = rules.queue.trackCount
        single = rules.single
        index = rules.single == .oneshot ? rules.queue.index : 0
    }
}

extension Player {
    /// Hands the decoder the rules' order when it changed since it was last handed over: every boundary it decodes
    /// from then on follows it. Called after each decision.
    func followPlayOrder() {
        let modes = PlayModes(rules)
        guard modes != followedModes else { return }
        followedModes = modes
        // `auto` ReplayGain follows the shuffle: from the next track opened.
        worker.replayGain.set(replayGain, shuffled: modes.shuffle != nil)
        // The queue's own order needs no tables (the decoder goes on with the next index, and none after the last): an
        // `add` to a long queue, which changes the order's length, then builds none.
        guard !rules.followsQueueOrder else {
            worker.follow(TrackSuccessors(afterEnd: []))
            return
        }
        // After a failed track the decoder waits for the rules instead (`skipFailedTrack`).
        worker.follow(TrackSuccessors(afterEnd: rules.followingTracks(trackEnded: true)))
    }

    /// `repeat` and `shuffle` from a client (CLI, control socket, MPRIS): a fresh seed for each shuffle turned on.
    func choosePlayOrder(repeat mode: RepeatMode?, shuffle: Bool?) {
        if let mode { dispatch(.userRepeat(mode)) }
        if let shuffle { dispatch(.userShuffle(on: shuffle, seed: UInt64.random(in: .min ... .max))) }
    }

    /// The rules' repeat mode and shuffled order in their saved form.
    var savedPlayModes: SavedPlayModes {
        SavedPlayModes(repeatMode: rules.repeatMode.rawValue, shuffleOrder: rules.shuffle?.order,
                       shuffleState: rules.shuffle?.generator.state ?? 0, single: rules.single.rawValue,
                       consume: rules.consume)
    }

    /// Restores the saved order after the saved queue: an unknown repeat or single mode (a later version's) is off.
    func restorePlayModes(_ saved: SavedPlayModes) {
        let shuffle = saved.shuffleOrder.map {
            ShuffleOrder(order: $0, generator: ShuffleGenerator(seed: saved.shuffleState))
        }
        dispatch(.playModesRestored(repeat: RepeatMode(rawValue: saved.repeatMode) ?? .off, shuffle: shuffle,
                                    single: SingleMode(rawValue: saved.single) ?? .off, consume: saved.consume))
    }
}

extension RepeatMode {
    /// The repeat mode MPRIS `LoopStatus` names: `None` is off, `Track` the track, `Playlist` the queue.
    init(_ loop: MPRISSnapshot.LoopStatus) {
        switch loop {
        case .none: self = .off
        case .track: self = .track
        case .playlist: self = .queue
        }
    }
}

extension MPRISSnapshot.LoopStatus {
    /// MPRIS's name for `mode`.
    init(_ mode: RepeatMode) {
        switch mode {
        case .off: self = .none
        case .track: self = .track
        case .queue: self = .playlist
        }
    }
}
