// The tour's picture: one lane per sink with its peak level over time, a strip with Earshot's playback state,
// the tour's steps as labelled lines across both, phone calls shaded, seconds along the bottom and a legend.
// Plain SVG 1.1 with inline attributes only (no CSS, no scripts), so rsvg-convert, ImageMagick and browsers
// all draw it the same way.
import FoundationEssentials
import Glibc

/// One sink's lane: its title and what was recorded from its monitor (several captures when it was unplugged
/// and plugged back in).
public struct TimelineLane: Sendable {
    /// The sink's name, e.g. `headphones` (used in element ids).
    public var sink: String
    /// The lane's title, e.g. `Headphones`.
    public var title: String
    /// The recordings of the sink's monitor, in any order.
    public var captures: [Capture]

    /// A lane for `sink`.
    public init(sink: String, title: String, captures: [Capture]) {
        self.sink = sink
        self.title = title
        self.captures = captures
    }
}

/// Everything the picture shows.
public struct TimelineInput: Sendable {
    /// The heading.
    public var title: String
    /// The line under the heading.
    public var subtitle: String
    /// The lanes, top to bottom.
    public var lanes: [TimelineLane]
    /// The tour's steps.
    public var marks: [Mark]
    /// Earshot's playback state after each event, in time order.
    public var states: [StateChange]

    /// The picture's content.
    public init(title: String, subtitle: String, lanes: [TimelineLane], marks: [Mark], states: [StateChange]) {
        self.title = title
        self.subtitle = subtitle
        self.lanes = lanes
        self.marks = marks
        self.states = states
    }
}

/// Draws a `TimelineInput` as SVG.
public enum TimelineSVG {
    /// The quietest level drawn, in dBFS: the wave's height is the peak level on a scale from here to 0 dBFS.
    public static let floorDecibels: Float = -60

    /// The colour of a lane's wave, by position (the first lane is the one Earshot starts on).
    static let laneColours = ["#3949AB", "#8E24AA", "#00897B", "#6D4C41"]

    /// How a mark kind is drawn and named in the legend.
    static func style(of kind: Mark.Kind) -> (colour: String, legend: String) {
        switch kind {
        case .callStart, .callEnd: return ("#E65100", "phone call")
        case .user: return ("#1565C0", "you (pause, resume)")
        case .unplug, .replug: return ("#C62828", "device (unplug, replug)")
        case .jack: return ("#C62828", "headphone jack pulled")
        case .move: return ("#00796B", "move to another device")
        }
    }

    /// How a playback state is drawn: its fill, its text colour and its words.
    static func style(ofPlayback playback: String) -> (fill: String, text: String, words: String) {
        switch playback {
        case "playing": return ("#43A047", "#FFFFFF", "playing")
        case "paused(interruption)": return ("#FFB74D", "#4E342E", "paused: call")
        case "paused(user)": return ("#64B5F6", "#0D2A4A", "paused by you")
        case "paused(resumeDeclined)": return ("#90CAF9", "#0D2A4A", "paused: call ended, not resumed")
        case "paused(outputLost)": return ("#E57373", "#FFFFFF", "paused: output lost")
        case "stopped", "idle": return ("#BDBDBD", "#212121", "stopped")
        default: return ("#CFD8DC", "#212121", playback)
        }
    }

    /// The wave's half-height fraction (0...1) for a linear peak magnitude.
    static func heightFraction(peak: Float) -> Float {
        guard peak > 0 else { return 0 }
        let decibels = 20 * log10(peak)
        return min(1, max(0, (decibels - floorDecibels) / -floorDecibels))
    }

    /// A width estimate for `text` at `size` px in DejaVu Sans (about 0.6 em per character), for layout.
    static func textWidth(_ text: String, size: Double) -> Double {
        Double(text.count) * size * 0.6
    }

