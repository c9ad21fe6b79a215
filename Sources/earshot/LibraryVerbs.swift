// The library's verbs on the command line, as mpc has them: `update`, `rescan`, `search`, `find`, `list`, `findadd`,
// `searchadd`, `ls`. Each sends one request to the running service and prints one result a line (a track as its path
// below its music folder, a value for `list`, a folder or file for `ls`), or with --json the reply's result as one
// JSON value. Paths are shown escaped (TrackPath.displayText): bytes that are not UTF-8 never reach the terminal raw.
import EarshotClients
import EarshotJSON
import EarshotService
import Glibc
import SystemSupport
import MusicLibrary
import TrackPaths

/// Runs the library verb `verb` with `arguments`; exits.
func libraryVerb(_ verb: Verb, _ arguments: ArraySlice<Argument>) -> Never {
    let isUpdate = verb.name == "update" || verb.name == "rescan"
    let (given, flags) = operands(of: verb, arguments, flags: isUpdate ? ["--json", "--wait"] : ["--json"])
    let json = flags.contains("--json")
    // An update on a terminal shows its progress and waits for its end, as with --wait.
    let waits = isUpdate && (flags.contains("--wait") || (!json && isatty(STDOUT_FILENO) == 1))
    let scansBefore = waits ? libraryStatus()?["scansFinished"] as? Int ?? 0 : 0
    let request: ControlRequest
    switch verb.name {
    case "update", "rescan", "ls":
        guard given.count <= 1 else { usageError("\(verb.name) takes at most one PATH", verb: verb) }
        let path = given.first.map { argument in
            guard let path = argument.path else { usageError("an empty PATH argument", verb: verb) }
            return path
        }
        request = verb.name == "ls" ? .browse(path: path) : .update(path: path, rescan: verb.name == "rescan")
    default:
        let words = given.map(\.text)
        // Checked here too, so that a mistake is a usage error (64) before any service is asked.
        let parsed = LibrarySelection.split(verb: verb.name, words).flatMap {
            LibraryQuery.parse(verb: verb.name, $0.words)
        }
        if case .failure(let error) = parsed {
            usageError(error.message, verb: verb)
        }
        request = .libraryQuery(verb: verb.name, words: words, tags: json)
    }
    let reply: String
    do {
        reply = try ControlClient.send(request, path: controlSocketPath())
    } catch {
        fail(error.description, code: ExitStatus.failure)
    }
    guard let object = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any], object["ok"] as? Bool == true else {
        let parsed = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any]
        fail((parsed?["error"] as? String) ?? "the player refused the request", code: ExitStatus.failure)
    }
    printLibraryReply(object, verb: verb.name, json: json)
    if waits { waitForScan(after: scansBefore, showing: !json && isatty(STDOUT_FILENO) == 1) }
    exit(ExitStatus.success)
}

/// The status reply's `library` object (empty before the library's first report); nil when the service does not
/// answer.
private func libraryStatus() -> [String: Any]? {
    guard let reply = try? ControlClient.send(.status, path: controlSocketPath()),
          let object = (try? JSONTree.parse(Array(reply.utf8))) as? [String: Any] else { return nil }
    return (object["status"] as? [String: Any])?["library"] as? [String: Any] ?? [:]
}

/// Waits until the service has finished a scan after the `before`th (polling its status five times a second), showing
/// the files read on one line of a terminal when `showing`; then prints the library's line.
private func waitForScan(after before: Int, showing: Bool) {
    var shown = false
    while true {
        guard let library = libraryStatus() else { fail("the player stopped answering", code: ExitStatus.failure) }
        if library["scansFinished"] as? Int ?? 0 > before, library["scanning"] as? Bool != true {
            if shown { StandardStream.writeOutput("\r\u{1B}[K") }
            print(StatusText.libraryLine(library))
            return
        }
        if showing, library["scanning"] as? Bool == true {
            let done = library["filesDone"] as? Int ?? 0
            let toDo = max(library["filesToDo"] as? Int ?? 0, 1)
            let width = 30
            let filled = min(width, done * width / toDo)
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            StandardStream.writeOutput("\rupdating [\(bar)] \(done)/\(toDo) files")
            shown = true
        }
        usleep(200_000)
    }
}

/// Prints what a library reply holds for `verb`.
private func printLibraryReply(_ object: [String: Any], verb: String, json: Bool) {
    func shown(_ value: Any) -> String { TrackPath(jsonValue: value)?.displayText ?? "(unreadable entry)" }
    func printJSON(_ value: Any) { print((try? JSONTree.text(value)) ?? "null") }
    switch verb {
    case "update", "rescan":
        if json { printJSON(["scan": object["scan"] ?? "queued"]) }
    case "findadd", "searchadd":
        if json { printJSON(["added": object["added"] ?? 0]) }
    case "list" where object["rows"] != nil:
        // Grouped: one line per combination, the groups' values (outermost first) and the tag's, tab-separated.
        let rows = object["rows"] as? [Any] ?? []
        if json { printJSON(rows) } else {
            for row in rows { print((row as? [Any] ?? []).map { $0 as? String ?? "" }.joined(separator: "\t")) }
        }
    case "list":
        let values = object["values"] as? [Any] ?? []
        if json { printJSON(values) } else { for value in values { print(value as? String ?? "") } }
    case "ls":
        let folders = object["folders"] as? [Any] ?? []
        let files = object["files"] as? [[String: Any]] ?? []
        if json {
            printJSON(["folders": folders, "files": files])
        } else {
            for folder in folders { print(shown(folder)) }
            for file in files { print(shown(file["file"] ?? "")) }
        }
    default:
        let tracks = object["tracks"] as? [[String: Any]] ?? []
        if json { printJSON(tracks) } else { for track in tracks { print(shown(track["file"] ?? "")) } }
    }
}
