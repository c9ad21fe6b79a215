// The `earshot` executable: argument handling and wiring only. Everything it does is in EarshotService.
import AudioPipeline
import EarshotService
import Foundation

let usage = """
    earshot: a polite background music player for the Linux desktop

    USAGE
      earshot serve       run the player service in the foreground (systemd runs it; see Config/earshot.service):
                          restores the saved queue paused, answers the control socket and MPRIS
      earshot play [--sink NAME] [--latency MS] [--role ROLE] [--no-resume] [--resume-window MINUTES] FILE...
                          play FILEs in order through the sound server, with a control socket;
                          exits 0 at the end of the queue, non-zero when no file could be played;
                          with a service running, replaces its queue with FILEs and plays them
      earshot play        (no files) resume the running player, like `earshot resume`
      earshot add FILE|DIR|PLAYLIST.m3u...
                          append to the running player's queue (directories recursively, in natural order)
      earshot queue       list the queue
      earshot clear       empty the queue
      earshot pause       pause the running player (idempotent)
      earshot resume      resume the running player
      earshot toggle      pause if playing, play otherwise
      earshot stop        stop; the next play starts the current track again
      earshot next        next track
      earshot previous    previous track
      earshot seek SECONDS
                          move to SECONDS into the current track
      earshot volume PERCENT
                          set the stream volume (0-150)
      earshot status [--json]
                          show what the player is doing
      earshot events      follow the player's event log
      earshot decode FILE decode FILE as fast as possible, discard the audio and print frames and seconds
                          (used by scripts/bench to compare with `mpg123 -t`)
      earshot --help      show this help

    OPTIONS (play)
      --sink NAME         play on this sink (default: the server's default sink)
      --latency MS        target latency in milliseconds (default 50; 10-2000)
      --role ROLE         media.role of the stream (default music)
      --trigger-role ROLE a stream role that interrupts Earshot (default phone; repeatable)
      --no-resume         never resume by itself after an interruption
      --resume-window MINUTES
                          resume only after interruptions shorter than this (default 30)

    FILES
      $XDG_CONFIG_HOME/earshot/config.json   configuration (see Config/config.json); an unknown key or a wrong
                          type is an error naming the key, and the service refuses to start (exit 78)
      $XDG_STATE_HOME/earshot/state.json     queue, track, position and volume, restored paused on start

    ENVIRONMENT
      EARSHOT_SOCKET      control socket path (default $XDG_RUNTIME_DIR/earshot/control.sock)
      PULSE_SERVER        the sound server to use (libpulse's own variable)
      EARSHOT_LOG         log level: info (default) or debug
    """

/// Prints `message` to standard error and exits with `code`.
func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("earshot: \(message)\n".utf8))
    exit(code)
}

/// The configuration file's settings (exit 78, EX_CONFIG, when it is wrong: systemd then stops retrying).
func loadConfiguration() -> PlayerConfiguration {
    do {
        var configuration = try ConfigurationFile.load()
        configuration.socketPath = controlSocketPath()
        return configuration
    } catch {
        fail(error.description, code: 78)
    }
}

/// Parses `earshot play`'s options and files.
func parsePlay(_ arguments: ArraySlice<String>) -> (PlayerConfiguration, [String]) {
    var configuration = loadConfiguration()
    var files: [String] = []
    var triggerRoles: [String] = []
    var rest = arguments
    func value(_ option: String) -> String {
        guard let value = rest.popFirst() else { fail("\(option) needs a value (see earshot --help)") }
        return value
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "--sink": configuration.sinkName = value(argument)
        case "--latency":
            guard let milliseconds = Int(value(argument)), (10...2000).contains(milliseconds) else {
                fail("--latency takes milliseconds from 10 to 2000")
            }
            configuration.targetLatencyMilliseconds = milliseconds
        case "--role": configuration.mediaRole = value(argument)
        case "--trigger-role": triggerRoles.append(value(argument))
        case "--no-resume": configuration.policy.resumeAfterInterruption = false
        case "--resume-window":
            guard let minutes = Double(value(argument)), minutes >= 0, minutes < 100_000 else {
                fail("--resume-window takes minutes (a number >= 0)")
            }
            configuration.policy.resumeWindowMilliseconds = Int64(minutes * 60_000)
        case "--": files.append(contentsOf: rest); rest = []
        case let option where option.hasPrefix("--"): fail("unknown option \(option) (see earshot --help)")
        default: files.append(argument)
        }
    }
    if !triggerRoles.isEmpty { configuration.triggerRoles = Set(triggerRoles) }
    configuration.showsProgress = isatty(STDOUT_FILENO) == 1
    configuration.debugLogging = ProcessInfo.processInfo.environment["EARSHOT_LOG"] == "debug"
    return (configuration, files)
}

