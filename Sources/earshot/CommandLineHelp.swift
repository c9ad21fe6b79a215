// What `earshot` says about itself: its version, its verbs with their arguments and options, the help texts made
// from them, and its exit statuses. The man page (scripts/package, with help2man) and the bash completion's test
// read the same texts, so this file is the one place they are written.

/// Earshot's version, written here only: `earshot --version` prints it and scripts/package reads it from there.
let earshotVersion = "0.1.0"

/// The exit statuses of `earshot`, listed in `earshot --help` under EXIT STATUS.
enum ExitStatus {
    /// The verb did what it was asked.
    static let success: Int32 = 0
    /// The player refused or failed the request, is not running, or no file could be played.
    static let failure: Int32 = 1
    /// EX_USAGE (sysexits.h): an unknown verb or option, a missing argument or a bad argument value.
    static let usage: Int32 = 64
    /// EX_CONFIG (sysexits.h): the configuration file is wrong; systemd does not restart the service on it.
    static let configuration: Int32 = 78
    /// `earshot play` stopped by Ctrl-C (128 + SIGINT, as shells report it); set by the player itself.
    static let interrupted: Int32 = 130

    /// Every status with what it means, for the help text.
    static let meanings: [(status: Int32, meaning: String)] = [
        (success, "success"),
        (failure, "the player refused or failed the request, is not running, or no file could be played"),
        (usage, "usage error: an unknown verb or option, a missing or bad argument (EX_USAGE)"),
        (configuration, "configuration error: config.json is wrong; the service does not start (EX_CONFIG)"),
        (interrupted, "earshot play was stopped with Ctrl-C (SIGINT)"),
    ]
}

/// One option of a verb, as its help shows it.
struct VerbOption {
    /// The option and its value's name, e.g. `--sink NAME`.
    let synopsis: String
    /// What it does, in one line.
    let meaning: String

    /// The option's name alone, e.g. `--sink`.
    var name: String { String(synopsis.prefix { $0 != " " }) }
}

/// One verb of the command line (`earshot VERB ...`): how it is called, what it does and its options.
struct Verb {
    /// The verb as typed, e.g. `play`.
    let name: String
    /// Its usage forms after the verb (one line each; empty for a verb that takes nothing).
    let forms: [String]
    /// What it does, in one line, for the overview.
    let summary: String
    /// More about it, for `earshot help VERB` only.
    let details: [String]
    /// Its options (besides `--help`).
    let options: [VerbOption]

    /// Creates a verb; see the properties.
    init(_ name: String, forms: [String] = [""], _ summary: String, details: [String] = [],
         options: [VerbOption] = []) {
        self.name = name
        self.forms = forms
        self.summary = summary
        self.details = details
        self.options = options
    }

    /// The --json option of the library's verbs.
    static let jsonOption = VerbOption(synopsis: "--json", meaning: "print the result as one JSON value")

    /// The --wait option of update and rescan.
    static let waitOption = VerbOption(synopsis: "--wait", meaning: "return when the scan has ended")

