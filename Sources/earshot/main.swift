// The `earshot` executable: argument handling (here) and wiring (PlayerService.swift). What it runs is in the owner's
// target (EarshotService), its clients' (EarshotClients) and its storage's (EarshotStorage).
import AudioPipeline
import EarshotClients
import EarshotCore
import EarshotJSON
import EarshotService
import EarshotStorage
import Glibc
import MusicLibrary
import SystemSupport
import TrackPaths

/// Prints `message` to standard error and exits with `code` (`ExitStatus.failure` or `.configuration`).
func fail(_ message: String, code: Int32) -> Never {
    StandardStream.writeError("earshot: \(message)\n")
    exit(code)
}

/// A usage error: prints `message`, the usage line of `verb` (or of earshot) and where to read more to standard
/// error, and exits with `ExitStatus.usage` (64).
func usageError(_ message: String, verb: Verb? = nil) -> Never {
    let usage = verb?.usageLines ?? [CommandLineHelp.usageLine]
    let more = verb.map { "earshot help \($0.name)" } ?? "earshot --help"
    let text = (["earshot: \(message)"] + usage + ["Try '\(more)' for more information."]).joined(separator: "\n")
    StandardStream.writeError(text + "\n")
    exit(ExitStatus.usage)
}

/// The configuration file's settings (exit 78, EX_CONFIG, when it is wrong: systemd then stops retrying).
func loadConfiguration() -> PlayerConfiguration {
    do {
        var configuration = try ConfigurationFile.load()
        configuration.socketPath = controlSocketPath()
        return configuration
    } catch {
        fail(error.description, code: ExitStatus.configuration)
    }
}

/// One command-line argument: its raw bytes (a file name need not be UTF-8) and its text for everything else.
struct Argument {
    /// The bytes as the kernel passed them.
    var bytes: [UInt8]
    /// The argument as text (invalid UTF-8 replaced), for verbs, options and numbers.
    var text: String { String(decoding: bytes, as: UTF8.self) }
    /// The argument as a path; nil for an empty argument.
    var path: TrackPath? { TrackPath(bytes: bytes) }
}

/// The arguments after the program name, read from argv itself: `CommandLine.arguments` replaces bytes that are
/// not UTF-8 with U+FFFD, which would turn such a file name into the name of another file.
func rawArguments() -> [Argument] {
    (1..<Int(CommandLine.argc)).compactMap { index in
        CommandLine.unsafeArgv[index].map { argument in
            Argument(bytes: Array(UnsafeBufferPointer(start: argument, count: strlen(argument)))
                .map { UInt8(bitPattern: $0) })
        }
    }
}

/// The paths of `arguments` of `verb`; an empty argument is a usage error.
func paths(_ arguments: some Collection<Argument>, of verb: Verb) -> [TrackPath] {
    arguments.map { argument in
        guard let path = argument.path else { usageError("an empty FILE argument", verb: verb) }
        return path
    }
}

/// Whether `argument` is an option (`-x`, `--name`) rather than an operand; a lone `-` is an operand.
func isOption(_ argument: Argument) -> Bool { argument.text.hasPrefix("-") && argument.text != "-" }

/// The operands of `verb` and the flags among `flags` that were given: an argument after `--` is always an
/// operand; before it, an option that is not in `flags` is a usage error.
func operands(
    of verb: Verb, _ arguments: ArraySlice<Argument>, flags: Set<String> = []
) -> (operands: [Argument], flags: Set<String>) {
    var operands: [Argument] = []
    var given: Set<String> = []
    var rest = arguments
    while let argument = rest.popFirst() {
        if argument.text == "--" { operands += rest; break }
        if !isOption(argument) { operands.append(argument); continue }
        guard flags.contains(argument.text) else { usageError("unknown option \(argument.text)", verb: verb) }
        given.insert(argument.text)
    }
    return (operands, given)
}

/// The single operand of `verb` (SECONDS, PERCENT, FILE), as text; none or several is a usage error.
func singleOperand(of verb: Verb, _ arguments: ArraySlice<Argument>) -> Argument {
    let given = operands(of: verb, arguments).operands
    guard given.count == 1 else { usageError("\(verb.name) takes one \(verb.forms[0])", verb: verb) }
    return given[0]
}

