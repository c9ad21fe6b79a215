// The music library in the service: where it is (the configuration's music folders, the cache's database), how its
// reports reach the log and the owner's status, and how the control server answers its requests on the client's
// thread (which may wait), never on the owner's. `findadd` and `searchadd` queue what they match through the owner's
// own `add`, as `earshot add` does: the rules decide what becomes of it.
import EarshotClients
import EarshotJSON
import EarshotService
import MusicLibrary
import SystemSupport
import TrackPaths

/// Making the library and answering its requests.
enum LibraryWiring {
    /// The music folders: the configuration's (`~/` expanded), else the XDG music folder.
    static func musicFolders(_ configuration: PlayerConfiguration, environment: [String: String]) -> [TrackPath] {
        guard let configured = configuration.musicDirectories else {
            return [TrackPath(LibraryLocations.defaultMusicDirectory(environment: environment))]
        }
        let home = environment["HOME"] ?? "/"
        return configured.map { folder in
            TrackPath(folder.hasPrefix("~/") ? home + folder.dropFirst(1) : folder)
        }
    }

    /// The library of the service, reporting into `log` (kinds and counts) and `inbox` (for status). Not started.
    static func make(_ configuration: PlayerConfiguration, log: EventLog, inbox: PlayerInbox) -> MusicLibraryService {
        let environment = ProcessEnvironment.current
        // Scans finished so far (the library's thread alone reports; the lock is for Swift's checking).
        let finished = LockedValue(0)
        // The last measuring pass's counts, shown with every status the library sends after it.
        let loudness = LockedValue<LoudnessCounts?>(nil)
        let send: @Sendable (LibraryStatus) -> Void = { status in
            var status = status
            if let counts = loudness.withLock({ $0 }) {
                status.gainsMeasured = counts.withMeasuredGain
                status.gainsToMeasure = counts.toMeasure
            }
            inbox.library(status)
        }
        // The status last sent, which a measuring pass's counts complete.
        let last = LockedValue(LibraryStatus(scanning: false))
        let remember: @Sendable (LibraryStatus) -> Void = { status in
            last.withLock { $0 = status }
            send(status)
        }
        return MusicLibraryService(
            databasePath: LibraryLocations.databasePath(environment: environment),
            roots: musicFolders(configuration, environment: environment)
        ) { report in
            switch report {
            case .opened(let opening):
                switch opening {
                case .current: log.record("library", ["database": "opened"])
                case .created: log.record("library", ["database": "created"])
                case .migrated(let version): log.record("library", ["database": "migrated", "from": "\(version)"])
                case .setAside(let reason):
                    log.record("library", ["database": "setAsideAndRebuilt", "reason": reason])
                }
            case .unavailable(let reason):
                log.record("library", ["database": "unavailable", "reason": reason])
                remember(LibraryStatus(scanning: false, problem: "unavailable (\(reason))"))
            case .scanning(let done, let toDo):
                if done == 0 { log.record("library", ["scan": "started", "toRead": "\(toDo)"]) }
                remember(LibraryStatus(scanning: true, filesDone: done, filesToDo: toDo,
                                            scansFinished: finished.withLock { $0 }))
            case .scanned(let counts, let tracks, let milliseconds):
                let skipped = counts.skipped.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
                log.record("library", [
                    "scan": "finished", "read": "\(counts.read)", "unchanged": "\(counts.unchanged)",
                    "removed": "\(counts.removed)", "playlists": "\(counts.playlists)", "hidden": "\(counts.hidden)",
                    "skipped": skipped.isEmpty ? "none" : skipped.joined(separator: ","), "tracks": "\(tracks)",
                    "ms": "\(milliseconds)",
                ])
                let count = finished.withLock { count in
                    count += 1
                    return count
                }
                remember(LibraryStatus(scanning: false, filesDone: counts.read, filesToDo: counts.read,
                                            tracks: tracks, skipped: counts.skipped, scansFinished: count))
            case .watching(let watching, let reason):
                if watching {
                    log.record("library", ["watch": "started"])
                } else {
                    log.record("library", ["watch": "unavailable", "reason": reason ?? ""])
                }
            case .measured(let counts, let milliseconds):
                log.record("library", [
                    "loudness": "measured", "tracks": "\(counts.measured)", "failed": "\(counts.failed)",
                    "withMeasuredGain": "\(counts.withMeasuredGain)", "toMeasure": "\(counts.toMeasure)",
                    "ms": "\(milliseconds)",
                ])
                loudness.withLock { $0 = counts }
                send(last.withLock { $0 })
            case .scanFailed(let reason):
                log.record("library", ["scan": "failed", "reason": reason])
                let count = finished.withLock { count in
                    count += 1
                    return count
                }
                remember(LibraryStatus(scanning: false, problem: "scan failed (\(reason))", scansFinished: count))
            }
        }
    }