/// Sends `request` to the running player and returns its reply (raw and parsed); exits when it refuses.
func sendAccepted(_ request: ControlRequest) -> (reply: String, parsed: [String: Any]?) {
    let reply: String
    do {
        reply = try ControlClient.send(request, path: controlSocketPath())
    } catch {
        fail(error.description, code: 1)
    }
    let parsed = (try? JSONSerialization.jsonObject(with: Data(reply.utf8))) as? [String: Any]
    if parsed?["ok"] as? Bool != true {
        fail((parsed?["error"] as? String) ?? "the player refused the request", code: 1)
    }
    return (reply, parsed)
}

/// Sends `paths` as one `load` (or `add`) and as many `add`s as it takes to keep each request within one line.
func sendPaths(_ paths: [String], load: Bool) -> Never {
    var batches = ControlRequest.pathBatches(paths)
    let last = batches.removeLast()
    for (index, batch) in batches.enumerated() {
        _ = sendAccepted(load && index == 0 ? .load(paths: batch, play: true) : .add(paths: batch))
    }
    control(load && batches.isEmpty ? .load(paths: last, play: true) : .add(paths: last))
}

/// Sends `request` to the running player, prints what the reply holds for people, and exits.
func control(_ request: ControlRequest, json: Bool = false) -> Never {
    let (reply, parsed) = sendAccepted(request)
    if request == .queue, let queue = parsed?["queue"] as? [String] {
        let current = parsed?["current"] as? Int ?? 0
        for (index, path) in queue.enumerated() {
            print("\(index == current ? ">" : " ") \(index + 1). \(path)")
        }
    }
    if request == .status {
        if json {
            print(reply)
        } else if let status = parsed?["status"] as? [String: Any] {
            print(StatusText.render(status))
        }
    }
    exit(0)
}

var arguments = CommandLine.arguments.dropFirst()
guard let verb = arguments.popFirst() else { print(usage); exit(2) }
switch verb {
case "--help", "-h", "help":
    print(usage)
case "serve":
    var configuration = loadConfiguration()
    configuration.debugLogging = configuration.debugLogging || ProcessInfo.processInfo.environment["EARSHOT_LOG"] == "debug"
    exit(PlayerService.serve(configuration: configuration))
case "play":
    if arguments.isEmpty { control(.play) }
    let (configuration, files) = parsePlay(arguments)
    guard !files.isEmpty else { fail("play needs at least one FILE (see earshot --help)") }
    if ControlClient.isAnswering(path: configuration.socketPath) {
        // A service is running: it plays them.
        let expansion = QueueInput.expand(files)
        for problem in expansion.problems { FileHandle.standardError.write(Data("earshot: \(problem)\n".utf8)) }
        guard !expansion.paths.isEmpty else { fail("nothing to play", code: 1) }
        sendPaths(expansion.paths, load: true)
    }
    exit(PlayerService.runForeground(files: files, configuration: configuration))
case "add":
    let expansion = QueueInput.expand(Array(arguments))
    for problem in expansion.problems { FileHandle.standardError.write(Data("earshot: \(problem)\n".utf8)) }
    guard !expansion.paths.isEmpty else { fail("nothing to add", code: 1) }
    sendPaths(expansion.paths, load: false)
case "queue": control(.queue)
case "clear": control(.clear)
case "decode":
    guard let file = arguments.popFirst() else { fail("decode needs a FILE") }
    do {
        let result = try DecodeBenchmark.run(path: file)
        print("frames=\(result.frames) seconds=\(result.seconds)")
    } catch {
        fail(error.description, code: 1)
    }
case "pause": control(.pause)
case "resume": control(.play)
case "toggle": control(.toggle)
case "stop": control(.stop)
case "next": control(.next)
case "previous": control(.previous)
case "seek":
    guard let text = arguments.popFirst(), let seconds = Double(text), seconds >= 0, seconds.isFinite else {
        fail("seek takes SECONDS (a number >= 0)")
    }
    control(.seek(seconds: seconds))
case "volume":
    guard let text = arguments.popFirst(), let percent = Int(text), (0...150).contains(percent) else {
        fail("volume takes PERCENT from 0 to 150")
    }
    control(.volume(percent: percent))
case "status":
    control(.status, json: arguments.contains("--json"))
case "events":
    do {
        try ControlClient.follow(path: controlSocketPath()) { line in
            if !line.hasPrefix("{") { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        }
    } catch {
        fail(error.description, code: 1)
    }
default:
    fail("unknown command '\(verb)' (see earshot --help)")
}
