// The commands of MPD's protocol that Earshot answers, typed: a request's name and arguments checked as MPD checks
// them (how many, which are numbers, ranges or Booleans) and turned into one value the server translates into the
// player's requests. Every name not in `MPDCommand.names` is MPD's unknown command; nothing is silently accepted.
// Pure: a request in, a command or an `MPDError` out.

/// The change kinds `idle` waits for (MPD's subsystems). Earshot reports the first six; the others are accepted
/// (a client may name them) and never happen.
public enum MPDSubsystem: String, Sendable, Equatable, Hashable, CaseIterable {
    case database, update, playlist, player, mixer, options
    case storedPlaylist = "stored_playlist", output, sticker, subscription, message, partition, neighbor, mount
}

/// The part of the queue a range argument names: `N`, `START:END` (end excluded) or `START:` (to the end).
public struct MPDRange: Sendable, Equatable {
    /// The first position.
    public var start: Int
    /// The position after the last, or nil for the end of the queue.
    public var end: Int?

    /// The range from `start` to `end` (excluded; nil for the end of the queue).
    public init(start: Int, end: Int?) {
        self.start = start
        self.end = end
    }
}

/// How `seekcur` moves: to a time, or by a signed amount from where the track is.
public enum MPDSeek: Sendable, Equatable {
    /// To `seconds` from the track's start.
    case to(seconds: Double)
    /// By `seconds` (negative: back) from the present position.
    case by(seconds: Double)
}

/// One command of MPD's protocol, its arguments checked.
public enum MPDCommand: Sendable, Equatable {
    // The connection.
    case ping, close, commands, notcommands, urlhandlers, decoders
    /// `tagtypes` with its optional sub-command and tags (`clear`, `all`, `enable`, `disable`), kept as sent.
    case tagtypes([String])
    /// `binarylimit SIZE`: the largest binary chunk (`albumart`, `readpicture`) the client takes, at least 64.
    case binarylimit(Int)
    /// `password PASSWORD`: Earshot has no passwords.
    case password(String)
    /// `idle [SUBSYSTEM...]`; an empty set waits for any.
    case idle(Set<MPDSubsystem>)

    // What is playing.
    case status, currentsong, stats, clearerror

    // The transport.
    /// `play [POSITION]`.
    case play(position: Int?)
    /// `playid [ID]`.
    case playid(id: Int?)
    /// `pause 1` (true), `pause 0` (false: the user's play), or bare `pause`, the old toggle (nil).
    case pause(Bool?)
    case stop, next, previous
    /// `seek POSITION TIME`.
    case seek(position: Int, seconds: Double)
    /// `seekid ID TIME`.
    case seekid(id: Int, seconds: Double)
    /// `seekcur TIME`, `seekcur +TIME` or `seekcur -TIME`.
    case seekcur(MPDSeek)
    /// `setvol VOLUME`, 0 to 100.
    case setvol(Int)
    /// `volume CHANGE`, -100 to 100.
    case volume(change: Int)
    case getvol
    /// `repeat 0|1`.
    case `repeat`(Bool)
    /// `random 0|1`.
    case random(Bool)
    /// `single 0|1|oneshot`, kept as sent.
    case single(String)
    /// `consume 0|1` (MPD 0.23 has no consume `oneshot`: it came with 0.24).
    case consume(Bool)

    // The queue.
    /// `playlistinfo [POSITION|RANGE]`.
    case playlistinfo(MPDRange?)
    /// `playlistid [ID]`.
    case playlistid(Int?)
    /// `add URI [POSITION]`.
    case add(uri: String, position: String?)
    /// `addid URI [POSITION]`.
    case addid(uri: String, position: String?)
    case clear
    /// `delete POSITION|RANGE`.
    case delete(MPDRange)
    /// `deleteid ID`.
    case deleteid(Int)
    /// `move POSITION|RANGE TO`.
    case move(MPDRange, to: Int)
    /// `moveid ID TO`.
    case moveid(id: Int, to: Int)
    /// `swap POSITION POSITION`.
    case swap(Int, Int)
    /// `swapid ID ID`.
    case swapid(Int, Int)
    /// `plchanges VERSION [RANGE]`.
    case plchanges(version: Int, MPDRange?)
    /// `plchangesposid VERSION [RANGE]`.
    case plchangesposid(version: Int, MPDRange?)
    /// `playlistfind TAG VALUE...` (exact match).
    case playlistfind([String])
    /// `playlistsearch TAG VALUE...` (case-insensitive substring).
    case playlistsearch([String])
    /// `shuffle [RANGE]`.
    case shuffle(MPDRange?)
    /// `prio PRIORITY RANGE...`: accepted, Earshot has no priorities.
    case prio(Int, [MPDRange])
    /// `prioid PRIORITY ID...`: accepted.
    case prioid(Int, [Int])
    /// `crossfade SECONDS`.
    case crossfade(Int)

