// One stretch of a sink's monitor, recorded by `earshot-timeline record` from parec's raw output, with the
// wall-clock time at which each block arrived, and the peak level over time that the picture draws.
//
// Timing: parec hands over blocks of about 10 ms once the sink renders them, so frame `n` of a block that
// arrived at wall-clock time `t` was rendered no later than `t`; the first sample was rendered no later than
// `t - n / rate` for every block, and the smallest of those bounds over the first half second of data is the
// recording's start (the same estimate as the end-to-end tests' MonitorRecorder). A frame's time is then
// `start + n / rate`, but never later than its block's arrival: after its sink is unloaded, PulseAudio moves
// the recorder to the default (silent) source, which delivers faster than real time, and those frames all
// land at their arrival times instead of running past the end of the tour.
import FoundationEssentials
import Glibc

/// A recorded stretch of one sink's monitor: the peak magnitude of every frame and the arrival of every block.
public struct Capture: Sendable {
    /// When a block arrived (seconds since the Unix epoch) and how many frames had arrived with it.
    public struct Arrival: Sendable, Equatable {
        /// Wall-clock seconds since the Unix epoch (CLOCK_REALTIME, like Earshot's event log).
        public var time: Double
        /// Frames received up to and including this block.
        public var frames: Int

        /// An arrival at `time` that brought the total to `frames`.
        public init(time: Double, frames: Int) {
            self.time = time
            self.frames = frames
        }
    }

    /// The format parec is asked for: interleaved stereo signed 16-bit little-endian.
    public static let bytesPerFrame = 4

    /// Frames per second.
    public let sampleRate: Int
    /// The larger of the two channels' magnitudes (0...1) for each frame.
    public let peaks: [Float]
    /// Block arrivals in order; the last one covers every frame.
    public let arrivals: [Arrival]

    /// A capture of `peaks` whose blocks arrived as `arrivals` say.
    public init(sampleRate: Int, peaks: [Float], arrivals: [Arrival]) {
        self.sampleRate = sampleRate
        self.peaks = peaks
        self.arrivals = arrivals
    }

    /// Reads a raw file (interleaved stereo s16le) and its timing file (`SECONDS TOTAL_BYTES` per line).
    ///
    /// Blocks beyond the raw file's length (a recorder stopped mid-write) are dropped, as is a partial frame.
    public static func load(raw rawPath: String, times timesPath: String, sampleRate: Int) throws -> Capture {
        guard let data = FileManager.default.contents(atPath: rawPath) else { throw TimelineError.unreadable(rawPath) }
        guard let timing = FileManager.default.contents(atPath: timesPath) else {
            throw TimelineError.unreadable(timesPath)
        }
        let frameCount = data.count / bytesPerFrame
        var peaks = [Float](repeating: 0, count: frameCount)
        data.withUnsafeBytes { raw in
            for frame in 0..<frameCount {
                let left = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: frame * 4, as: Int16.self))
                let right = Int16(littleEndian: raw.loadUnaligned(fromByteOffset: frame * 4 + 2, as: Int16.self))
                // Int32 first: the magnitude of Int16.min does not fit an Int16.
                peaks[frame] = Float(max(abs(Int32(left)), abs(Int32(right)))) / 32768
            }
        }
        var arrivals: [Arrival] = []
        for (number, line) in String(decoding: timing, as: UTF8.self).split(separator: "\n").enumerated() {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let time = Double(fields[0]), let bytes = Int(fields[1]), bytes >= 0 else {
                throw TimelineError.malformed(file: timesPath, line: number + 1)
            }
            let frames = min(bytes / bytesPerFrame, frameCount)
            if let last = arrivals.last, frames <= last.frames { continue }
            arrivals.append(Arrival(time: time, frames: frames))
        }
        return Capture(sampleRate: sampleRate, peaks: peaks, arrivals: arrivals)
    }

    /// The estimated wall-clock time of the first frame (see the file comment), or nil for an empty capture.
    public var startTime: Double? {
        guard let first = arrivals.first else { return nil }
        let rate = Double(sampleRate)
        var start = first.time - Double(first.frames) / rate
        for arrival in arrivals.dropFirst() where arrival.frames <= sampleRate / 2 {
            start = min(start, arrival.time - Double(arrival.frames) / rate)
        }
        return start
    }

    /// The wall-clock time of the last frame, or nil for an empty capture.
    public var endTime: Double? {
        guard let start = startTime, let last = arrivals.last else { return nil }
        return min(start + Double(last.frames) / Double(sampleRate), last.time)
    }

    /// Merges this capture's peaks into `bins`: bin `i` covers `origin + i * binSeconds` and keeps the largest
    /// peak of the frames that fall in it; bins with no frame keep their value (nil: nothing recorded there).
    public func accumulatePeaks(into bins: inout [Float?], origin: Double, binSeconds: Double) {
        guard let start = startTime, binSeconds > 0 else { return }
        let rate = Double(sampleRate)
        var frame = 0
        for arrival in arrivals {
            while frame < arrival.frames {
                let time = min(start + Double(frame) / rate, arrival.time)
                let bin = Int(((time - origin) / binSeconds).rounded(.down))
                if bin >= 0 && bin < bins.count {
                    bins[bin] = max(bins[bin] ?? 0, peaks[frame])
                }
                frame += 1
            }
        }
    }
}

/// Why a timeline could not be drawn.
public enum TimelineError: Error, CustomStringConvertible, Equatable {
    /// A file could not be read.
    case unreadable(String)
    /// A line of a file is not in the expected form.
    case malformed(file: String, line: Int)
    /// Nothing was recorded, so there is no time span to draw.
    case empty

    /// A sentence for the user.
    public var description: String {
        switch self {
        case .unreadable(let path): return "cannot read \(path)"
        case .malformed(let file, let line): return "\(file), line \(line): not in the expected form"
        case .empty: return "nothing was recorded"
        }
    }
}
