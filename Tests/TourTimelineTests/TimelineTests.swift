// The tour's picture from small recordings written here: the recorder keeps every byte with its timing, the
// timing maps frames to wall-clock time, and the SVG is well-formed XML with one lane per sink, the waves where
// sound was, the unplugged gap, Earshot's states and every mark with its label.
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

@testable import TourTimeline

/// A small recorded tour: files in a fresh directory, as scripts/run --tour leaves them.
struct SmallTour {
    static let rate = 8_000
    /// 2026-11-30T10:00:00Z, the instant the made-up recordings begin.
    static let base = StateChange.parseTimestamp("2026-11-30T10:00:00.000Z")!

    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "tour-timeline-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Writes `SINK-N.raw` and its timing: `seconds` of audio beginning at `start` (seconds after `base`),
    /// `level(t)` the amplitude of a 400 Hz tone at `t` seconds into the recording, in 10 ms blocks that each
    /// arrive 5 ms after they were rendered.
    func record(_ name: String, start: Double, seconds: Double, level: (Double) -> Double) throws {
        let frames = Int(seconds * Double(Self.rate))
        var data = Data(capacity: frames * 4)
        for frame in 0..<frames {
            let t = Double(frame) / Double(Self.rate)
            let sample = Int16(level(t) * 32767 * sin(2 * .pi * 400 * t))
            withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) }
            withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) }
        }
        try data.write(to: URL(fileURLWithPath: "\(directory)/\(name).raw"))
        var times = ""
        let block = Self.rate / 100
        for end in stride(from: block, through: frames, by: block) {
            times += String(format: "%.6f %d\n", Self.base + start + Double(end) / Double(Self.rate) + 0.005, end * 4)
        }
        try times.write(toFile: "\(directory)/\(name).raw.times", atomically: true, encoding: .utf8)
    }

    func capture(_ name: String) throws -> Capture {
        try Capture.load(raw: "\(directory)/\(name).raw", times: "\(directory)/\(name).raw.times", sampleRate: Self.rate)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// The elements of an SVG document, with their attributes and text, in document order.
final class SVGOutline: NSObject, XMLParserDelegate {
    struct Element {
        var name: String
        var attributes: [String: String]
        var text = ""
        /// The ids of the `g` elements it sits in.
        var groups: [String]
    }

    private(set) var elements: [Element] = []
    private var open: [Int] = []

    /// Parses `svg`; nil when it is not well-formed XML.
    static func parse(_ svg: String) -> SVGOutline? {
        let outline = SVGOutline()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = outline
        return parser.parse() ? outline : nil
    }

    func parser(
        _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String]
    ) {
        let groups = open.compactMap { elements[$0].name == "g" ? elements[$0].attributes["id"] : nil }
        elements.append(Element(name: name, attributes: attributes, groups: groups))
        open.append(elements.count - 1)
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        open.removeLast()
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if let last = open.last { elements[last].text += string }
    }

    func all(_ name: String, in group: String? = nil, where attribute: String? = nil, is value: String? = nil)
        -> [Element]
    {
        elements.filter { element in
            element.name == name && (group.map { element.groups.contains($0) } ?? true)
                && (attribute.map { element.attributes[$0] == value } ?? true)
        }
    }
}