    // Pictures.
    /// `albumart URI OFFSET`.
    case albumart(uri: String, offset: Int)
    /// `readpicture URI OFFSET`.
    case readpicture(uri: String, offset: Int)

    // Outputs and ReplayGain.
    case outputs
    /// `enableoutput ID`.
    case enableoutput(Int)
    /// `disableoutput ID`.
    case disableoutput(Int)
    /// `toggleoutput ID`.
    case toggleoutput(Int)
    /// `replay_gain_mode off|track|album|auto`.
    case replayGainMode(String)
    case replayGainStatus

    // Stored playlists.
    case listplaylists
    /// `listplaylist NAME`.
    case listplaylist(String)
    /// `listplaylistinfo NAME`.
    case listplaylistinfo(String)
    /// `save NAME`.
    case save(String)
    /// `load NAME [RANGE]`.
    case load(String, MPDRange?)
    /// `playlistadd NAME URI`.
    case playlistadd(String, uri: String)
    /// `playlistclear NAME`.
    case playlistclear(String)
    /// `playlistdelete NAME POSITION`.
    case playlistdelete(String, position: Int)
    /// `rm NAME`.
    case rm(String)
    /// `rename NAME NEW_NAME`.
    case rename(String, to: String)

    // The library.
    /// `lsinfo [URI]`.
    case lsinfo(String?)
    /// `listall [URI]`.
    case listall(String?)
    /// `listallinfo [URI]`.
    case listallinfo(String?)
    /// `listfiles [URI]`: what is on disk in a folder of the music folders, not the library's records.
    case listfiles(String?)
    /// `find FILTER...` (a filter expression or tag/value pairs, then `sort` and `window`), kept as sent.
    case find([String])
    /// `search FILTER...`.
    case search([String])
    /// `findadd FILTER...`.
    case findadd([String])
    /// `searchadd FILTER...`.
    case searchadd([String])
    /// `list TAG [FILTER...] [group TAG...]`.
    case list(tag: String, [String])
    /// `count FILTER... [group TAG]`.
    case count([String])
    /// `update [URI]`.
    case update(String?)
    /// `rescan [URI]`.
    case rescan(String?)

    /// The names of the commands Earshot answers, as `commands` lists them (sorted, as MPD sorts them).
    public static let names: [String] = table.keys.sorted()

    /// `request` checked as MPD checks it: a name Earshot answers, the right number of arguments, numbers where
    /// numbers go.
    public static func parse(_ request: MPDRequest) -> Result<MPDCommand, MPDError> {
        guard let entry = table[request.name] else {
            return .failure(MPDError(.unknown, "unknown command \"\(request.name)\""))
        }
        let count = request.arguments.count
        let name = request.name
        if entry.least == entry.most, count != entry.least {
            return .failure(MPDError(.argument, command: name, "wrong number of arguments for \"\(name)\""))
        }
        if count < entry.least {
            return .failure(MPDError(.argument, command: name, "too few arguments for \"\(name)\""))
        }
        if let most = entry.most, count > most {
            return .failure(MPDError(.argument, command: name, "too many arguments for \"\(name)\""))
        }
        let arguments = Arguments(name: name, values: request.arguments)
        do throws(MPDError) {
            return .success(try entry.make(arguments))
        } catch {
            return .failure(error)
        }
    }

    /// One command's argument counts (`most` nil: no limit) and how its value is made.
    private struct Entry: Sendable {
        let least: Int
        let most: Int?
        let make: @Sendable (Arguments) throws(MPDError) -> MPDCommand

        init(_ least: Int, _ most: Int?, _ make: @escaping @Sendable (Arguments) throws(MPDError) -> MPDCommand) {
            self.least = least
            self.most = most
            self.make = make
        }

        /// A command without arguments.
        static func bare(_ command: MPDCommand) -> Entry { Entry(0, 0) { _ throws(MPDError) in command } }
    }

