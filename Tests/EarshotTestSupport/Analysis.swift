// Measurements on a Recording: level, where sound is, how long the gaps are, which frequency dominates
// and, for the position sweep (Fixtures.positionTrack), which moment of the track was playing.
//
// Times are recording times in seconds from the first sample unless a name says milliseconds.
// Silence on a null sink's monitor is exact zeros, so "audible" is decided per sample (the louder
// channel's magnitude against a dBFS threshold) and ranges have sample-exact edges; gaps shorter than
// 10 ms inside a range (a sine's zero crossings) do not split it. Frequencies come from a Goertzel scan
// over a Hann window, coarse then fine, with parabolic interpolation. On the decoded position MP3 a 20 ms
// window reads the track position to within 0.03 ms (10 ms: 0.15 ms; 5 ms: 3 ms), so what limits a
// position measurement is the sound server's timing, not the analysis.

import Foundation

/// One point of a position trace: the recording time and the track position heard then, if any.
public struct PositionSample: Sendable, Equatable {
    /// The recording time, in seconds.
    public let time: Double
    /// The track position (seconds into the position track), or `nil` where no sweep was heard.
    public let position: Double?

    /// Makes the point heard at recording time `time`.
    public init(time: Double, position: Double?) {
        self.time = time
        self.position = position
    }
}

/// The Goertzel algorithm: the power of one frequency in a block of samples, without a whole Fourier transform.
public enum Goertzel {
    /// The Goertzel power of `samples`, taken at `sampleRate` Hz, at `frequency` Hz.
    public static func power(
        of frequency: Double, in samples: UnsafeBufferPointer<Double>, sampleRate: Double
    ) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
        var previous = 0.0
        var beforePrevious = 0.0
        for sample in samples {
            let current = sample + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    }
}

/// `lower..<upper`, or an error naming `what` when a recording left no room between them. A range whose bounds
/// are the wrong way round traps, and a trap ends the whole test bundle (every test after it unrun) where an
/// error fails only this test, which the retry rule may then run again.
public func span(_ lower: Double, _ upper: Double, _ what: String) throws -> Range<Double> {
    guard lower <= upper else { throw ToolkitError("no room for \(what): \(lower) s is after \(upper) s") }
    return lower..<upper
}

extension Recording {
    /// The default threshold for "audible", in dBFS: about 10 steps of 16-bit audio.
    public static let defaultThreshold = -70.0

    /// The default length of analysis windows, in seconds (10 ms).
    public static let defaultWindow = 0.010

    /// Converts a level in dBFS to a linear magnitude (0 dBFS = 1.0).
    public static func magnitude(dBFS: Double) -> Double {
        pow(10, dBFS / 20)
    }

    /// Converts a linear magnitude to dBFS; silence is `-infinity`.
    public static func dBFS(magnitude: Double) -> Double {
        magnitude > 0 ? 20 * log10(magnitude) : -.infinity
    }

    /// The frame range of recording times `range`, clamped to the recording.
    public func frames(in range: Range<Double>) -> Range<Int> {
        let lower = frame(atTime: range.lowerBound)
        return lower..<max(lower, frame(atTime: range.upperBound))
    }

    /// The whole recording as a time range.
    public var wholeRange: Range<Double> { 0..<duration }

    /// The root-mean-square level (linear, of the mono mix) of the frames in `range`; 0 for an empty range.
    public func rms(in range: Range<Double>) -> Double {
        let frames = frames(in: range)
        guard !frames.isEmpty else { return 0 }
        var sum = 0.0
        for index in frames {
            let sample = Double(left[index] + right[index]) / 2
            sum += sample * sample
        }
        return (sum / Double(frames.count)).squareRoot()
    }

    /// The RMS levels, in dBFS, of consecutive windows of `window` seconds (default 10 ms) from the start.
    public func windowLevels(window: Double = defaultWindow) -> [Double] {
        let count = Int(duration / window)
        return (0..<count).map { index in
            Self.dBFS(magnitude: rms(in: Double(index) * window..<Double(index + 1) * window))
        }
    }

    /// Whether frame `index` is audible: the louder channel's magnitude reaches `magnitude`.
    private func isAudible(frame index: Int, magnitude: Float) -> Bool {
        max(abs(left[index]), abs(right[index])) >= magnitude
    }

    /// The stretches of sound within `range` (default: all), with sample-exact edges, in recording seconds.
    ///
    /// - Parameters:
    ///   - threshold: the level, in dBFS, a sample must reach to count as sound.
    ///   - bridging: silent gaps up to this long (seconds) inside sound do not end a stretch.
    public func audibleRanges(
        threshold: Double = defaultThreshold, bridging: Double = defaultWindow, within range: Range<Double>? = nil
    ) -> [Range<Double>] {
        let magnitude = Float(Self.magnitude(dBFS: threshold))
        let maximumGap = Int(bridging * Double(sampleRate))
        var ranges: [Range<Int>] = []
        var current: Range<Int>?
        for index in frames(in: range ?? wholeRange) where isAudible(frame: index, magnitude: magnitude) {
            if let open = current, index - open.upperBound <= maximumGap {
                current = open.lowerBound..<(index + 1)
            } else {
                if let open = current { ranges.append(open) }
                current = index..<(index + 1)
            }
        }
        if let open = current { ranges.append(open) }
        return ranges.map { time(ofFrame: $0.lowerBound)..<time(ofFrame: $0.upperBound) }
    }