@Suite("Tour timeline")
struct TimelineTests {
    @Test("The recorder keeps every byte and notes each block's arrival")
    func recorderKeepsBytesAndTiming() throws {
        let tour = try SmallTour()
        defer { tour.remove() }
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let writeEnd = descriptors[1]
        let writer = Thread {
            for chunk in stride(from: 0, to: payload.count, by: 30_000) {
                let part = Array(payload[chunk..<min(chunk + 30_000, payload.count)])
                _ = part.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
                usleep(20_000)
            }
            close(writeEnd)
        }
        writer.start()
        let raw = tour.directory + "/speakers-1.raw"
        try CaptureRecorder.run(input: descriptors[0], rawPath: raw, timesPath: raw + ".times")
        close(descriptors[0])

        #expect(FileManager.default.contents(atPath: raw) == Data(payload))
        let lines = try String(contentsOfFile: raw + ".times", encoding: .utf8).split(separator: "\n")
        let entries = lines.map { $0.split(separator: " ") }.map { (Double($0[0])!, Int($0[1])!) }
        #expect(entries.count >= 4, "one line per block the pipe delivered: \(entries.count)")
        #expect(entries.last?.1 == payload.count)
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.0 <= $1.0 && $0.1 < $1.1 })
        let now = Date().timeIntervalSince1970
        #expect(abs(entries[0].0 - now) < 60, "wall-clock seconds since the epoch")
    }

    @Test("Frames map to wall-clock time; peaks land in their bins; unrecorded bins stay empty")
    func peaksOnTheWallClock() throws {
        let tour = try SmallTour()
        defer { tour.remove() }
        // Loud (0.5) for the first second, silent for the second.
        try tour.record("headphones-1", start: 1, seconds: 2) { $0 < 1 ? 0.5 : 0 }
        let capture = try tour.capture("headphones-1")
        let start = try #require(capture.startTime)
        #expect(abs(start - (SmallTour.base + 1)) < 0.006, "start estimate within the 5 ms delivery delay")
        #expect(abs(try #require(capture.endTime) - (SmallTour.base + 3)) < 0.006)

        var bins = [Float?](repeating: nil, count: 40)
        capture.accumulatePeaks(into: &bins, origin: SmallTour.base, binSeconds: 0.1)
        #expect(bins[0..<10].allSatisfy { $0 == nil }, "nothing recorded before the start")
        #expect(bins[11..<19].allSatisfy { abs(($0 ?? 0) - 0.5) < 0.01 }, "the tone's peak: \(bins[11..<19])")
        #expect(bins[21..<29].allSatisfy { $0 == 0 }, "silence is recorded as zero, not as missing")
        #expect(bins[31...].allSatisfy { $0 == nil }, "nothing recorded after the end")
    }

    @Test("The SVG has a lane per sink, waves, the unplugged gap, Earshot's states and every mark")
    func drawsLanesStatesAndMarks() throws {
        let tour = try SmallTour()
        defer { tour.remove() }
        // Headphones: music 0-4 s with a quiet call 1-2 s; unplugged 4-6 s; plugged back in at 6 s, but its new
        // recorder delivers only from 6.5 s (silent, then music from 7.5 s).
        try tour.record("headphones-1", start: 0, seconds: 4) { (1..<2).contains($0) ? 0.1 : 0.6 }
        try tour.record("headphones-2", start: 6.5, seconds: 2.5) { $0 < 1 ? 0 : 0.6 }
        // Speakers: silent until the move at 8 s.
        try tour.record("speakers-1", start: 0, seconds: 9) { $0 < 8 ? 0 : 0.6 }
        let b = SmallTour.base
        let marks = try Mark.parse("""
            \(b + 1)\tcallStart\tcall start
            \(b + 2)\tcallEnd\tcall end
            \(b + 2.5)\tuser\tyou pause
            \(b + 3)\tuser\tyou resume
            \(b + 4)\tunplug\tunplug\theadphones
            \(b + 6)\treplug\treplug\theadphones
            \(b + 8)\tmove\tmove to speakers

            """)
        let events = """
            2026-11-30T09:59:59.500Z server state=connected
            2026-11-30T09:59:59.900Z event kind=queueReplaced(1 tracks, at 0) playback=playing commands=openStream
            2026-11-30T10:00:01.010Z event kind=interruptionBegan(server) playback=paused(interruption) commands=cork
            2026-11-30T10:00:02.010Z event kind=interruptionEnded(server, resumeAllowed: true) playback=playing commands=uncork
            2026-11-30T10:00:04.010Z event kind=outputLost(deviceRemoved) playback=paused(outputLost) commands=cork,flush
            2026-11-30T10:00:07.500Z event kind=userPlay playback=playing commands=uncork

            """
        let states = StateChange.parse(eventLog: events)
        #expect(states.map(\.playback) == ["playing", "paused(interruption)", "playing", "paused(outputLost)", "playing"])
        #expect(abs(states[1].time - (b + 1.01)) < 0.0005)

        let input = TimelineInput(
            title: "Earshot tour <test> & more", subtitle: "made by TimelineTests",
            lanes: [
                TimelineLane(
                    sink: "headphones", title: "Headphones",
                    captures: [try tour.capture("headphones-2"), try tour.capture("headphones-1")]),
                TimelineLane(sink: "speakers", title: "Speakers", captures: [try tour.capture("speakers-1")]),
            ],
            marks: marks, states: states)
        let svg = try TimelineSVG.render(input, width: 1000)
        let outline = try #require(SVGOutline.parse(svg), "well-formed XML:\n\(svg.prefix(2000))")

        let root = try #require(outline.elements.first)
        #expect(root.name == "svg")
        #expect(root.attributes["xmlns"] == "http://www.w3.org/2000/svg")
        #expect(root.attributes["width"] == "1000")
        #expect(outline.all("title").first?.text == "Earshot tour <test> & more")

        // Lanes, top to bottom, titled, each with its waves.
        let lanes = outline.all("g", where: "class", is: "lane").map { $0.attributes["id"] }
        #expect(lanes == ["lane-headphones", "lane-speakers"])
        let laneTitles = outline.all("text").map(\.text)
        #expect(laneTitles.contains("Headphones") && laneTitles.contains("Speakers"))
        let headphoneWaves = outline.all("polygon", in: "lane-headphones", where: "class", is: "level")
        #expect(headphoneWaves.count == 2, "one wave before the unplug, one after the replug")
        #expect(outline.all("polygon", in: "lane-speakers", where: "class", is: "level").count == 1)

        // The unplugged gap: hatched on the headphones from the unplug (4 s) to the replug (6 s) of a 9 s plot
        // 810 px wide from x=150; the half second before the new recorder delivered is blank, not hatched.
        let gaps = outline.all("rect", in: "lane-headphones", where: "class", is: "no-device")
        #expect(gaps.count == 1)
        let gapX = try #require(gaps.first.flatMap { Double($0.attributes["x"] ?? "") })
        let gapWidth = try #require(gaps.first.flatMap { Double($0.attributes["width"] ?? "") })
        #expect(abs(gapX - (150 + 810 * 4 / 9)) < 3 && abs(gapWidth - 810 * 2 / 9) < 4, "\(gapX) \(gapWidth)")
        #expect(outline.all("rect", in: "lane-speakers", where: "class", is: "no-device").isEmpty)

        // The wave is tall where music played and flat where it did not: compare the top edge over the music
        // (0.5-1 s: 0.6 is -4.4 dBFS, 93% of the half height) with the silence after the replug (6-7 s).
        func topEdge(_ polygon: SVGOutline.Element, from: Double, to: Double) -> Double {
            let points = (polygon.attributes["points"] ?? "").split(separator: " ").compactMap { pair -> (Double, Double)? in
                let xy = pair.split(separator: ",").compactMap { Double($0) }
                return xy.count == 2 ? (xy[0], xy[1]) : nil
            }
            let low = 150 + 810 * from / 9, high = 150 + 810 * to / 9
            return points.filter { $0.0 > low && $0.0 < high }.map(\.1).min() ?? .infinity
        }
        let laneTop = try #require(outline.all("rect", in: "lane-headphones").first.flatMap { Double($0.attributes["y"] ?? "") })
        let centre = laneTop + 62
        let loud = centre - topEdge(headphoneWaves[0], from: 0.5, to: 1)
        let quiet = centre - topEdge(headphoneWaves[1], from: 6.7, to: 7.4)
        #expect(loud > 45 && loud < 54, "music: \(loud) px of 54")
        #expect(quiet < 1, "silence: \(quiet) px")

        // Earshot's states, in order; the call shaded.
        let spans = outline.all("rect", in: "states", where: "class", is: "state").map { $0.attributes["data-playback"] ?? "" }
        #expect(spans == ["playing", "paused(interruption)", "playing", "paused(outputLost)", "playing"])
        #expect(outline.all("rect", where: "class", is: "call").count == 1)

        // The speakers stayed silent from the unplug to the next step (the replug), and say so.
        #expect(TimelineSVG.soundAfterUnplugs(input).map(\.milliseconds) == [0])
        #expect(outline.all("text", in: "lane-speakers", where: "class", is: "after-unplug").map(\.text)
            == ["✓ silent after the unplug"])
        #expect(outline.all("text", in: "lane-headphones", where: "class", is: "after-unplug").isEmpty)

        // Every mark with its label, and the seconds along the axis.
        let markLabels = outline.all("text", in: "marks").map(\.text)
        #expect(markLabels == ["call start", "call end", "you pause", "you resume", "unplug", "replug", "move to speakers"])
        #expect(outline.all("line", in: "marks").count == 14, "each mark's line, broken over the strip")
        let ticks = outline.all("text", in: "axis").map(\.text)
        #expect(ticks.prefix(10) == ["0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s", "8 s", "9 s"])
        #expect(ticks.contains("seconds since the recording began"))

        // The legend names both lanes, the gap, the call, the states shown and the kinds of mark.
        let legend = outline.all("text", in: "legend").map(\.text)
        for words in ["Headphones: peak level (-60 to 0 dBFS)", "Speakers: peak level (-60 to 0 dBFS)",
                      "no device (unplugged)", "blank: not recorded (a recorder starting)", "during a phone call", "Earshot playing", "Earshot paused: call",
                      "Earshot paused: output lost", "phone call", "you (pause, resume)", "device (unplug, replug)",
                      "move to another device"] {
            #expect(legend.contains(words), "legend lacks \(words): \(legend)")
        }
    }

    @Test("Sound on another device after an unplug is measured in milliseconds and flagged")
    func soundAfterAnUnplug() throws {
        let tour = try SmallTour()
        defer { tour.remove() }
        try tour.record("headphones-1", start: 0, seconds: 2) { _ in 0.5 }
        // 25 ms of music on the speakers right after the unplug at 2 s: a leak.
        try tour.record("speakers-1", start: 0, seconds: 4) { (2.0..<2.025).contains($0) ? 0.5 : 0 }
        let b = SmallTour.base
        let input = TimelineInput(
            title: "leak", subtitle: "",
            lanes: [
                TimelineLane(sink: "headphones", title: "Headphones", captures: [try tour.capture("headphones-1")]),
                TimelineLane(sink: "speakers", title: "Speakers", captures: [try tour.capture("speakers-1")]),
            ],
            marks: [Mark(time: b + 2, kind: .unplug, label: "unplug", sink: "headphones"),
                    Mark(time: b + 3, kind: .user, label: "you resume")],
            states: [])
        let results = TimelineSVG.soundAfterUnplugs(input)
        #expect(results.count == 1)
        let result = try #require(results.first)
        #expect(result.unplugged == "headphones" && result.lane == "speakers")
        #expect(abs(result.to - result.from - 1) < 1e-9, "measured until the next step")
        #expect((23...27).contains(result.milliseconds), "\(result.milliseconds) ms")
        let outline = try #require(SVGOutline.parse(try TimelineSVG.render(input)))
        let note = outline.all("text", in: "lane-speakers", where: "class", is: "after-unplug").first
        #expect(note?.text == "✗ \(result.milliseconds) ms of sound after the unplug")
        #expect(note?.attributes["fill"] == "#C62828")
    }

    @Test("A pulled jack: every lane is measured, its own sink (the speaker port now) included, and none is hatched")
    func soundAfterAPulledJack() throws {
        let tour = try SmallTour()
        defer { tour.remove() }
        // 15 ms of music on the card's own sink right after the jack is pulled at 2 s: its speakers played it.
        try tour.record("card-1", start: 0, seconds: 4) { (2.0..<2.015).contains($0) ? 0.5 : 0 }
        try tour.record("headphones-1", start: 0, seconds: 4) { _ in 0 }
        let b = SmallTour.base
        let input = TimelineInput(
            title: "jack", subtitle: "",
            lanes: [
                TimelineLane(sink: "card", title: "Laptop card", captures: [try tour.capture("card-1")]),
                TimelineLane(sink: "headphones", title: "Headphones", captures: [try tour.capture("headphones-1")]),
            ],
            marks: [Mark(time: b + 2, kind: .jack, label: "jack pulled", sink: "card"),
                    Mark(time: b + 3, kind: .user, label: "you resume")],
            states: [])
        let results = TimelineSVG.soundAfterUnplugs(input)
        #expect(results.map(\.lane) == ["card", "headphones"] && results.allSatisfy(\.jackPulled))
        #expect((13...17).contains(results.first?.milliseconds ?? -1), "\(results)")
        #expect(results.last?.milliseconds == 0)
        #expect(TimelineSVG.absences(of: "card", marks: input.marks, end: b + 4).isEmpty)
        let outline = try #require(SVGOutline.parse(try TimelineSVG.render(input)))
        let note = outline.all("text", in: "lane-card", where: "class", is: "after-unplug").first
        #expect(note?.text == "✗ \(results.first?.milliseconds ?? -1) ms of sound after the jack was pulled")
    }

    @Test("Malformed marks are refused with their line; nothing recorded is an error, not an empty picture")
    func refusesBadInput() throws {
        #expect(throws: TimelineError.malformed(file: "marks", line: 2)) {
            try Mark.parse("1\tuser\tpause\n2\tdance\tparty\n")
        }
        let input = TimelineInput(title: "t", subtitle: "", lanes: [TimelineLane(sink: "a", title: "A", captures: [])],
                                  marks: [], states: [])
        #expect(throws: TimelineError.empty) { try TimelineSVG.render(input) }
    }
}
