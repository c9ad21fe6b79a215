// The bounded byte buffer between the fetch thread and the decoder: order, bounds, counts, the end.
import Glibc
import SystemSupport
import Testing
@testable import NetworkStream

@Suite("Stream byte buffer")
struct StreamByteBufferTests {
    private func write(_ buffer: StreamByteBuffer, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer.write($0) }
    }

    private func readAll(_ buffer: StreamByteBuffer) -> [UInt8] {
        var out: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 10_000)
        while case .bytes(let count) = scratch.withUnsafeMutableBytes({ buffer.read(into: $0) }), count > 0 {
            out += scratch[..<count]
        }
        return out
    }

    @Test("bytes come out in order across chunks, and read chunks are freed")
    func order() {
        let buffer = StreamByteBuffer(capacity: 4 * StreamByteBuffer.chunkBytes)
        let bytes = (0..<(3 * StreamByteBuffer.chunkBytes + 17)).map { UInt8(truncatingIfNeeded: $0 * 7) }
        for start in stride(from: 0, to: bytes.count, by: 1000) {
            write(buffer, Array(bytes[start..<min(start + 1000, bytes.count)]))
        }
        #expect(buffer.allocatedBytes >= 4 * StreamByteBuffer.chunkBytes)
        #expect(readAll(buffer) == bytes)
        #expect(buffer.allocatedBytes == 0)
        #expect(buffer.counts.stored == 0 && buffer.counts.received == UInt64(bytes.count))
    }

    @Test("a full buffer drops its oldest bytes and counts them; memory never passes the capacity")
    func bounded() {
        let capacity = 2 * StreamByteBuffer.chunkBytes
        let buffer = StreamByteBuffer(capacity: capacity)
        let bytes = (0..<(5 * capacity)).map { UInt8(truncatingIfNeeded: $0 / 3) }
        for start in stride(from: 0, to: bytes.count, by: 4096) {
            write(buffer, Array(bytes[start..<start + 4096]))
            #expect(buffer.counts.stored <= capacity)
            #expect(buffer.allocatedChunks <= capacity / StreamByteBuffer.chunkBytes + 1)
        }
        #expect(buffer.counts.dropped == UInt64(4 * capacity) && buffer.counts.peak == capacity)
        #expect(readAll(buffer) == Array(bytes.suffix(capacity)))
        // One write larger than the whole buffer keeps its newest bytes.
        write(buffer, bytes)
        #expect(readAll(buffer) == Array(bytes.suffix(capacity)))
    }

    @Test("the end comes after what was held; a read with no bytes waits only until its deadline")
    func ending() {
        let buffer = StreamByteBuffer(capacity: 1)
        var scratch = [UInt8](repeating: 0, count: 4)
        let deadline = Condition.monotonicNanoseconds() + 20_000_000
        #expect(scratch.withUnsafeMutableBytes { buffer.read(into: $0, waitingUntil: deadline) } == .empty)
        write(buffer, [1, 2, 3])
        buffer.finish(.serverClosed)
        write(buffer, [4])
        #expect(scratch.withUnsafeMutableBytes { buffer.read(into: $0) } == .bytes(3))
        #expect(scratch.withUnsafeMutableBytes { buffer.read(into: $0) } == .ended(.serverClosed))
        buffer.discardAll()
        #expect(buffer.counts.received == 3)
    }

    @Test("a time bound drops what arrived before it as bytes come, reports its first drop once; a rejoin keeps the newest")
    func timeBound() throws {
        let reports = LockedValue(0)
        let buffer = StreamByteBuffer(capacity: 1 << 20, maximumAgeNanoseconds: 200_000_000) {
            reports.withLock { $0 += 1 }
        }
        let old = [UInt8](repeating: 1, count: 1000), new = [UInt8](repeating: 2, count: 500)
        write(buffer, old)
        // Well past the bound, however slow the machine: what arrived before it is older than 200 ms.
        usleep(300_000)
        #expect(buffer.oldestAgeNanoseconds >= 200_000_000)
        write(buffer, new)
        #expect(buffer.counts.dropped == 1000 && buffer.counts.stored == 500)
        #expect(reports.withLock { $0 } == 1)
        usleep(300_000)
        write(buffer, new)
        // The second drop of the same overflow is not reported again.
        #expect(reports.withLock { $0 } == 1)
        #expect(readAll(buffer) == new)
        // A rejoin drops all but the newest bytes asked for, uncounted, and re-arms the report.
        write(buffer, old + new)
        buffer.discardAll(keepingNewest: 10)
        #expect(readAll(buffer) == Array(new.suffix(10)))
        #expect(buffer.counts.dropped == 1500)
        write(buffer, old)
        usleep(300_000)
        write(buffer, new)
        #expect(reports.withLock { $0 } == 2)
    }

    @Test("within its time bound nothing is dropped or reported")
    func withinTimeBound() {
        let reports = LockedValue(0)
        let buffer = StreamByteBuffer(capacity: 1 << 20, maximumAgeNanoseconds: 60_000_000_000) {
            reports.withLock { $0 += 1 }
        }
        for _ in 0..<100 { write(buffer, [UInt8](repeating: 3, count: 1000)) }
        #expect(buffer.counts.dropped == 0 && buffer.counts.stored == 100_000 && reports.withLock { $0 } == 0)
    }

    @Test("a read stops at a seam, which is said once before the new connection's bytes; seams dropped past are one")
    func seams() {
        let buffer = StreamByteBuffer(capacity: StreamByteBuffer.chunkBytes)
        var scratch = [UInt8](repeating: 0, count: 100)
        func read() -> StreamByteBuffer.ReadResult { scratch.withUnsafeMutableBytes { buffer.read(into: $0) } }
        write(buffer, [1, 2, 3])
        buffer.markSeam()
        // Marked twice with nothing between: one seam.
        buffer.markSeam()
        write(buffer, [4, 5])
        #expect(read() == .bytes(3) && scratch[..<3] == [1, 2, 3])
        #expect(read() == .seam)
        #expect(read() == .bytes(2) && scratch[..<2] == [4, 5])
        #expect(read() == .empty)
        // A seam reached before the new connection sent anything is said at once, with no wait.
        buffer.markSeam()
        #expect(read() == .seam && read() == .empty)
        // Two seams whose bytes were dropped (a full buffer): the reader is past both, and hears of it once.
        write(buffer, [6])
        buffer.markSeam()
        write(buffer, [7])
        buffer.markSeam()
        write(buffer, [UInt8](repeating: 8, count: StreamByteBuffer.chunkBytes))
        #expect(read() == .seam && read() == .bytes(100))
        buffer.finish(.serverClosed)
        #expect(readAll(buffer).count == StreamByteBuffer.chunkBytes - 100 && read() == .ended(.serverClosed))
    }
}