/// Checks that `verb` was given no arguments at all (a usage error otherwise).
func expectNoArguments(_ verb: Verb, _ arguments: ArraySlice<Argument>) {
    guard let extra = operands(of: verb, arguments).operands.first else { return }
    usageError("\(verb.name) takes no arguments (got \(extra.text))", verb: verb)
}

/// Parses `earshot play`'s options and files.
func parsePlay(_ arguments: ArraySlice<Argument>, verb: Verb)
    -> (configuration: PlayerConfiguration, files: [TrackPath], startsService: Bool) {
    var configuration = loadConfiguration()
    var files: [TrackPath] = []
    var startsService = false
    var triggerRoles: [String] = []
    var rest = arguments
    func value(_ option: String) -> String {
        guard let value = rest.popFirst() else { usageError("\(option) needs a value", verb: verb) }
        return value.text
    }
    while let argument = rest.popFirst() {
        switch argument.text {
        case "--sink": configuration.sinkName = value(argument.text)
        case "--latency":
            guard let milliseconds = Int(value(argument.text)), (10...2000).contains(milliseconds) else {
                usageError("--latency takes milliseconds from 10 to 2000", verb: verb)
            }
            configuration.targetLatencyMilliseconds = milliseconds
        case "--role": configuration.mediaRole = value(argument.text)
        case "--trigger-role": triggerRoles.append(value(argument.text))
        case "--no-resume": configuration.policy.resumeAfterInterruption = false
        case "--start-service": startsService = true
        case "--resume-window":
            guard let minutes = Double(value(argument.text)), minutes >= 0, minutes < 100_000 else {
                usageError("--resume-window takes minutes (a number >= 0)", verb: verb)
            }
            configuration.policy.resumeWindowMilliseconds = Int64(minutes * 60_000)
        case "--": files += paths(rest, of: verb); rest = []
        case _ where isOption(argument): usageError("unknown option \(argument.text)", verb: verb)
        default: files += paths([argument], of: verb)
        }
    }
    if !triggerRoles.isEmpty { configuration.triggerRoles = Set(triggerRoles) }
    configuration.showsProgress = isatty(STDOUT_FILENO) == 1
    configuration.debugLogging = ProcessEnvironment.value(named: "EARSHOT_LOG") == "debug"
    return (configuration, files, startsService)
}

/// Sends one request to the running player and prints its reply; exits non-zero on an error reply.
func control(_ request: ControlRequest, json: Bool = false) -> Never {
    var reply = ""
    // A long queue goes as several requests, each within the service's line limit.
    for part in request.splitForSending() {
        do {
            reply = try ControlClient.send(part, path: controlSocketPath())
        } catch {
            fail(error.description, code: ExitStatus.failure)
        }
        let parsed = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any]
        if parsed?["ok"] as? Bool != true { break }
    }
    let parsed = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any]
    if parsed?["ok"] as? Bool != true {
        fail((parsed?["error"] as? String) ?? "the player refused the request", code: ExitStatus.failure)
    }
    if request == .queue, let queue = parsed?["queue"] as? [Any] {
        let current = parsed?["current"] as? Int ?? 0
        for (index, entry) in queue.enumerated() {
            // Escaped: bytes that are not UTF-8 and control characters show as \xHH, never raw on the terminal.
            let shown = TrackPath(jsonValue: entry)?.displayText ?? "(unreadable entry)"
            print("\(index == current ? ">" : " ") \(index + 1). \(shown)")
        }
    }
    if request == .status, let status = parsed?["status"] as? [String: Any] {
        // The status object alone, as docs/usage.md documents it: the reply's envelope belongs to the protocol.
        print(json ? ControlReply.line(status) : StatusText.render(status))
    }
    exit(ExitStatus.success)
}