    /// The SVG document, `width` pixels wide.
    ///
    /// - Throws: `TimelineError.empty` when no lane recorded anything.
    public static func render(_ input: TimelineInput, width: Int = 1280) throws -> String {
        let starts = input.lanes.flatMap(\.captures).compactMap(\.startTime)
        let ends = input.lanes.flatMap(\.captures).compactMap(\.endTime)
        guard let origin = starts.min(), let end = ends.max(), end > origin else { throw TimelineError.empty }
        let duration = end - origin

        let totalWidth = Double(width)
        let plotLeft = 150.0
        let plotRight = totalWidth - 40
        let plotWidth = plotRight - plotLeft
        func x(_ time: Double) -> Double { plotLeft + (time - origin) / duration * plotWidth }

        // Mark labels in rows, each placed in the first row where it does not overlap the one before it.
        let labelSize = 12.5
        let labelTop = 84.0
        let rowHeight = 19.0
        let visibleMarks = input.marks.filter { $0.time >= origin && $0.time <= end }
        var rowEnds: [Double] = []
        var markRows: [Int] = []
        for mark in visibleMarks {
            let left = x(mark.time) - 5
            let right = x(mark.time) + 5 + textWidth(mark.label, size: labelSize)
            if let row = rowEnds.firstIndex(where: { $0 + 8 <= left }) {
                rowEnds[row] = right
                markRows.append(row)
            } else {
                rowEnds.append(right)
                markRows.append(rowEnds.count - 1)
            }
        }
        let stripTop = labelTop + Double(max(rowEnds.count, 1)) * rowHeight + 10
        let stripHeight = 28.0
        let lanesTop = stripTop + stripHeight + 14
        let laneHeight = 124.0
        let laneGap = 12.0
        let plotBottom = lanesTop + Double(input.lanes.count) * laneHeight
            + Double(max(input.lanes.count - 1, 0)) * laneGap

        var svg = SVGWriter()
        var defs = SVGWriter()
        defs.line("""
            <pattern id="unplugged" width="8" height="8" patternUnits="userSpaceOnUse" \
            patternTransform="rotate(45)"><rect width="8" height="8" fill="#F3F3F3"/>\
            <line x1="0" y1="0" x2="0" y2="8" stroke="#C9CCD1" stroke-width="3"/></pattern>
            """)
        defs.line("""
            <clipPath id="strip-clip"><rect x="\(f(plotLeft))" y="\(f(stripTop))" width="\(f(plotWidth))" \
            height="\(f(stripHeight))" rx="5"/></clipPath>
            """)

        // Heading.
        svg.line("<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>")
        svg.line("""
            <text x="\(f(plotLeft))" y="40" font-size="22" font-weight="bold" fill="#1F2933">\(escape(input.title))</text>
            """)
        svg.line("""
            <text x="\(f(plotLeft))" y="62" font-size="13.5" fill="#5F6B7A">\(escape(input.subtitle))</text>
            """)

        // Seconds: grid lines behind everything, labels under the lanes.
        let step = tickStep(for: duration)
        var ticks = SVGWriter()
        var tick = 0.0
        while tick <= duration + 1e-9 {
            let tickX = x(origin + tick)
            svg.line("""
                <line x1="\(f(tickX))" y1="\(f(stripTop))" x2="\(f(tickX))" y2="\(f(plotBottom))" \
                stroke="#E4E7EB" stroke-width="1"/>
                """)
            ticks.line("""
                <line x1="\(f(tickX))" y1="\(f(plotBottom))" x2="\(f(tickX))" y2="\(f(plotBottom + 5))" \
                stroke="#7B8794" stroke-width="1"/>
                """)
            ticks.line("""
                <text x="\(f(tickX))" y="\(f(plotBottom + 20))" font-size="12" fill="#52606D" \
                text-anchor="middle">\(Int(tick.rounded())) s</text>
                """)
            tick += step
        }

        // Earshot's state strip.
        svg.line("""
            <text x="\(f(plotLeft - 14))" y="\(f(stripTop + 19))" font-size="14" font-weight="bold" \
            fill="#1F2933" text-anchor="end">Earshot</text>
            """)
        svg.line("""
            <rect x="\(f(plotLeft))" y="\(f(stripTop))" width="\(f(plotWidth))" height="\(f(stripHeight))" \
            rx="5" fill="#F0F2F5"/>
            """)
        var shownStates: [String] = []
        svg.line("<g id=\"states\" clip-path=\"url(#strip-clip)\">")
        for span in stateSpans(input.states, origin: origin, end: end) {
            let look = style(ofPlayback: span.playback)
            if !shownStates.contains(look.words) { shownStates.append(look.words) }
            let left = x(span.start), spanWidth = x(span.end) - left
            svg.line("""
                <rect class="state" data-playback="\(escape(span.playback))" x="\(f(left))" y="\(f(stripTop))" \
                width="\(f(spanWidth))" height="\(f(stripHeight))" fill="\(look.fill)"/>
                """)
            if spanWidth >= textWidth(look.words, size: 12) + 10 {
                svg.line("""
                    <text x="\(f(left + spanWidth / 2))" y="\(f(stripTop + 18.5))" font-size="12" \
                    fill="\(look.text)" text-anchor="middle">\(escape(look.words))</text>
                    """)
            }
        }
        svg.line("</g>")

        // Lanes.
        let binCount = max(Int(plotWidth.rounded()), 1)
        let binSeconds = duration / Double(binCount)
        let binWidth = plotWidth / Double(binCount)
        var unrecordedShown = false
        let silences = soundAfterUnplugs(input)
        for (index, lane) in input.lanes.enumerated() {
            let top = lanesTop + Double(index) * (laneHeight + laneGap)
            let centre = top + laneHeight / 2
            let halfHeight = laneHeight / 2 - 8
            let colour = laneColours[index % laneColours.count]
            var bins = [Float?](repeating: nil, count: binCount)
            for capture in lane.captures {
                capture.accumulatePeaks(into: &bins, origin: origin, binSeconds: binSeconds)
            }
            svg.line("<g id=\"lane-\(escape(lane.sink))\" class=\"lane\">")
            svg.line("""
                <rect x="\(f(plotLeft))" y="\(f(top))" width="\(f(plotWidth))" height="\(f(laneHeight))" rx="6" \
                fill="#F7F8FA" stroke="#E4E7EB"/>
                """)
            svg.line("""
                <text x="\(f(plotLeft - 14))" y="\(f(centre - 2))" font-size="15" font-weight="bold" \
                fill="\(colour)" text-anchor="end">\(escape(lane.title))</text>
                """)
            svg.line("""
                <text x="\(f(plotLeft - 14))" y="\(f(centre + 15))" font-size="11" fill="#7B8794" \
                text-anchor="end">sink \(escape(lane.sink))</text>
                """)
            // Where the sink did not exist (from its unplug to its replug): hatched.
            let absent = absences(of: lane.sink, marks: input.marks, end: end)
            for span in absent {
                let left = x(max(span.lowerBound, origin)), right = x(min(span.upperBound, end))
                guard right > left else { continue }
                svg.line("""
                    <rect class="no-device" x="\(f(left))" y="\(f(top + 1))" width="\(f(right - left))" \
                    height="\(f(laneHeight - 2))" fill="url(#unplugged)"/>
                    """)
                if right - left >= 84 {
                    svg.line("""
                        <text x="\(f((left + right) / 2))" y="\(f(centre + 4))" font-size="12" \
                        font-style="italic" fill="#7B8794" text-anchor="middle">no device</text>
                        """)
                }
            }
            for run in runs(of: bins) {
                guard bins[run.lowerBound] != nil else {
                    // Not recorded while the sink existed: a recorder that had not started delivering yet.
                    let start = origin + Double(run.lowerBound) * binSeconds
                    let stop = origin + Double(run.upperBound) * binSeconds
                    let explained = absent.contains {
                        $0.lowerBound <= start + binSeconds && $0.upperBound >= stop - binSeconds
                    }
                    if !explained && Double(run.count) * binWidth >= 3 { unrecordedShown = true }
                    continue
                }
                var upper: [String] = []
                var lower: [String] = []
                for bin in run {
                    let height = max(Double(heightFraction(peak: bins[bin] ?? 0)) * halfHeight, 0.6)
                    let binLeft = plotLeft + Double(bin) * binWidth
                    upper.append("\(f(binLeft)),\(f(centre - height)) \(f(binLeft + binWidth)),\(f(centre - height))")
                    lower.append("\(f(binLeft + binWidth)),\(f(centre + height)) \(f(binLeft)),\(f(centre + height))")
                }
                svg.line("""
                    <polygon class="level" fill="\(colour)" fill-opacity="0.85" \
                    points="\(upper.joined(separator: " ")) \(lower.reversed().joined(separator: " "))"/>
                    """)
            }
            // What reached this sink after another one was unplugged, until the next step.
            for silence in silences where silence.lane == lane.sink {
                let quiet = silence.milliseconds <= 10
                let event = silence.jackPulled ? "the jack was pulled" : "the unplug"
                let words = silence.milliseconds == 0
                    ? "silent after \(event)" : "\(silence.milliseconds) ms of sound after \(event)"
                svg.line("""
                    <text class="after-unplug" x="\(f(x(silence.from) + 6))" y="\(f(top + laneHeight - 10))" \
                    font-size="11.5" font-weight="bold" fill="\(quiet ? "#2E7D32" : "#C62828")">\
                    \(quiet ? "✓" : "✗") \(words)</text>
                    """)
            }
            svg.line("</g>")
        }

        // Phone calls: the time between a call's start and its end, shaded over the strip and the lanes.
        var callStart: Double?
        for mark in input.marks {
            switch mark.kind {
            case .callStart: callStart = mark.time
            case .callEnd:
                if let start = callStart {
                    let left = x(max(start, origin)), right = x(min(mark.time, end))
                    if right > left {
                        svg.line("""
                            <rect class="call" x="\(f(left))" y="\(f(stripTop))" width="\(f(right - left))" \
                            height="\(f(plotBottom - stripTop))" fill="#FF9800" fill-opacity="0.10"/>
                            """)
                    }
                }
                callStart = nil
            default: break
            }
        }

        // The tour's steps: a line through everything, its label above.
        var shownKinds: [String] = []
        svg.line("<g id=\"marks\">")
        for (mark, row) in zip(visibleMarks, markRows) {
            let look = style(of: mark.kind)
            if !shownKinds.contains(look.legend) { shownKinds.append(look.legend) }
            let markX = x(mark.time)
            let rowTop = labelTop + Double(row) * rowHeight
            svg.line("<g class=\"mark\" data-kind=\"\(mark.kind.rawValue)\">")
            // Broken over Earshot's strip, whose own edges show the moment there, so its words stay readable.
            for (from, to) in [(rowTop + 4, stripTop), (stripTop + stripHeight, plotBottom)] {
                svg.line("""
                    <line x1="\(f(markX))" y1="\(f(from))" x2="\(f(markX))" y2="\(f(to))" \
                    stroke="\(look.colour)" stroke-width="1.6" stroke-dasharray="5 3"/>
                    """)
            }
            svg.line("""
                <circle cx="\(f(markX))" cy="\(f(rowTop + 9))" r="3.5" fill="\(look.colour)"/>
                """)
            svg.line("""
                <text x="\(f(markX + 7))" y="\(f(rowTop + 13))" font-size="\(f(labelSize))" font-weight="bold" \
                fill="\(look.colour)">\(escape(mark.label))</text>
                """)
            svg.line("</g>")
        }
        svg.line("</g>")

        // The axis.
        svg.line("<g id=\"axis\">")
        svg.line("""
            <line x1="\(f(plotLeft))" y1="\(f(plotBottom))" x2="\(f(plotRight))" y2="\(f(plotBottom))" \
            stroke="#7B8794" stroke-width="1"/>
            """)
        svg.append(ticks)
        svg.line("""
            <text x="\(f(plotLeft + plotWidth / 2))" y="\(f(plotBottom + 40))" font-size="12.5" fill="#52606D" \
            text-anchor="middle">seconds since the recording began</text>
            """)
        svg.line("</g>")

        // The legend: what each colour and pattern means, in flowing rows.
        var items: [(swatch: String, text: String)] = []
        for (index, lane) in input.lanes.enumerated() {
            items.append(("<rect width=\"16\" height=\"12\" y=\"1\" rx=\"2\" fill=\"\(laneColours[index % laneColours.count])\"/>",
                          "\(lane.title): peak level (\(Int(floorDecibels)) to 0 dBFS)"))
        }
        if input.marks.contains(where: { $0.kind == .unplug && $0.sink != nil }) {
            items.append(("<rect width=\"16\" height=\"12\" y=\"1\" fill=\"url(#unplugged)\" stroke=\"#C9CCD1\"/>",
                          "no device (unplugged)"))
        }
        if unrecordedShown {
            items.append(("""
                <rect width="16" height="12" y="1" fill="#F7F8FA" stroke="#C9CCD1" stroke-dasharray="2 2"/>
                """, "blank: not recorded (a recorder starting)"))
        }
        if input.marks.contains(where: { $0.kind == .callStart }) {
            items.append(("<rect width=\"16\" height=\"12\" y=\"1\" fill=\"#FF9800\" fill-opacity=\"0.25\"/>",
                          "during a phone call"))
        }
        for words in shownStates {
            let fill = ["playing", "paused(interruption)", "paused(user)", "paused(resumeDeclined)",
                        "paused(outputLost)", "stopped"].map { style(ofPlayback: $0) }.first { $0.words == words }?.fill
                ?? "#CFD8DC"
            items.append(("<rect width=\"16\" height=\"12\" y=\"1\" rx=\"2\" fill=\"\(fill)\"/>", "Earshot \(words)"))
        }
        for kind in Mark.Kind.allCases {
            let look = style(of: kind)
            guard shownKinds.contains(look.legend), !items.contains(where: { $0.text == look.legend }) else { continue }
            items.append(("""
                <line x1="8" y1="0" x2="8" y2="14" stroke="\(look.colour)" stroke-width="1.6" \
                stroke-dasharray="4 2"/><circle cx="8" cy="4" r="3" fill="\(look.colour)"/>
                """, look.legend))
        }
        let legendTop = plotBottom + 62
        var legendX = plotLeft, legendRow = 0
        svg.line("<g id=\"legend\">")
        for item in items {
            let itemWidth = 24 + textWidth(item.text, size: 12) + 22
            if legendX + itemWidth > plotRight && legendX > plotLeft {
                legendX = plotLeft
                legendRow += 1
            }
            let itemY = legendTop + Double(legendRow) * 22
            svg.line("<g transform=\"translate(\(f(legendX)),\(f(itemY)))\">\(item.swatch)")
            svg.line("<text x=\"24\" y=\"12\" font-size=\"12\" fill=\"#323F4B\">\(escape(item.text))</text></g>")
            legendX += itemWidth
        }
        svg.line("</g>")
        let height = legendTop + Double(legendRow + 1) * 22 + 16

        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(Int(height.rounded(.up)))" \
            viewBox="0 0 \(width) \(Int(height.rounded(.up)))" font-family="DejaVu Sans, Verdana, Arial, sans-serif">
            <title>\(escape(input.title))</title>
            <defs>
            \(defs.text)</defs>
            \(svg.text)</svg>

            """
    }

    /// Where `sink` did not exist: from each of its unplug marks to its next replug mark (or `end`).
    static func absences(of sink: String, marks: [Mark], end: Double) -> [Range<Double>] {
        var spans: [Range<Double>] = []
        var unpluggedAt: Double?
        for mark in marks where mark.sink == sink {
            switch mark.kind {
            case .unplug: unpluggedAt = unpluggedAt ?? mark.time
            case .replug:
                if let start = unpluggedAt, mark.time > start { spans.append(start..<mark.time) }
                unpluggedAt = nil
            default: break
            }
        }
        if let start = unpluggedAt, end > start { spans.append(start..<end) }
        return spans
    }

    /// How much sound reached another lane after a sink was unplugged.
    public struct SoundAfterUnplug: Sendable, Equatable {
        /// The sink that was unplugged.
        public var unplugged: String
        /// The lane measured.
        public var lane: String
        /// When the sink was unplugged (seconds since the epoch).
        public var from: Double
        /// Where the measurement ends: the tour's next step, or the end of the recordings.
        public var to: Double
        /// Milliseconds in which the lane's peak reached -60 dBFS or more.
        public var milliseconds: Int
        /// Whether it was a headphone jack pulled (the sink stayed) rather than the sink unplugged.
        public var jackPulled: Bool
    }

    /// For every unplug mark naming a sink: the milliseconds of sound each other lane played from the unplug to
    /// the tour's next step (the device Earshot falls back to must stay silent; RULES.md allows 10 ms); for every
    /// jack mark, the same on every lane, the jack's own sink (its speaker port now) included.
    public static func soundAfterUnplugs(_ input: TimelineInput) -> [SoundAfterUnplug] {
        let end = input.lanes.flatMap(\.captures).compactMap(\.endTime).max() ?? 0
        var results: [SoundAfterUnplug] = []
        for (index, mark) in input.marks.enumerated() where mark.kind == .unplug || mark.kind == .jack {
            guard let unplugged = mark.sink else { continue }
            let to = min(input.marks.dropFirst(index + 1).first { $0.time > mark.time }?.time ?? end, end)
            guard to > mark.time else { continue }
            // A pulled jack leaves its sink playing on the speaker port: that lane must stay silent too.
            for lane in input.lanes where lane.sink != unplugged || mark.kind == .jack {
                var bins = [Float?](repeating: nil, count: Int(((to - mark.time) * 1000).rounded(.down)))
                for capture in lane.captures {
                    capture.accumulatePeaks(into: &bins, origin: mark.time, binSeconds: 0.001)
                }
                // A lane that recorded nothing then (its device not there yet) has nothing to say.
                guard bins.contains(where: { $0 != nil }) else { continue }
                let audible = bins.filter { ($0 ?? 0) >= 0.001 }.count
                results.append(SoundAfterUnplug(
                    unplugged: unplugged, lane: lane.sink, from: mark.time, to: to, milliseconds: audible,
                    jackPulled: mark.kind == .jack))
            }
        }
        return results
    }

    /// The distance between axis labels: the smallest of 1, 2, 5, 10, 15, 20, 30, 60... s giving at most 16 labels.
    static func tickStep(for duration: Double) -> Double {
        for step in [1.0, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600] where duration / step <= 16 { return step }
        return (duration / 16 / 600).rounded(.up) * 600
    }

    /// Playback states as spans within `origin...end`, neighbours with the same state merged.
    static func stateSpans(_ changes: [StateChange], origin: Double, end: Double)
        -> [(start: Double, end: Double, playback: String)]
    {
        var spans: [(start: Double, end: Double, playback: String)] = []
        for (index, change) in changes.enumerated() {
            let start = max(change.time, origin)
            let stop = min(index + 1 < changes.count ? changes[index + 1].time : end, end)
            guard stop > start else { continue }
            if let last = spans.last, last.playback == change.playback, last.end >= start {
                spans[spans.count - 1].end = stop
            } else {
                spans.append((start, stop, change.playback))
            }
        }
        return spans
    }

    /// Consecutive runs of bins that are all recorded or all unrecorded.
    static func runs(of bins: [Float?]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = 0
        for index in 1...bins.count where index == bins.count || (bins[index] == nil) != (bins[start] == nil) {
            runs.append(start..<index)
            start = index
        }
        return runs
    }

    /// A coordinate with at most one decimal.
    static func f(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    /// `text` with XML's special characters escaped.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

/// Collects SVG lines.
struct SVGWriter {
    /// The lines so far, each ending in a newline.
    private(set) var text = ""

    /// Adds one line.
    mutating func line(_ line: String) { text += line + "\n" }

    /// Adds another writer's lines.
    mutating func append(_ other: SVGWriter) { text += other.text }
}
