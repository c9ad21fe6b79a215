// The queue edited in place (delete, move, swap, insert at a position, shuffle a range) and a track chosen to play:
// the executor's half. The edit is checked against the queue, applied to the paths, the tracks' known facts and the
// entries' ids by the same arrangement the rules apply to their cursor (EarshotCore's QueueEdits.swift), then handed
// to the rules, which decide what the decoder and the stream do.
import AudioPipeline
import EarshotCore
import TrackPaths

extension Player {
    /// Applies `edit` (an insertion adds `newPaths`); nil when done, or the reason it was refused.
    func editQueue(_ edit: QueueEdit, paths newPaths: [TrackPath]) -> String? {
        var edit = edit
        if case .shuffle(let start, let end, _) = edit {
            edit = .shuffle(start: start, end: end, seed: UInt64.random(in: .min ... .max))
        }
        if case .insert(let count, _) = edit, count != newPaths.count { return "bad insertion" }
        guard let arrangement = edit.arrangement(ofTrackCount: paths.count) else { return "Bad song index" }
        // The cursor first follows what the listener heard: a boundary crossed since the last tick counts as the
        // current track the edit keeps or removes.
        if !observeListener() { settleAtHeardPosition() }
        rearrange(arrangement, inserting: newPaths, kind: Self.editKind(edit))
        dispatch(.queueEdited(edit))
        saveState()
        return nil
    }

    /// Carries out a command on entries named by id, resolved here in the same step (no other request comes between);
    /// nil when done, or the reason it was refused.
    func perform(_ request: EntryIDRequest) -> String? {
        let missing = "No such song"
        switch request {
        case .play(let id):
            guard let index = identities.position(ofID: id) else { return missing }
            return jump(to: index)
        case .delete(let id):
            guard let index = identities.position(ofID: id) else { return missing }
            return editQueue(.delete(start: index, end: index + 1), paths: [])
        case .move(let id, let to):
            guard let index = identities.position(ofID: id) else { return missing }
            return editQueue(.move(start: index, end: index + 1, to: to), paths: [])
        case .swap(let first, let second):
            guard let one = identities.position(ofID: first), let other = identities.position(ofID: second) else {
                return missing
            }
            return editQueue(.swap(first: one, second: other), paths: [])
        case .seek(let id, let seconds):
            guard let index = identities.position(ofID: id) else { return missing }
            if !observeListener() { settleAtHeardPosition() }
            // Another track (or a stopped one) is chosen first, as the user's play of it; then the seek.
            if index != rules.queue.index || rules.playback == .stopped, let refusal = jump(to: index) {
                return refusal
            }
            // A live stream refuses a seek (row 31): `seekid` says so as `seek` does.
            if let refused = dispatchRefusable(.userSeek(milliseconds: Int(seconds * 1000))) {
                return "cannot seek: " + refused.explanation
            }
            return nil
        }
    }

    /// Carries out `removeTrack` (consume, rule 37): the track the listener left goes from the paths, facts and ids;
    /// the rules have taken the deletion into their cursor already.
    func removeConsumedTrack(at index: Int) {
        guard let arrangement = QueueEdit.delete(start: index, end: index + 1).arrangement(ofTrackCount: paths.count)
        else { return }
        rearrange(arrangement, inserting: [], kind: "consume")
        saveState()
    }

    /// Applies `arrangement` (QueueEdit's) to the paths, the tracks' facts and the ids, `newPaths` filling its new
    /// places, and logs it as edit `kind`.
    private func rearrange(_ arrangement: [Int?], inserting newPaths: [TrackPath], kind: String) {
        saving.queueDidChange()
        var inserted = newPaths.makeIterator()
        paths = TrackList(arrangement.map { old in old.map { paths[$0] } ?? inserted.next()! })
        var moved: [Int: TrackInfo] = [:]
        for (position, old) in arrangement.enumerated() {
            if let old, let info = tracks[old] { moved[position] = info }
        }
        tracks = moved
        identities.rearrange(arrangement)
        // Cover jobs under way name positions of the queue before: their results are dropped.
        queueGeneration += 1
        announcedTrack = nil
        log.record("queue", ["edit": kind, "tracks": "\(paths.count)"])
    }

    /// Plays the track at `index` as the user's play; nil when done, or the reason it was refused.
    func jump(to index: Int) -> String? {
        guard paths.indices.contains(index) else { return "Bad song index" }
        if !observeListener() { settleAtHeardPosition() }
        dispatch(.userPlayTrack(index: index))
        return nil
    }

    /// Carries out `requeue`: the decoder drops what it decoded ahead and takes the edited queue from the frame the
    /// listener last heard of the current track, now at `index`.
    func requeue(at index: Int) {
        let heard = currentHeardPosition()
        let rate = tracks[index]?.format.sampleRate ?? heard?.sampleRate ?? 44_100
        reposition(to: TrackPosition(trackIndex: index, frame: heard?.frame ?? 0, sampleRate: rate))
    }

    /// The edit's kind for the log (positions only are no user content, but the kind is all the log needs).
    private static func editKind(_ edit: QueueEdit) -> String {
        switch edit {
        case .delete: return "delete"
        case .move: return "move"
        case .swap: return "swap"
        case .insert: return "insert"
        case .shuffle: return "shuffle"
        }
    }
}
