// `earshot-timeline`: the tour's recorder and picture maker (scripts/run --tour). Argument handling only;
// the work is in TourTimeline.
import FoundationEssentials
import Glibc
import SystemSupport
import TourTimeline

let usage = """
    usage: earshot-timeline record RAW            copy parec's raw output (stdin) to RAW, timing to RAW.times
           earshot-timeline draw [options] OUT.svg
             --lane SINK=TITLE        a lane, top to bottom (repeatable); its recordings are
                                      RECORDINGS/SINK-*.raw with their .times files
             --recordings DIR         where the recordings are
             --marks FILE             the tour's steps: SECONDS<TAB>KIND<TAB>LABEL[<TAB>SINK] per line
             --events FILE            Earshot's event log
             --title TEXT, --subtitle TEXT
             --rate HZ                the recordings' sample rate (default 44100)
    """

/// Prints `message` to standard error and exits with status 2.
func fail(_ message: String) -> Never {
    StandardStream.writeError("earshot-timeline: \(message)\n")
    exit(2)
}

var arguments = CommandLine.arguments.dropFirst()
switch arguments.popFirst() {
case "record":
    guard let raw = arguments.popFirst(), arguments.isEmpty else { fail(usage) }
    do {
        try CaptureRecorder.run(input: STDIN_FILENO, rawPath: raw, timesPath: raw + ".times")
    } catch {
        fail("\(error)")
    }
case "draw":
    var lanes: [(sink: String, title: String)] = []
    var recordings = ".", marksPath: String?, eventsPath: String?, output: String?
    var title = "Earshot tour", subtitle = "", rate = 44_100
    while let argument = arguments.popFirst() {
        func value() -> String {
            guard let value = arguments.popFirst() else { fail("\(argument) needs a value") }
            return value
        }
        switch argument {
        case "--lane":
            let parts = value().split(separator: "=", maxSplits: 1).map(String.init)
            lanes.append((parts[0], parts.count > 1 ? parts[1] : parts[0]))
        case "--recordings": recordings = value()
        case "--marks": marksPath = value()
        case "--events": eventsPath = value()
        case "--title": title = value()
        case "--subtitle": subtitle = value()
        case "--rate": rate = Int(value()) ?? 0
        default:
            guard !argument.hasPrefix("--"), output == nil else { fail(usage) }
            output = argument
        }
    }
    guard let output, !lanes.isEmpty, rate > 0 else { fail(usage) }
    do {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? []
        let timelineLanes = try lanes.map { lane in
            let raws = files.filter { $0.hasPrefix(lane.sink + "-") && $0.hasSuffix(".raw") }.sorted()
            let captures = try raws.map {
                try Capture.load(
                    raw: recordings + "/" + $0, times: recordings + "/" + $0 + ".times", sampleRate: rate)
            }
            return TimelineLane(sink: lane.sink, title: lane.title, captures: captures)
        }
        func read(_ path: String?) throws -> String {
            guard let path else { return "" }
            guard let data = FileManager.default.contents(atPath: path) else { throw TimelineError.unreadable(path) }
            return String(decoding: data, as: UTF8.self)
        }
        let input = TimelineInput(
            title: title, subtitle: subtitle, lanes: timelineLanes,
            marks: try Mark.parse(try read(marksPath), file: marksPath ?? "marks"),
            states: StateChange.parse(eventLog: try read(eventsPath)))
        try TimelineSVG.render(input).write(toFile: output, atomically: true, encoding: .utf8)
        for result in TimelineSVG.soundAfterUnplugs(input) {
            let window = formatted("%.1f", result.to - result.from)
            let what = result.jackPulled
                ? "\(result.unplugged)'s headphone jack was pulled" : "\(result.unplugged) was unplugged"
            print("after \(what): \(result.milliseconds) ms of sound on \(result.lane)"
                + " (in the \(window) s until the next step)")
        }
    } catch {
        fail("\(error)")
    }
default:
    fail(usage)
}
