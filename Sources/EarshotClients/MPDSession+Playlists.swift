// MPD's stored-playlist commands in Earshot's terms: the files are read and written on the client's thread
// (MPDStoredPlaylists); `save` takes the queue as the owner lists it, `load` hands the playlist's paths to the owner's
// `add` (the CLI's request, which the rules take like any addition), `playlistadd` resolves a library file to its
// path. A change is noted in `changed`, which the server reports to idle clients as `stored_playlist`.
import EarshotService
import MPDProtocol
import TrackPaths

extension MPDSession {
    /// The reply to a stored-playlist command, or nil when `command` is not one.
    mutating func playlistReply(_ command: MPDCommand, name: String) -> Result<String, MPDError>? {
        let changing: Bool
        switch command {
        case .listplaylists, .listplaylist, .listplaylistinfo, .load: changing = false
        case .save, .playlistadd, .playlistclear, .playlistdelete, .rm, .rename: changing = true
        default: return nil
        }
        guard let playlists else {
            return .failure(MPDError(.unknown, command: name, "stored playlists are not configured"))
        }
        let result = playlistReply(command, playlists, name)
        if changing, case .success = result { changed.insert(.storedPlaylist) }
        return result
    }

    private func playlistReply(
        _ command: MPDCommand, _ playlists: MPDStoredPlaylists, _ name: String
    ) -> Result<String, MPDError> {
        func failed(_ failure: MPDStoredPlaylists.Failure) -> MPDError {
            switch failure {
            case .badName: return MPDError(.argument, command: name, "Bad playlist name")
            case .noSuchPlaylist: return MPDError(.noExist, command: name, "No such playlist")
            case .exists: return MPDError(.exist, command: name, "Playlist already exists")
            case .badIndex: return MPDError(.argument, command: name, "Bad song index")
            case .system(let kind): return MPDError(.system, command: name, "the playlist folder refused (\(kind))")
            }
        }
        func done(_ result: Result<Void, MPDStoredPlaylists.Failure>) -> Result<String, MPDError> {
            result.map { "" }.mapError(failed)
        }
        switch command {
        case .listplaylists:
            return .success(playlists.list().map { "playlist: \($0.name)\nLast-Modified: \($0.modified)\n" }.joined())
        case .listplaylist(let playlist), .listplaylistinfo(let playlist):
            return playlists.read(playlist).mapError(failed).map { paths in
                paths.map { "file: \($0.string ?? "(not UTF-8)")\n" }.joined()
            }
        case .load(let playlist, let range):
            return playlists.read(playlist).mapError(failed).flatMap { paths in
                let start = range?.start ?? 0
                let end = min(range?.end ?? paths.count, paths.count)
                guard start <= paths.count else {
                    return .failure(MPDError(.argument, command: name, "Bad song index"))
                }
                guard start < end else { return .success("") }
                return reply(to: .add(paths: Array(paths[start..<end])), name).map { _ in "" }
            }
        case .save(let playlist):
            guard MPDStoredPlaylists.isValid(playlist) else { return .failure(failed(.badName)) }
            // The owner's listing, read as paths (bytes, not their display text).
            return reply(to: .queue, name).flatMap { object in
                let paths = (object["queue"] as? [Any] ?? []).compactMap(TrackPath.init(jsonValue:))
                return done(playlists.write(playlist, paths, mustBeNew: true))
            }
        case .playlistadd(let playlist, let uri):
            guard MPDStoredPlaylists.isValid(playlist) else { return .failure(failed(.badName)) }
            return libraryPath(uri, name).flatMap { path in
                done(playlists.modify(playlist, create: true) { paths in
                    paths.append(path)
                    return .success(())
                })
            }
        case .playlistclear(let playlist):
            return done(playlists.modify(playlist, create: true) { paths in
                paths = []
                return .success(())
            })
        case .playlistdelete(let playlist, let position):
            return done(playlists.modify(playlist) { paths in
                guard paths.indices.contains(position) else { return .failure(.badIndex) }
                paths.remove(at: position)
                return .success(())
            })
        case .rm(let playlist): return done(playlists.remove(playlist))
        case .rename(let playlist, let newName): return done(playlists.rename(playlist, to: newName))
        default: return .failure(MPDError(.unknown, "unknown command \"\(name)\""))
        }
    }

    /// The full path of the library's file `uri` (MPD's URI: its path below the music folder), or "No such song".
    func libraryPath(_ uri: String, _ name: String) -> Result<TrackPath, MPDError> {
        reply(to: .libraryQuery(verb: "find", words: ["file", uri], tags: true), name).flatMap { object in
            let paths = (object["tracks"] as? [Any] ?? []).compactMap { ($0 as? [String: Any])?["path"] }
                .compactMap(TrackPath.init(jsonValue:))
            guard let path = paths.first else { return .failure(MPDError(.noExist, command: name, "No such song")) }
            return .success(path)
        }
    }
}