// One malloc arena for the whole process, before any thread starts: glibc otherwise gives each allocating thread
// (decoder, mainloop, control clients, the concurrency pool) an arena of its own whose freed pages stay resident,
// about 1 MiB more for a service that has taken a 10 000-track queue. Only the decode and control threads allocate
// often, and briefly; the real-time write callback never does.
SystemMemory.limitMallocArenas(to: 1)
var arguments = rawArguments()[...]
guard let first = arguments.popFirst()?.text else { usageError("no verb given") }
switch first {
case "--help", "-h":
    print(CommandLineHelp.overview)
    exit(ExitStatus.success)
case "--version":
    print("earshot \(earshotVersion)")
    exit(ExitStatus.success)
default: break
}
guard let verb = Verb.named(first) else {
    usageError(first.hasPrefix("-") ? "unknown option \(first)" : "unknown verb '\(first)'")
}
// `earshot VERB --help`: before a `--`, --help or -h anywhere asks for the verb's help.
if arguments.prefix(while: { $0.text != "--" }).contains(where: { $0.text == "--help" || $0.text == "-h" }) {
    print(verb.help)
    exit(ExitStatus.success)
}
switch verb.name {
case "help":
    let asked = operands(of: verb, arguments).operands
    guard asked.count <= 1 else { usageError("help takes at most one VERB", verb: verb) }
    guard let name = asked.first?.text else { print(CommandLineHelp.overview); exit(ExitStatus.success) }
    guard let topic = Verb.named(name) else { usageError("unknown verb '\(name)'", verb: verb) }
    print(topic.help)
case "serve":
    expectNoArguments(verb, arguments)
    var configuration = loadConfiguration()
    configuration.debugLogging = configuration.debugLogging
        || ProcessEnvironment.value(named: "EARSHOT_LOG") == "debug"
    exit(PlayerService.serve(configuration: configuration))
case "play":
    if arguments.isEmpty { control(.play) }
    let (configuration, files, startsService) = parsePlay(arguments, verb: verb)
    if startsService {
        // What earshot.desktop runs: the files go to the service, started through its unit when it is not running.
        ServiceStart.ensureRunning(socketPath: configuration.socketPath)
        if files.isEmpty { control(.play) }
    }
    guard !files.isEmpty else { usageError("play needs at least one FILE", verb: verb) }
    if startsService || ControlClient.isAnswering(path: configuration.socketPath) {
        // A service is running: it plays them.
        let expansion = QueueInput.expand(files)
        for problem in expansion.problems { StandardStream.writeError("earshot: \(problem)\n") }
        guard !expansion.paths.isEmpty else { fail("nothing to play", code: ExitStatus.failure) }
        control(.load(paths: expansion.paths, play: true))
    }
    // Without a service, in the foreground: a playlist's tracks take its place, as `add` reads them; other files go as
    // named, and the player reports any that does not play.
    let expansion = QueueInput.expandPlaylists(files)
    for problem in expansion.problems { StandardStream.writeError("earshot: \(problem)\n") }
    guard !expansion.paths.isEmpty else { fail("nothing to play", code: ExitStatus.failure) }
    exit(PlayerService.runForeground(files: expansion.paths, configuration: configuration))
case "add":
    let given = operands(of: verb, arguments).operands
    guard !given.isEmpty else { usageError("add needs at least one FILE, DIR or PLAYLIST", verb: verb) }
    let expansion = QueueInput.expand(paths(given, of: verb))
    for problem in expansion.problems { StandardStream.writeError("earshot: \(problem)\n") }
    guard !expansion.paths.isEmpty else { fail("nothing to add", code: ExitStatus.failure) }
    control(.add(paths: expansion.paths))
case "decode":
    let (given, flags) = operands(of: verb, arguments, flags: ["--gain", "--loudness", "--tags"])
    if flags.contains("--tags") {
        guard !given.isEmpty, flags.count == 1 else {
            usageError("decode --tags takes one FOLDER or more, and no other flag", verb: verb)
        }
        let roots = given.map { operand in
            guard let folder = operand.path else { usageError("an empty FOLDER argument", verb: verb) }
            return folder
        }
        // One JSON object a file, as `find --json` gives a track: what scripts/bench sets beside TagLib's reading.
        var unwritten = 0
        let counts = LibraryScanner(roots: roots).readAll { entry in
            guard let line = try? JSONTree.text(LibraryWiring.trackObject(entry)) else {
                unwritten += 1
                return
            }
            print(line)
        }
        if unwritten > 0 { fail("\(unwritten) track(s) could not be written as JSON", code: ExitStatus.failure) }
        guard counts.skippedTotal == 0 else {
            let reasons = counts.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            fail("skipped (by reason): " + reasons.joined(separator: ", "), code: ExitStatus.failure)
        }
        exit(0)
    }
    if flags.contains("--loudness") {
        guard !given.isEmpty, !flags.contains("--gain") else {
            usageError("decode --loudness takes one FILE or more, and no --gain", verb: verb)
        }
        var failed = false
        for operand in given {
            guard let file = operand.path else { usageError("an empty FILE argument", verb: verb) }
            // One line a file, in order: what scripts/bench sets beside its reference analyser.
            if let measured = TrackLoudness.measure(file) {
                let lufs = measured.lufs.map { "\(($0 * 100).rounded() / 100)" } ?? "none"
                print("lufs=\(lufs) peak=\(measured.peak)")
            } else {
                print("lufs=failed")
                failed = true
            }
        }
        exit(failed ? ExitStatus.failure : 0)
    }
    guard given.count == 1 else { usageError("decode takes one FILE", verb: verb) }
    guard let file = given[0].path else { usageError("an empty FILE argument", verb: verb) }
    do {
        let result = try DecodeBenchmark.run(path: file, gain: flags.contains("--gain"))
        print("frames=\(result.frames) seconds=\(result.seconds)")
    } catch {
        fail(error.description, code: ExitStatus.failure)
    }
case "seek":
    let text = singleOperand(of: verb, arguments).text
    guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
        usageError("seek takes SECONDS (a number >= 0), not \(text)", verb: verb)
    }
    control(.seek(seconds: seconds))