    /// The reply to `request` when it is the library's, answered here on the client's thread; nil for any other
    /// request (the owner answers those). `add` hands paths to the owner's `add` and returns its reply line.
    static func answer(
        _ request: ControlRequest, library: MusicLibraryService, add: ([TrackPath]) -> String
    ) -> String? {
        switch request {
        case .update(let path, let rescan):
            library.requestScan(below: path, rescan: rescan)
            return ControlReply.success(["scan": "queued"])
        case .browse(let path):
            do {
                let (folders, files) = try library.listing(path)
                return ControlReply.success([
                    "folders": folders.compactMap { TrackPath(bytes: $0)?.jsonValue },
                    "files": files.map(trackObject),
                ])
            } catch {
                return ControlReply.failure(error.description)
            }
        case .libraryQuery(let verb, let words, let tags):
            let query: LibraryQuery
            let selection: LibrarySelection
            switch LibrarySelection.split(verb: verb, words).flatMap({ split in
                LibraryQuery.parse(verb: verb, split.words).map { ($0, split.selection) }
            }) {
            case .success(let parsed): (query, selection) = parsed
            // `refusal` lets the MPD front-end answer a malformed query as MPD does (an argument error).
            case .failure(let error):
                return ControlReply.line(["ok": false, "error": error.message, "refusal": "query"])
            }
            do {
                // A `base` naming no folder is refused, as MPD refuses it (its front-end's "No such directory").
                if let base = query.base, try !library.hasFolder(base) {
                    return ControlReply.line(["ok": false, "error": "No such directory", "refusal": "missing"])
                }
                if case .list(let tag, let terms) = query {
                    return ControlReply.success(["tag": tag.rawValue,
                                                 "values": try library.values(of: tag, matching: terms)])
                }
                if case .grouped(let tag, let groups, let expression) = query {
                    let filter = expression.map { LibraryFilter(expression: $0, folded: false) }
                        ?? LibraryFilter(terms: [], searching: false)
                    return ControlReply.success([
                        "tag": tag.rawValue, "groups": groups.map(\.rawValue),
                        "rows": try library.groupedValues(of: tag, groups: groups, where: filter),
                    ])
                }
                if case .filter(let expression, let folded, let tag?) = query {
                    let filter = LibraryFilter(expression: expression, folded: folded)
                    return ControlReply.success(["tag": tag.rawValue,
                                                 "values": try library.values(of: tag, where: filter)])
                }
                let tracks = selection.apply(try library.tracks(query)) { $0.sortValue($1) }
                guard verb.hasSuffix("add") else {
                    // Paths alone unless every field is asked for: a search matching thousands of tracks answers
                    // in a tenth of the bytes, and the client parses no more than it prints.
                    return ControlReply.success(["tracks": tags ? tracks.map(trackObject)
                                                                : tracks.map { ["file": $0.relative.jsonValue] }])
                }
                guard !tracks.isEmpty else { return ControlReply.success(["added": 0]) }
                let reply = add(tracks.map(\.absolute))
                guard let object = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any],
                      object["ok"] as? Bool == true else { return reply }
                return ControlReply.success(["added": tracks.count, "status": object["status"] ?? JSONNull()])
            } catch {
                return ControlReply.failure(error.description)
            }
        default:
            return nil
        }
    }

    /// A track as a reply gives it: its path below its music folder (`file`, what mpc prints), its full path, and
    /// its tags, length and rate where known.
    static func trackObject(_ entry: LibraryEntry) -> [String: Any] {
        var object: [String: Any] = ["file": entry.relative.jsonValue, "path": entry.absolute.jsonValue,
                                     "kind": entry.kind.rawValue, "cover": entry.hasCover]
        let tags = entry.tags
        let texts: [(String, String?)] = [
            ("title", tags.title), ("artist", tags.artist), ("albumartist", tags.albumArtist), ("album", tags.album),
            ("genre", tags.genre), ("date", tags.date), ("composer", tags.composer),
            ("musicbrainz_trackid", tags.musicBrainz.track), ("musicbrainz_albumid", tags.musicBrainz.album),
            ("musicbrainz_artistid", tags.musicBrainz.artist),
            ("musicbrainz_albumartistid", tags.musicBrainz.albumArtist),
        ]
        for (key, value) in texts { if let value { object[key] = value } }
        if let track = tags.trackNumber { object["track"] = track }
        if let disc = tags.discNumber { object["disc"] = disc }
        if let seconds = entry.durationSeconds { object["durationMs"] = Int((seconds * 1000).rounded()) }
        if let rate = entry.sampleRate { object["sampleRate"] = rate }
        return object
    }
}