    /// The total length, in milliseconds, of sound within `range` (default: all); see `audibleRanges`.
    public func audibleMilliseconds(
        threshold: Double = defaultThreshold, within range: Range<Double>? = nil
    ) -> Double {
        audibleRanges(threshold: threshold, within: range).reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } * 1000
    }

    /// The total length, in milliseconds, of sound in the whole recording at the default threshold.
    public var audibleMilliseconds: Double { audibleMilliseconds() }

    /// How much sound, in milliseconds, this sink played after the wall-clock `instant`.
    ///
    /// The instant is placed in the recording through `startInstant`, so the answer is good to about
    /// +/-20 ms at its start (see MonitorRecorder). Where a sink was silent until the event (the speakers
    /// before an unplug), prefer `audibleMilliseconds` on the whole recording: it is sample-exact.
    public func audibleMilliseconds(
        after instant: ContinuousClock.Instant, threshold: Double = defaultThreshold
    ) -> Double {
        let start = max(0, time(of: instant))
        guard start < duration else { return 0 }
        return audibleMilliseconds(threshold: threshold, within: start..<duration)
    }

    /// The recording time of the first audible sample at or after `time` seconds, or `nil` if none.
    public func firstAudibleTime(after time: Double = 0, threshold: Double = defaultThreshold) -> Double? {
        let magnitude = Float(Self.magnitude(dBFS: threshold))
        return frames(in: time..<duration).first { isAudible(frame: $0, magnitude: magnitude) }.map(time(ofFrame:))
    }

    /// The recording time just after the last audible sample at or before `time` seconds (default: the end).
    public func lastAudibleTime(before time: Double? = nil, threshold: Double = defaultThreshold) -> Double? {
        let magnitude = Float(Self.magnitude(dBFS: threshold))
        return frames(in: 0..<(time ?? duration)).last { isAudible(frame: $0, magnitude: magnitude) }
            .map { self.time(ofFrame: $0 + 1) }
    }

    /// The longest run of silence, in seconds, inside `range`, measured sample by sample (no bridging).
    ///
    /// Runs that touch the edges of `range` count only their part inside it. Use it within an audible
    /// range to find gaps between gapless tracks or dropouts.
    public func longestSilence(within range: Range<Double>, threshold: Double = defaultThreshold) -> Double {
        let magnitude = Float(Self.magnitude(dBFS: threshold))
        var longest = 0
        var run = 0
        for index in frames(in: range) {
            if isAudible(frame: index, magnitude: magnitude) {
                run = 0
            } else {
                run += 1
                longest = max(longest, run)
            }
        }
        return Double(longest) / Double(sampleRate)
    }

    /// The mono mix of the frames in `range`, multiplied by a Hann window.
    private func hannWindowed(_ range: Range<Double>) -> [Double] {
        let frames = frames(in: range)
        let count = frames.count
        guard count > 1 else { return [] }
        return frames.enumerated().map { offset, index in
            let weight = 0.5 - 0.5 * cos(2 * Double.pi * Double(offset) / Double(count - 1))
            return weight * Double(left[index] + right[index]) / 2
        }
    }

    /// The Goertzel power of `samples` at `frequency` Hz.
    private func goertzelPower(_ samples: UnsafeBufferPointer<Double>, frequency: Double) -> Double {
        Goertzel.power(of: frequency, in: samples, sampleRate: Double(sampleRate))
    }

    /// The amplitude (linear, 1.0 = full scale) of a sine at `frequency` Hz in `range`, Hann-windowed.
    ///
    /// Useful to ask "is the phone call's tone here?" while something else plays too.
    public func toneAmplitude(atFrequency frequency: Double, in range: Range<Double>) -> Double {
        let samples = hannWindowed(range)
        guard !samples.isEmpty else { return 0 }
        let power = samples.withUnsafeBufferPointer { goertzelPower($0, frequency: frequency) }
        // A Hann window sums to half the window length; a sine of amplitude A then peaks at A * N / 4.
        return 4 * power.squareRoot() / Double(samples.count)
    }

    /// The stretches of `range` that carry a sine at `frequency` Hz of at least `amplitude` (linear).
    ///
    /// Found in 10 ms windows, so edges are good to about 10 ms. Useful to tell music from a phone call
    /// on one sink (`Fixtures.phoneCallFrequencies`).
    public func toneRanges(
        atFrequency frequency: Double, amplitude: Double = 0.05, within range: Range<Double>
    ) -> [Range<Double>] {
        let window = Self.defaultWindow
        var ranges: [Range<Double>] = []
        let lastStart = min(duration, range.upperBound) - window
        for start in stride(from: max(0, range.lowerBound), through: lastStart, by: window)
        where toneAmplitude(atFrequency: frequency, in: start..<start + window) >= amplitude {
            if let last = ranges.last, abs(last.upperBound - start) < window / 2 {
                ranges[ranges.count - 1] = last.lowerBound..<start + window
            } else {
                ranges.append(start..<start + window)
            }
        }
        return ranges
    }

    /// How many milliseconds of `range` carry a sine at `frequency` Hz of at least `amplitude` (linear).
    ///
    /// Counted in 10 ms windows (see `toneRanges`), so the answer is a multiple of 10 ms.
    public func toneMilliseconds(
        atFrequency frequency: Double, amplitude: Double = 0.05, within range: Range<Double>
    ) -> Double {
        toneRanges(atFrequency: frequency, amplitude: amplitude, within: range)
            .reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } * 1000
    }

    /// The strongest frequency, in Hz, in the recording times `range`, searched within `band`.
    ///
    /// A coarse scan in half-bin steps finds the peak, a fine scan around it in 1/20-bin steps and a
    /// parabola through the three best points place it. Returns `nil` when the window is below `threshold`
    /// (RMS, dBFS) or shorter than 2 ms.
    public func dominantFrequency(
        in range: Range<Double>, band: ClosedRange<Double> = 20...20_000, threshold: Double = -60
    ) -> Double? {
        guard range.upperBound - range.lowerBound >= 0.002,
              Self.dBFS(magnitude: rms(in: range)) >= threshold
        else { return nil }
        let samples = hannWindowed(range)
        return samples.withUnsafeBufferPointer { buffer -> Double? in
            /// The frequencies from `low` through `high` in steps of `step`, their powers, and the strongest's index.
            func scan(
                _ low: Double, _ high: Double, step: Double
            ) -> (frequencies: [Double], powers: [Double], best: Int) {
                let frequencies = Array(stride(from: low, through: high, by: step))
                let powers = frequencies.map { goertzelPower(buffer, frequency: $0) }
                return (frequencies, powers, powers.indices.max { powers[$0] < powers[$1] } ?? 0)
            }
            let binWidth = Double(sampleRate) / Double(buffer.count)
            let coarseStep = binWidth / 2
            let coarse = scan(band.lowerBound, band.upperBound, step: coarseStep)
            guard !coarse.frequencies.isEmpty else { return nil }
            let peak = coarse.frequencies[coarse.best]
            let fine = scan(
                max(band.lowerBound, peak - coarseStep), min(band.upperBound, peak + coarseStep), step: binWidth / 20)
            let best = fine.best
            guard best > 0, best < fine.powers.count - 1 else { return fine.frequencies[best] }
            // The vertex of the parabola through the peak and its neighbours, in units of the fine step.
            let (before, at, after) = (fine.powers[best - 1], fine.powers[best], fine.powers[best + 1])
            let curvature = before - 2 * at + after
            let shift = curvature == 0 ? 0 : 0.5 * (before - after) / curvature
            return fine.frequencies[best] + shift * binWidth / 20
        }
    }

    /// The position (seconds into `Fixtures.positionTrack`) heard around recording time `time`, or `nil`.
    ///
    /// Reads the sweep's frequency in a window of `window` seconds centred on `time` and maps it back with
    /// `Fixtures.trackTime(atSweepFrequency:)`. `nil` when the window is silent or its strongest tone is
    /// outside the sweep's band. A window that straddles a jump (a seek, a pause) reads as a blend: sample
    /// at least `window / 2` away from such edges.
    ///
    /// - Parameter positions: where in the track to look (seconds), if known; a narrower search is faster.
    public func trackPosition(
        atTime time: Double, window: Double = 0.020, positions: ClosedRange<Double>? = nil
    ) -> Double? {
        let band = positions.map { positions in
            let low = Fixtures.sweepFrequency(atTrackTime: positions.lowerBound) - 50
            return low...(Fixtures.sweepFrequency(atTrackTime: positions.upperBound) + 50)
        } ?? Fixtures.sweepBand()
        let range = (time - window / 2)..<(time + window / 2)
        guard let frequency = dominantFrequency(in: range, band: band) else { return nil }
        // A peak at the band's edge means the strongest tone lies outside it: not the sweep.
        let edge = 10.0
        guard frequency > band.lowerBound + edge, frequency < band.upperBound - edge else { return nil }
        return Fixtures.trackTime(atSweepFrequency: frequency)
    }

    /// The track positions heard every `step` seconds across `range`, for finding jumps, stalls and repeats.
    ///
    /// Costs about 5 ms per point in a debug build with the full band; pass `positions` to narrow it.
    public func positionTrace(
        in range: Range<Double>, step: Double = 0.010, window: Double = 0.020, positions: ClosedRange<Double>? = nil
    ) -> [PositionSample] {
        stride(from: range.lowerBound, to: range.upperBound, by: step).map {
            PositionSample(time: $0, position: trackPosition(atTime: $0, window: window, positions: positions))
        }
    }
}
