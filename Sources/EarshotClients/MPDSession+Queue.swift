// MPD's queue commands in Earshot's terms: positions become the owner's `edit` and `jump` requests (the rules' rule
// 25), ids its requests by id (resolved on the owner in the same step), the queue's listing with its ids and versions answers `playlistid`, `plchanges` and
// `plchangesposid`, and `playlistfind`/`playlistsearch` ask the library which of its tracks match and list the queue's
// entries among them. `single` and `consume` are Earshot's own (rules 35-37).
import EarshotCore
import EarshotService
import MPDProtocol
import TrackPaths

extension MPDSession {
    /// The reply to a queue command, or nil when `command` is not one.
    func queueReply(_ command: MPDCommand, name: String) -> Result<String, MPDError>? {
        switch command {
        case .play(let position?): return jump(position, name)
        case .playid(let id?): return byID(.play(id: id), name)
        case .playid(nil): return perform(.play, name)
        case .seek(let position, let seconds): return seek(position, seconds, name)
        case .seekid(let id, let seconds): return byID(.seek(id: id, seconds: seconds), name)
        case .delete(let range):
            return queue(name).flatMap { queue in
                let end = min(range.end ?? queue.paths.count, queue.paths.count)
                return edit(.delete(start: range.start, end: end), name)
            }
        case .deleteid(let id): return byID(.delete(id: id), name)
        case .move(let range, let to):
            return queue(name).flatMap { queue in
                let end = min(range.end ?? queue.paths.count, queue.paths.count)
                return edit(.move(start: range.start, end: end, to: to), name)
            }
        case .moveid(let id, let to): return byID(.move(id: id, to: to), name)
        case .swap(let first, let second): return edit(.swap(first: first, second: second), name)
        case .swapid(let first, let second): return byID(.swap(first: first, second: second), name)
        case .shuffle(let range):
            return queue(name).flatMap { queue in
                let end = min(range?.end ?? queue.paths.count, queue.paths.count)
                let start = range?.start ?? 0
                // Fewer than two tracks: nothing to shuffle (MPD answers OK).
                guard end - start > 1 else { return .success("") }
                return edit(.shuffle(start: start, end: end, seed: 0), name)
            }
        case .add(let uri, let position?): return insert(uri, at: position, name).map { _ in "" }
        case .addid(let uri, let position): return insert(uri, at: position, name).map { "Id: \($0)\n" }
        case .playlistid(let id):
            return queue(name).flatMap { queue in
                guard let id else { return .success(queue.paths.indices.map(queue.songLines).joined()) }
                guard let position = queue.position(ofID: id) else {
                    return .failure(MPDError(.noExist, command: name, "No such song"))
                }
                return .success(queue.songLines(position))
            }
        case .plchanges(let version, let range), .plchangesposid(let version, let range):
            let positionsOnly = name == "plchangesposid"
            return queue(name).map { queue in
                let positions = queue.positions(range.map { ($0.start, $0.end) }) ?? 0..<0
                return positions.filter { !queue.versions.indices.contains($0) || queue.versions[$0] > version }
                    .map { positionsOnly ? "cpos: \($0)\nId: \(queue.id($0))\n" : queue.songLines($0) }.joined()
            }
        case .playlistfind(let words), .playlistsearch(let words):
            return matching(words, exact: name == "playlistfind", name)
        case .prio, .prioid: return .success("")
        case .crossfade(let seconds):
            return seconds == 0 ? .success("")
                : .failure(MPDError(.argument, command: name, "Earshot has no crossfade (gapless only)"))
        case .single(let mode): return single(mode, name)
        case .consume(let on): return perform(.consume(on: on), name)
        case .clearerror: return .success("")
        default: return nil
        }
    }

    /// `single 0|1|oneshot` is Earshot's single (rules 35 and 36), which with repeat on plays the track again as MPD's
    /// does. Earshot's own `repeat track` reads as MPD's repeat with single: `single 0` turns it into the queue's
    /// repeat, so that the client's single is off as it asked.
    private func single(_ mode: String, _ name: String) -> Result<String, MPDError> {
        let single: SingleMode = mode == "oneshot" ? .oneshot : mode == "1" ? .on : .off
        return perform(.single(single), name).flatMap { _ in
            guard single == .off else { return .success("") }
            return status().flatMap { status in
                status["repeat"] as? String == "track" ? perform(.repeatMode(.queue), name) : .success("")
            }
        }
    }