    /// Every verb, in the order the help lists them.
    static let all: [Verb] = [
        Verb("serve", "run the player service in the foreground (systemd runs it as a user service)",
             details: ["It restores the saved queue paused, answers the control socket and publishes MPRIS2 on the",
                       "session bus as org.mpris.MediaPlayer2.earshot. One per user: a second one exits."]),
        Verb("play", forms: ["[OPTION...] FILE...", ""], "play FILEs; with no FILE, resume the running player",
             details: ["Plays the FILEs in order through the sound server and exits 0 at the end of the queue (1 when",
                       "no file could be played). With a service running it replaces the service's queue with the",
                       "FILEs and plays them instead. With no FILE it resumes the running player, like resume.",
                       "With --start-service (what earshot.desktop runs for \"Open with\") the FILEs always go to the",
                       "service, which `systemctl --user start earshot.service` starts first when it is not running.",
                       "After --, every argument is a FILE, also one that starts with -."],
             options: [
                VerbOption(synopsis: "--sink NAME", meaning: "play on this sink (default: the server's default sink)"),
                VerbOption(synopsis: "--latency MS", meaning: "target latency in milliseconds (10-2000, default 1000)"),
                VerbOption(synopsis: "--role ROLE", meaning: "media.role of the stream (default music)"),
                VerbOption(synopsis: "--trigger-role ROLE",
                           meaning: "a stream role that interrupts Earshot (default phone; repeatable)"),
                VerbOption(synopsis: "--no-resume", meaning: "never resume by itself after an interruption"),
                VerbOption(synopsis: "--resume-window MINUTES",
                           meaning: "resume only after interruptions shorter than this (default 30)"),
                VerbOption(synopsis: "--start-service",
                           meaning: "play through the service, started with systemctl --user when not running"),
             ]),
        Verb("add", forms: ["FILE|DIR|PLAYLIST.m3u..."], "append to the running player's queue",
             details: ["Directories are added recursively, in natural order; .m3u playlists entry by entry.",
                       "After --, every argument is a FILE, also one that starts with -."]),
        Verb("queue", "list the running player's queue, the current track marked with >"),
        Verb("clear", "empty the running player's queue"),
        Verb("pause", "pause the running player (idempotent: never a toggle)"),
        Verb("resume", "resume the running player; during a phone call it starts when the call ends"),
        Verb("toggle", "pause if playing, play otherwise"),
        Verb("stop", "stop; the next play starts the current track again"),
        Verb("next", "move to the next track"),
        Verb("previous", "move to the previous track"),
        Verb("seek", forms: ["SECONDS"], "move to SECONDS (a number >= 0) into the current track"),
        Verb("live", "jump to the live edge of the internet radio station playing (dropping what was kept of it)",
             details: ["A paused station goes on being received (liveBufferMinutes); seeking in one is refused."]),
        Verb("volume", forms: ["PERCENT"], "set the stream volume (0-150)"),
        Verb("repeat", forms: ["off|track|queue"], "repeat nothing, the current track, or the whole queue",
             details: ["Under 'repeat track', next still moves on. The choice is kept across restarts."]),
        Verb("shuffle", forms: ["on|off"], "play the queue in a shuffled order, each track once a round",
             details: ["The order is kept across restarts; tracks added later take places among those to come."]),
        Verb("single", forms: ["on|off|oneshot"], "stop after each track (on), after this one (oneshot), or never",
             details: ["The player stops at the next track, which a play starts. With repeat on, 'single on'",
                       "plays the track again (as MPD's single). oneshot returns to off once used. Kept across",
                       "restarts."]),
        Verb("consume", forms: ["on|off"], "take each track out of the queue once played or skipped with next",
             details: ["Kept across restarts."]),
        Verb("replaygain", forms: ["off|track|album|auto"], "level tracks by their ReplayGain or R128 tags",
             details: ["auto uses the album gain while the queue plays in order, the track gain under shuffle.",
                       "From the next track; the configuration's replayGain is the mode at start (default auto)."]),
        Verb("status", forms: ["[--json]"], "show what the player is doing",
             details: ["With --json it prints one JSON object whose fields docs/usage.md documents (playback,",
                       "pauseReason, positionMs, sink, corked, ...)."],
             options: [VerbOption(synopsis: "--json", meaning: "print the status as one JSON object")]),
        Verb("events", "follow the player's event log (one line per event) until interrupted"),
        Verb("update", forms: ["[--json] [--wait] [PATH]"],
             "scan the music library for new, changed and removed files",
             details: ["Every music folder (configuration musicDirectories), or only PATH: a folder below a music",
                       "folder, or an absolute path inside one. Files whose size and time are unchanged are not read",
                       "again. The scan runs in the service at idle priority; on a terminal a progress bar shows it",
                       "and the verb returns when it ends (as with --wait); `earshot status` shows it too."],
             options: [jsonOption, waitOption]),
        Verb("rescan", forms: ["[--json] [--wait] [PATH]"], "scan the music library, reading every file again",
             options: [jsonOption, waitOption]),
        Verb("search", forms: ["[--json] TAG TEXT [TAG TEXT...]"], "list the library's tracks whose TAG contains TEXT",
             details: ["Case and accents do not matter, the words of TEXT may come in any order, and each may be",
                       "the start of a word. TAG is any (every tag), artist, albumartist, album, title, genre,",
                       "date, composer, track, disc, file or a musicbrainz_* id. Tracks come in album order",
                       "(album artist, album date, disc, track), each as its path below its music folder."],
             options: [jsonOption]),
        Verb("find", forms: ["[--json] TAG VALUE [TAG VALUE...]", "[--json] '(EXPRESSION)' [TAG VALUE...]"],
             "list the library's tracks whose TAG is VALUE",
             details: ["VALUE must match exactly (case and accents too); the TAGs are search's. An argument in",
                       "brackets is MPD's filter expression, as mpc passes it: (TAG == 'V'), (TAG != 'V'),",
                       "(TAG contains 'V'), (TAG starts_with 'V'), (!(E)), ((E) AND (E)), (base 'FOLDER');",
                       "find compares exactly, search without case (ASCII letters only). `sort [-]TAG` and",
                       "`window START:END` at the end sort (stably, - descending) and cut the list, as MPD's do;",
                       "`--` before the words lets a descending `sort -TAG` through."],
             options: [jsonOption]),
        Verb("list", forms: ["[--json] TAG [TAG VALUE...|'(EXPRESSION)'] [group TAG...]"],
             "list the values of TAG in the library",
             details: ["Only among the tracks whose TAG is VALUE for each pair (find's rule); albums come in date",
                       "order, numbers in numeric order, other values alphabetically. With `group`, one line per",
                       "combination, the last group's value first, tab-separated, in byte order (MPD's)."],
             options: [jsonOption]),
        Verb("findadd", forms: ["[--json] TAG VALUE [TAG VALUE...]"], "queue the tracks find lists, in album order",
             options: [jsonOption]),
        Verb("searchadd", forms: ["[--json] TAG TEXT [TAG TEXT...]"], "queue the tracks search lists, in album order",
             options: [jsonOption]),
        Verb("ls", forms: ["[--json] [PATH]"], "list a folder of the library: its folders, then its files",
             options: [jsonOption]),
        Verb("decode", forms: ["[--gain] FILE", "--loudness FILE...", "--tags FOLDER..."],
             "decode FILE as fast as possible and print its frames and seconds",
             details: ["The audio is discarded; scripts/bench uses it to compare with 'mpg123 -t'.",
                       "With --loudness, each FILE's EBU R128 loudness and peak, as the library measures them.",
                       "With --tags, every track below each FOLDER read as the library's scan reads it, one JSON",
                       "object a line (scripts/bench sets it beside TagLib)."],
             options: [VerbOption(synopsis: "--gain",
                                  meaning: "scale every sample by its ReplayGain (track; else -6 dB)"),
                       VerbOption(synopsis: "--loudness",
                                  meaning: "print each FILE's integrated loudness (LUFS) and peak"),
                       VerbOption(synopsis: "--tags",
                                  meaning: "print the tags of every track below each FOLDER, as the library reads them")]),
        Verb("help", forms: ["[VERB]"], "show the help of VERB, or this help"),
    ]