    private static let table: [String: Entry] = [
        "ping": .bare(.ping), "close": .bare(.close), "commands": .bare(.commands), "notcommands": .bare(.notcommands),
        "urlhandlers": .bare(.urlhandlers), "decoders": .bare(.decoders),
        "tagtypes": Entry(0, nil) { arguments throws(MPDError) in .tagtypes(arguments.values) },
        "binarylimit": Entry(1, 1) { arguments throws(MPDError) in
            let size = try arguments.natural(0)
            guard size >= 64 else { throw arguments.error("Value too small") }
            return .binarylimit(size)
        },
        "password": Entry(1, 1) { arguments throws(MPDError) in .password(arguments.values[0]) },
        "idle": Entry(0, nil) { arguments throws(MPDError) in .idle(try arguments.subsystems()) },
        "status": .bare(.status), "currentsong": .bare(.currentsong), "stats": .bare(.stats),
        "clearerror": .bare(.clearerror),
        "play": Entry(0, 1) { arguments throws(MPDError) in .play(position: try arguments.optionalNatural(0)) },
        "playid": Entry(0, 1) { arguments throws(MPDError) in .playid(id: try arguments.optionalNatural(0)) },
        "pause": Entry(0, 1) { arguments throws(MPDError) in
            .pause(arguments.values.isEmpty ? nil : try arguments.boolean(0))
        },
        "stop": .bare(.stop), "next": .bare(.next), "previous": .bare(.previous),
        "seek": Entry(2, 2) { arguments throws(MPDError) in
            .seek(position: try arguments.natural(0), seconds: try arguments.seconds(1))
        },
        "seekid": Entry(2, 2) { arguments throws(MPDError) in
            .seekid(id: try arguments.natural(0), seconds: try arguments.seconds(1))
        },
        "seekcur": Entry(1, 1) { arguments throws(MPDError) in .seekcur(try arguments.seek(0)) },
        "setvol": Entry(1, 1) { arguments throws(MPDError) in
            // MPD's own messages for a volume out of range.
            let volume = try arguments.natural(0)
            guard volume <= 100 else { throw arguments.error("Number too large: \(arguments.values[0])") }
            return .setvol(volume)
        },
        "volume": Entry(1, 1) { arguments throws(MPDError) in
            let change = try arguments.integer(0)
            guard (-100...100).contains(change) else { throw arguments.error("Invalid volume value") }
            return .volume(change: change)
        },
        "getvol": .bare(.getvol),
        "repeat": Entry(1, 1) { arguments throws(MPDError) in .repeat(try arguments.boolean(0)) },
        "random": Entry(1, 1) { arguments throws(MPDError) in .random(try arguments.boolean(0)) },
        "single": Entry(1, 1) { arguments throws(MPDError) in .single(try arguments.mode(0)) },
        "consume": Entry(1, 1) { arguments throws(MPDError) in .consume(try arguments.boolean(0)) },
        "playlistinfo": Entry(0, 1) { arguments throws(MPDError) in
            .playlistinfo(arguments.values.isEmpty ? nil : try arguments.range(0))
        },
        "playlistid": Entry(0, 1) { arguments throws(MPDError) in .playlistid(try arguments.optionalNatural(0)) },
        "add": Entry(1, 2) { arguments throws(MPDError) in
            .add(uri: arguments.values[0], position: arguments.values.count > 1 ? arguments.values[1] : nil)
        },
        "addid": Entry(1, 2) { arguments throws(MPDError) in
            .addid(uri: arguments.values[0], position: arguments.values.count > 1 ? arguments.values[1] : nil)
        },
        "clear": .bare(.clear),
        "delete": Entry(1, 1) { arguments throws(MPDError) in .delete(try arguments.range(0)) },
        "deleteid": Entry(1, 1) { arguments throws(MPDError) in .deleteid(try arguments.natural(0)) },
        "move": Entry(2, 2) { arguments throws(MPDError) in
            .move(try arguments.range(0), to: try arguments.natural(1))
        },
        "moveid": Entry(2, 2) { arguments throws(MPDError) in
            .moveid(id: try arguments.natural(0), to: try arguments.natural(1))
        },
        "swap": Entry(2, 2) { arguments throws(MPDError) in .swap(try arguments.natural(0), try arguments.natural(1)) },
        "swapid": Entry(2, 2) { arguments throws(MPDError) in
            .swapid(try arguments.natural(0), try arguments.natural(1))
        },
        "plchanges": Entry(1, 2) { arguments throws(MPDError) in
            .plchanges(version: try arguments.natural(0), arguments.values.count > 1 ? try arguments.range(1) : nil)
        },
        "plchangesposid": Entry(1, 2) { arguments throws(MPDError) in
            .plchangesposid(version: try arguments.natural(0),
                            arguments.values.count > 1 ? try arguments.range(1) : nil)
        },
        "playlistfind": Entry(2, nil) { arguments throws(MPDError) in .playlistfind(arguments.values) },
        "playlistsearch": Entry(2, nil) { arguments throws(MPDError) in .playlistsearch(arguments.values) },
        "shuffle": Entry(0, 1) { arguments throws(MPDError) in
            .shuffle(arguments.values.isEmpty ? nil : try arguments.range(0))
        },
        "prio": Entry(2, nil) { arguments throws(MPDError) in
            .prio(try arguments.priority(0), try (1..<arguments.values.count).map { index throws(MPDError) in
                try arguments.range(index)
            })
        },
        "prioid": Entry(2, nil) { arguments throws(MPDError) in
            .prioid(try arguments.priority(0), try (1..<arguments.values.count).map { index throws(MPDError) in
                try arguments.natural(index)
            })
        },
        "crossfade": Entry(1, 1) { arguments throws(MPDError) in .crossfade(try arguments.natural(0)) },
        "albumart": Entry(2, 2) { arguments throws(MPDError) in
            .albumart(uri: arguments.values[0], offset: try arguments.natural(1))
        },
        "readpicture": Entry(2, 2) { arguments throws(MPDError) in
            .readpicture(uri: arguments.values[0], offset: try arguments.natural(1))
        },
        "outputs": .bare(.outputs),
        "enableoutput": Entry(1, 1) { arguments throws(MPDError) in .enableoutput(try arguments.natural(0)) },
        "disableoutput": Entry(1, 1) { arguments throws(MPDError) in .disableoutput(try arguments.natural(0)) },
        "toggleoutput": Entry(1, 1) { arguments throws(MPDError) in .toggleoutput(try arguments.natural(0)) },
        "replay_gain_mode": Entry(1, 1) { arguments throws(MPDError) in
            guard ["off", "track", "album", "auto"].contains(arguments.values[0]) else {
                throw arguments.error("Unrecognized replay gain mode")
            }
            return .replayGainMode(arguments.values[0])
        },
        "replay_gain_status": .bare(.replayGainStatus),
        "listplaylists": .bare(.listplaylists),
        "listplaylist": Entry(1, 1) { arguments throws(MPDError) in .listplaylist(arguments.values[0]) },
        "listplaylistinfo": Entry(1, 1) { arguments throws(MPDError) in .listplaylistinfo(arguments.values[0]) },
        "save": Entry(1, 1) { arguments throws(MPDError) in .save(arguments.values[0]) },
        "load": Entry(1, 2) { arguments throws(MPDError) in
            .load(arguments.values[0], arguments.values.count > 1 ? try arguments.range(1) : nil)
        },
        "playlistadd": Entry(2, 2) { arguments throws(MPDError) in
            .playlistadd(arguments.values[0], uri: arguments.values[1])
        },
        "playlistclear": Entry(1, 1) { arguments throws(MPDError) in .playlistclear(arguments.values[0]) },
        "playlistdelete": Entry(2, 2) { arguments throws(MPDError) in
            .playlistdelete(arguments.values[0], position: try arguments.natural(1))
        },
        "rm": Entry(1, 1) { arguments throws(MPDError) in .rm(arguments.values[0]) },
        "rename": Entry(2, 2) { arguments throws(MPDError) in .rename(arguments.values[0], to: arguments.values[1]) },
        "lsinfo": Entry(0, 1) { arguments throws(MPDError) in .lsinfo(arguments.values.first) },
        "listall": Entry(0, 1) { arguments throws(MPDError) in .listall(arguments.values.first) },
        "listallinfo": Entry(0, 1) { arguments throws(MPDError) in .listallinfo(arguments.values.first) },
        "listfiles": Entry(0, 1) { arguments throws(MPDError) in .listfiles(arguments.values.first) },
        "find": Entry(1, nil) { arguments throws(MPDError) in .find(arguments.values) },
        "search": Entry(1, nil) { arguments throws(MPDError) in .search(arguments.values) },
        "findadd": Entry(1, nil) { arguments throws(MPDError) in .findadd(arguments.values) },
        "searchadd": Entry(1, nil) { arguments throws(MPDError) in .searchadd(arguments.values) },
        "list": Entry(1, nil) { arguments throws(MPDError) in
            .list(tag: arguments.values[0], Array(arguments.values.dropFirst()))
        },
        "count": Entry(1, nil) { arguments throws(MPDError) in .count(arguments.values) },
        "update": Entry(0, 1) { arguments throws(MPDError) in .update(arguments.values.first) },
        "rescan": Entry(0, 1) { arguments throws(MPDError) in .rescan(arguments.values.first) },
    ]
}

