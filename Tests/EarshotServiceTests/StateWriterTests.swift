// The storage writer (StateWriter): hand-overs return at once, even while its thread is stuck on the disk; they
// coalesce to the latest; a position always follows the state it names; `finish` waits for everything handed over;
// and a failed state is written again with the next hand-over.
import Foundation
import Testing

import EarshotTestSupport
import SystemSupport
import TrackPaths
@testable import EarshotService
@testable import EarshotStorage

@Suite("State writer")
struct StateWriterTests {
    /// The failures a writer reported, by file.
    private final class Failures: Sendable {
        let files = LockedValue<[String]>([])
    }

    private func state(_ count: Int, id: Int) -> PersistedState {
        PersistedState(queue: TrackList((0..<count).map { TrackPath(stringLiteral: "/music/track \($0).mp3") }),
                       trackIndex: 0, positionMilliseconds: 0, volumePercent: 100, queueId: id)
    }

    @Test("hand-overs coalesce to the latest state and position, and finish waits until they are on disk")
    func coalescesToTheLatest() throws {
        let store = try freshStore()
        let failures = Failures()
        let writer = StateWriter(store: store) { file, _ in failures.files.withLock { $0.append(file) } }
        for id in 1...5 {
            writer.save(state: state(2_000, id: id), position: nil)
            for milliseconds in stride(from: 0, to: 100_000, by: 1_000) {
                writer.save(state: nil, position: SavedPosition(
                    queueId: id, trackIndex: 1, positionMilliseconds: milliseconds, volumePercent: 90))
            }
        }
        writer.finish()
        var expected = state(2_000, id: 5)
        expected.trackIndex = 1
        expected.positionMilliseconds = 99_000
        expected.volumePercent = 90
        #expect(store.load() == .restored(expected, positionFile: nil))
        let counts = writer.writeCounts
        #expect(counts.states >= 1 && counts.states <= 5, "\(counts)")
        #expect(counts.positions >= 1 && counts.positions < 500, "coalesced: \(counts)")
        #expect(counts.durablePositions == 0)
        #expect(failures.files.withLock { $0 }.isEmpty)
        // After finish, hand-overs are ignored.
        writer.save(state: state(1, id: 6), position: nil)
        #expect(store.load() == .restored(expected, positionFile: nil))
    }

    @Test("a durable hand-over is flushed, and counted as such")
    func durablePosition() throws {
        let store = try freshStore()
        let writer = StateWriter(store: store) { _, _ in }
        writer.save(state: state(3, id: 11), position: SavedPosition(
            queueId: 11, trackIndex: 2, positionMilliseconds: 7, volumePercent: 100), durable: true)
        writer.finish()
        #expect(writer.writeCounts == StateWriter.WriteCounts(states: 1, positions: 1, durablePositions: 1))
        guard case .restored(let loaded, nil) = store.load() else {
            Issue.record("not restored from both files: \(store.load())")
            return
        }
        #expect(loaded.trackIndex == 2 && loaded.positionMilliseconds == 7)
    }

    @Test("while the writer's thread is stuck on the disk, hand-overs still return")
    func ownerNeverWaits() throws {
        let store = try freshStore()
        try store.save(state(1, id: 1))
        // A named pipe where the position file goes: opening it for writing blocks until someone reads, as a stuck
        // disk would keep the writer's thread.
        #expect(mkfifo(store.positionPath, 0o600) == 0)
        let failures = Failures()
        let writer = StateWriter(store: store) { file, _ in failures.files.withLock { $0.append(file) } }
        writer.save(state: nil, position: SavedPosition(queueId: 1, trackIndex: 0, positionMilliseconds: 1,
                                                        volumePercent: 100))
        // Waits until the writer's thread is in the blocking open (the kernel's `wait_for_partner`, a named pipe's open
        // waiting for the other end), rather than for a time it may take longer than on a loaded machine.
        #expect(eventually { Self.storeThreadsWaitingForAPipe() > 0 }, "the writer never reached the pipe's open")
        // Were a hand-over to wait for the writer, these would not return: the thread stays stuck until the pipe is
        // read below.
        let queue = state(500, id: 2)
        let returned = returnsWhileStuck {
            for milliseconds in 2...2_000 {
                writer.save(state: queue, position: SavedPosition(
                    queueId: 2, trackIndex: 0, positionMilliseconds: milliseconds, volumePercent: 100))
            }
        }
        #expect(returned, "a hand-over waited for the writer stuck on the disk")
        #expect(writer.writeCounts.positions == 0, "the writer was not stuck")
        // Unstuck: the pipe is opened for reading, the open returns, and the record cannot be written over a pipe.
        let reader = open(store.positionPath, O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        #expect(reader >= 0)
        unlink(store.positionPath)
        // One more hand-over, after the pipe is gone: written to a new position file.
        writer.save(state: nil, position: SavedPosition(queueId: 2, trackIndex: 0, positionMilliseconds: 2_001,
                                                        volumePercent: 100))
        writer.finish()
        #expect(failures.files.withLock { $0 }.first == "position", "\(failures.files.withLock { $0 })")
        // The latest state and position were written after it.
        guard case .restored(let loaded, nil) = store.load() else {
            Issue.record("the latest hand-over was not written: \(store.load())")
            return
        }
        #expect(loaded.queueId == 2 && loaded.queue.count == 500 && loaded.positionMilliseconds == 2_001)
    }

    @Test("a state that could not be saved is written again with the next hand-over")
    func failedStateRetried() throws {
        let base = try TemporaryDirectory.make()
        // A regular file where the state directory's parent should be: every save fails until it is gone.
        try Data().write(to: URL(fileURLWithPath: base + "/blocked"))
        let store = StateStore(directory: base + "/blocked/earshot")
        let failures = Failures()
        let writer = StateWriter(store: store) { file, _ in failures.files.withLock { $0.append(file) } }
        writer.save(state: state(4, id: 21), position: nil)
        #expect(eventually { failures.files.withLock { $0 } == ["state"] }, "the failed save was not reported")
        unlink(base + "/blocked")
        writer.save(state: nil, position: SavedPosition(queueId: 21, trackIndex: 3, positionMilliseconds: 9,
                                                        volumePercent: 100))
        writer.finish()
        #expect(writer.writeCounts.states == 1, "\(writer.writeCounts)")
        guard case .restored(let loaded, nil) = store.load() else {
            Issue.record("the state was not written again: \(store.load())")
            return
        }
        #expect(loaded.queueId == 21 && loaded.trackIndex == 3)
    }

    /// How many of this process's "earshot-store" threads are waiting in a named pipe's open for its other end. Other
    /// tests' writers run beside this one, but none of them opens a pipe.
    private static func storeThreadsWaitingForAPipe() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
            let waiting = try? String(contentsOfFile: "/proc/self/task/\(task)/wchan", encoding: .utf8)
            return name?.hasPrefix("earshot-store") == true
                && waiting?.trimmingCharacters(in: .whitespacesAndNewlines) == "wait_for_partner"
        }.count
    }
}