    /// Plays the track at `position` (the rules' chosen track).
    private func jump(_ position: Int, _ name: String) -> Result<String, MPDError> {
        reply(to: .jump(index: position), name, missing: "Bad song index").map { _ in "" }
    }

    /// Seeks to `seconds` in the track at `position`: the current one at once, another after choosing it.
    private func seek(_ position: Int, _ seconds: Double, _ name: String) -> Result<String, MPDError> {
        status().flatMap { status in
            let current = Self.integer(status["trackIndex"]) == position && status["playback"] as? String != "stopped"
            if !current, case .failure(let error) = jump(position, name) { return .failure(error) }
            return perform(.seek(seconds: seconds), name)
        }
    }

    /// Sends `edit`; an edit that does not fit the queue is MPD's bad index.
    private func edit(_ edit: QueueEdit, _ name: String) -> Result<String, MPDError> {
        reply(to: .edit(edit, paths: []), name, missing: "Bad song index").map { _ in "" }
    }

    /// Sends a command on entries named by id, which the owner resolves as it carries it out (no other client's
    /// edit can come between reading the queue and naming a position): an id no entry has is MPD's "No such song", a
    /// position that does not fit its bad index.
    private func byID(_ request: EntryIDRequest, _ name: String) -> Result<String, MPDError> {
        reply(to: .byID(request), name, missing: "Bad song index").map { _ in "" }.mapError { error in
            error.message == "No such song" ? MPDError(.noExist, command: name, "No such song") : error
        }
    }

    /// Inserts the library's file `uri` at `position` (`N`, or `+N`/`-N` from the current track; nil: the end) and
    /// returns the new entry's id.
    private func insert(_ uri: String, at position: String?, _ name: String) -> Result<Int, MPDError> {
        let found = reply(to: .libraryQuery(verb: "find", words: ["file", uri], tags: true), name)
        guard case .success(let object) = found else { return found.map { _ in 0 } }
        let paths = (object["tracks"] as? [Any] ?? []).compactMap { ($0 as? [String: Any])?["path"] }
            .compactMap(TrackPath.init(jsonValue:))
        guard let path = paths.first else { return .failure(MPDError(.noExist, command: name, "No such song")) }
        return queue(name).flatMap { queue in
            var at = queue.paths.count
            if let position {
                let relative = position.first == "+" || position.first == "-"
                guard let offset = Int(relative && position.first == "+" ? String(position.dropFirst()) : position)
                else { return .failure(MPDError(.argument, command: name, "Integer expected: \(position)")) }
                at = relative ? queue.current + (position.first == "+" ? 1 : 0) + offset : offset
                guard (0...queue.paths.count).contains(at) else {
                    return .failure(MPDError(.argument, command: name, "Bad song index"))
                }
            }
            let request: ControlRequest = at == queue.paths.count && position == nil
                ? .add(paths: [path]) : .edit(.insert(count: 1, at: at), paths: [path])
            return reply(to: request, name).flatMap { _ in
                self.queue(name).map { $0.id(at) }
            }
        }
    }

    /// The queue's entries among the library's tracks that `words` (tag/value pairs) find or search.
    private func matching(_ words: [String], exact: Bool, _ name: String) -> Result<String, MPDError> {
        guard words.count % 2 == 0 else {
            return .failure(MPDError(.argument, command: name, "Incorrect number of filter arguments"))
        }
        let lowered = words.enumerated().map { index, word in index % 2 == 0 ? word.lowercased() : word }
        let found = reply(to: .libraryQuery(verb: exact ? "find" : "search", words: lowered, tags: true), name)
        return found.flatMap { object in
            let tracks = (object["tracks"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
            let paths = Set(tracks.compactMap { $0["path"] as? String })
            return queue(name).map { queue in
                queue.paths.indices.filter { paths.contains(queue.paths[$0]) }.map(queue.songLines).joined()
            }
        }
    }
}
