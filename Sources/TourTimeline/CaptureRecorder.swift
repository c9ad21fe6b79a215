// `earshot-timeline record`: copies parec's raw output from standard input to a file and notes, for every
// block, the wall-clock time it arrived and the total bytes so far (the timing that `Capture` reads back).
import FoundationEssentials
import Glibc
import SystemSupport

/// Records standard input into a raw file and a timing file.
public enum CaptureRecorder {
    /// Copies `input` to `rawPath` until end of file, writing `SECONDS TOTAL_BYTES` lines to `timesPath`.
    ///
    /// SIGINT is ignored, so that a Ctrl-C to the tour's process group lets the recorder drain what parec
    /// already sent; it stops when parec (the writer) goes away.
    public static func run(input: Int32, rawPath: String, timesPath: String) throws {
        signal(SIGINT, SIG_IGN)
        guard let raw = fopen(rawPath, "wb") else { throw TimelineError.unreadable(rawPath) }
        defer { fclose(raw) }
        guard let times = fopen(timesPath, "w") else { throw TimelineError.unreadable(timesPath) }
        defer { fclose(times) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            _ = buffer.withUnsafeBytes { fwrite($0.baseAddress, 1, count, raw) }
            total += count
            let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
            fputs(formatted("%.6f %ld\n", seconds, total), times)
        }
    }
}