    /// The verb called `name`, if there is one.
    static func named(_ name: String) -> Verb? { all.first { $0.name == name } }

    /// The usage lines of this verb (`Usage: earshot play ...`, then `  or:  ...`).
    var usageLines: [String] {
        forms.enumerated().map { index, form in
            (index == 0 ? "Usage: " : "  or:  ") + "earshot \(name)" + (form.isEmpty ? "" : " \(form)")
        }
    }

    /// `earshot help VERB`: the usage lines, what it does and its options.
    var help: String {
        var lines = usageLines
        lines.append(summary.prefix(1).uppercased() + summary.dropFirst() + ".")
        lines += details
        lines += ["", "Options:"] + CommandLineHelp.table(
            options.map { ($0.synopsis, $0.meaning) } + [("-h, --help", "show this help")])
        return lines.joined(separator: "\n")
    }
}

/// The whole help (`earshot --help`) and the pieces usage errors print.
enum CommandLineHelp {
    /// The first line of the whole help, which a usage error repeats.
    static let usageLine = "Usage: earshot VERB [OPTION...] [ARGUMENT...]"

    /// `earshot --help`: every verb, the options of play, the files, the environment and the exit statuses.
    static var overview: String {
        let verbs = Verb.all.map { verb in
            (verb.name + (verb.forms[0].isEmpty ? "" : " \(verb.forms[0])"), verb.summary)
        }
        let play = Verb.named("play")?.options ?? []
        let lines: [String] = [
            usageLine,
            "  or:  earshot --help | --version",
            "A polite background music player for the Linux desktop: it plays MP3, FLAC, Ogg Vorbis and Opus files",
            "through the session's sound server (PulseAudio or PipeWire), pauses for phone calls and when its output",
            "device goes away, and never starts by itself. 'earshot serve' is the service; the other verbs control it.",
            "",
            "Verbs:",
        ] + table(verbs) + [
            "",
            "Run 'earshot help VERB' or 'earshot VERB --help' for a verb's usage and options.",
            "",
            "Options of play:",
        ] + table(play.map { ($0.synopsis, $0.meaning) }) + [
            "",
            "Options:",
        ] + table([("-h, --help", "show this help"), ("--version", "print the version: earshot \(earshotVersion)")])
        + [
            "",
            "Files:",
        ] + table([
            ("$XDG_CONFIG_HOME/earshot/config.json",
             "configuration: an unknown key or a wrong value is an error naming the key (exit status 78)"),
            ("$XDG_STATE_HOME/earshot/state.json", "the queue, restored paused on start (written when it changes)"),
            ("$XDG_STATE_HOME/earshot/position.json", "track, position and volume in it (every 2 s while playing)"),
            ("$XDG_CACHE_HOME/earshot/art/", "cover pictures for MPRIS's mpris:artUrl, at most 64 MiB, oldest removed"),
            ("$XDG_CACHE_HOME/earshot/library.sqlite", "the music library (rebuilt from the music folders when lost)"),
        ]) + [
            "",
            "Environment:",
        ] + table([
            ("EARSHOT_SOCKET", "control socket path (default $XDG_RUNTIME_DIR/earshot/control.sock)"),
            ("PULSE_SERVER", "the sound server to use (libpulse's own variable)"),
            ("EARSHOT_LOG", "log level: info (default) or debug"),
        ]) + [
            "",
            "Exit status:",
        ] + table(ExitStatus.meanings.map { (String($0.status), $0.meaning) })
        return lines.joined(separator: "\n")
    }

    /// Two columns, indented by two: a term, then its meaning from column 26 (on the next line for a long term).
    static func table(_ rows: [(term: String, meaning: String)]) -> [String] {
        let column = 24
        return rows.flatMap { row -> [String] in
            let term = "  " + row.term
            if row.meaning.isEmpty { return [term] }
            if row.term.count < column - 1 {
                return [term + String(repeating: " ", count: column + 2 - term.count) + row.meaning]
            }
            return [term, String(repeating: " ", count: column + 2) + row.meaning]
        }
    }
}
