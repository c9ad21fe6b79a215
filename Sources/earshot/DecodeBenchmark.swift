// Decoding alone, as fast as possible, with the decoder the file's content calls for: what `scripts/bench` compares
// with `mpg123 -t`.
import AudioPipeline
import Dispatch
import Glibc
import TrackPaths

/// Decodes a whole file into a scratch buffer and times it.
enum DecodeBenchmark {
    /// Frames decoded and wall-clock seconds spent.
    public struct Result: Sendable {
        /// Frames decoded.
        public var frames: Int
        /// Seconds from opening the file to the end of decoding.
        public var seconds: Double
    }

    /// Opens `path` and decodes all of it; with `gain`, through the decode thread's ReplayGain scaling in track mode:
    /// the file's own gain (an MP3 from lame has the LAME tag's), else -6 dB (so that any file measures the cost).
    public static func run(path: TrackPath, gain: Bool = false) throws(DecodeError) -> Result {
        let started = DispatchTime.now().uptimeNanoseconds
        var decoder = try AudioFileKind.openDecoder(path: path)
        if gain {
            let control = ReplayGainControl()
            control.set(ReplayGainSettings(mode: .track, fallbackDb: -6), shuffled: false)
            decoder = control.applied(to: decoder)
        }
        let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 65_536 * 2)
        defer { buffer.deallocate() }
        var frames = 0
        decoding: while true {
            switch try decoder.decode(into: buffer) {
            case .frames(let count): frames += count
            case .formatChanged: continue
            case .finished: break decoding
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return Result(frames: frames, seconds: seconds)
    }
}