case "volume":
    let text = singleOperand(of: verb, arguments).text
    guard let percent = Int(text), (0...150).contains(percent) else {
        usageError("volume takes PERCENT from 0 to 150, not \(text)", verb: verb)
    }
    control(.volume(percent: percent))
case "repeat":
    let text = singleOperand(of: verb, arguments).text
    guard let mode = RepeatMode(rawValue: text) else {
        usageError("repeat takes off, track or queue, not \(text)", verb: verb)
    }
    control(.repeatMode(mode))
case "replaygain":
    let text = singleOperand(of: verb, arguments).text
    guard let mode = ReplayGainMode(rawValue: text) else {
        usageError("replaygain takes off, track, album or auto, not \(text)", verb: verb)
    }
    control(.replayGain(mode))
case "shuffle":
    let text = singleOperand(of: verb, arguments).text
    guard text == "on" || text == "off" else { usageError("shuffle takes on or off, not \(text)", verb: verb) }
    control(.shuffle(on: text == "on"))
case "single":
    let text = singleOperand(of: verb, arguments).text
    guard let mode = SingleMode(rawValue: text) else {
        usageError("single takes on, off or oneshot, not \(text)", verb: verb)
    }
    control(.single(mode))
case "consume":
    let text = singleOperand(of: verb, arguments).text
    guard text == "on" || text == "off" else { usageError("consume takes on or off, not \(text)", verb: verb) }
    control(.consume(on: text == "on"))
case "status":
    let (given, flags) = operands(of: verb, arguments, flags: ["--json"])
    if let extra = given.first { usageError("status takes no operands (got \(extra.text))", verb: verb) }
    control(.status, json: flags.contains("--json"))
case "events":
    expectNoArguments(verb, arguments)
    do {
        // The socket is read on a thread of its own while standard output may block (a stopped pager): lines that
        // pile up are dropped here with a `... N events dropped` marker, and the service never sees a stuck follower
        // (see EventsClient.swift for why this side drops rather than the service).
        try ControlClient.followEvents(path: controlSocketPath()) { lines in
            StandardStream.writeOutput(String(decoding: lines, as: UTF8.self))
        }
    } catch {
        fail(error.description, code: ExitStatus.failure)
    }
case "update", "rescan", "search", "find", "list", "findadd", "searchadd", "ls": libraryVerb(verb, arguments)
case "queue": expectNoArguments(verb, arguments); control(.queue)
case "clear": expectNoArguments(verb, arguments); control(.clear)
case "pause": expectNoArguments(verb, arguments); control(.pause)
case "resume": expectNoArguments(verb, arguments); control(.play)
case "toggle": expectNoArguments(verb, arguments); control(.toggle)
case "stop": expectNoArguments(verb, arguments); control(.stop)
case "next": expectNoArguments(verb, arguments); control(.next)
case "previous": expectNoArguments(verb, arguments); control(.previous)
case "live": expectNoArguments(verb, arguments); control(.live)
default:
    // Every verb in `Verb.all` has its case above; the help test runs each one.
    preconditionFailure("no handler for the verb \(verb.name)")
}