/// One request's arguments, read as the types MPD's commands take, with MPD's messages for what does not fit.
private struct Arguments {
    let name: String
    let values: [String]

    func error(_ message: String) -> MPDError { MPDError(.argument, command: name, message) }

    func integer(_ index: Int) throws(MPDError) -> Int {
        let text = values[index]
        let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw error("Integer expected: \(text)")
        }
        guard let value = Int(text), (Int(Int32.min)...Int(Int32.max)).contains(value) else {
            throw error("Number too large: \(text)")
        }
        return value
    }

    func natural(_ index: Int) throws(MPDError) -> Int {
        let value = try integer(index)
        guard value >= 0 else { throw error("Number is negative: \(values[index])") }
        return value
    }

    /// A priority, 0 to 255.
    func priority(_ index: Int) throws(MPDError) -> Int {
        let value = try natural(index)
        guard value <= 255 else { throw error("Priority out of range: \(values[index])") }
        return value
    }

    func optionalNatural(_ index: Int) throws(MPDError) -> Int? {
        values.count > index ? try natural(index) : nil
    }

    func boolean(_ index: Int) throws(MPDError) -> Bool {
        switch values[index] {
        case "0": return false
        case "1": return true
        default: throw error("Boolean (0/1) expected: \(values[index])")
        }
    }

    /// `0`, `1` or `oneshot` (`single`), with MPD's message for anything else.
    func mode(_ index: Int) throws(MPDError) -> String {
        guard ["0", "1", "oneshot"].contains(values[index]) else {
            throw error("Unrecognized single mode, expected 0, 1, or oneshot")
        }
        return values[index]
    }

    /// A time in seconds, fractions allowed, never negative.
    func seconds(_ index: Int) throws(MPDError) -> Double {
        let text = values[index]
        guard let value = Arguments.decimal(text), value >= 0 else { throw error("Float expected: \(text)") }
        return value
    }

    func seek(_ index: Int) throws(MPDError) -> MPDSeek {
        let text = values[index]
        guard let sign = text.first, sign == "+" || sign == "-" else { return .to(seconds: try seconds(index)) }
        guard let amount = Arguments.decimal(String(text.dropFirst())) else { throw error("Float expected: \(text)") }
        return .by(seconds: sign == "-" ? -amount : amount)
    }

    func range(_ index: Int) throws(MPDError) -> MPDRange {
        let text = values[index]
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        func number(_ part: Substring) -> Int? {
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(part),
                  value <= Int(Int32.max) else { return nil }
            return value
        }
        guard let start = number(parts[0]) else { throw error("Integer or range expected: \(text)") }
        guard parts.count == 2 else { return MPDRange(start: start, end: start + 1) }
        if parts[1].isEmpty { return MPDRange(start: start, end: nil) }
        guard let end = number(parts[1]) else { throw error("Integer or range expected: \(text)") }
        guard end >= start else { throw error("Malformed range: \(text)") }
        return MPDRange(start: start, end: end)
    }

    func subsystems() throws(MPDError) -> Set<MPDSubsystem> {
        var result = Set<MPDSubsystem>()
        for value in values {
            guard let subsystem = MPDSubsystem(rawValue: value) else {
                throw error("Unrecognized idle event: \(value)")
            }
            result.insert(subsystem)
        }
        return result
    }

    /// A plain decimal number (digits, at most one point): what MPD's clients send for times.
    static func decimal(_ text: String) -> Double? {
        guard !text.isEmpty, text.filter({ $0 == "." }).count <= 1, text != ".",
              text.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }), text.count <= 32 else { return nil }
        return Double(text)
    }
}
