// The cover-art cache: pictures named by their SHA-256, written once, and the folder bounded with the pictures used
// longest ago removed first.
import AudioPipeline
import EarshotTestSupport
import Foundation
import SystemSupport
import Testing
@testable import EarshotService
@testable import EarshotStorage
import TrackPaths

@Suite("Cover-art cache")
struct CoverArtCacheTests {
    @Test("SHA-256 agrees with coreutils' sha256sum at every padding edge", arguments: [1, 55, 56, 63, 64, 65, 1_000])
    func sha256AgreesWithCoreutils(length: Int) async throws {
        try await TestEnvironment.withScratchDirectory { scratch in
            let bytes = Fixtures.fakePicture(count: length, seed: UInt64(length))
            let file = scratch.appendingPathComponent("bytes")
            try Data(bytes).write(to: file)
            let printed = try ProcessRunner.runChecked("sha256sum", [file.path]).standardOutput
            #expect(ContentHash.sha256Hex(bytes) == String(printed.prefix(64)))
        }
    }

    @Test("SHA-256 matches the standard's examples")
    func sha256() {
        #expect(ContentHash.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(ContentHash.sha256Hex(Array("abc".utf8))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(ContentHash.sha256Hex(Array(repeating: UInt8(ascii: "a"), count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("a picture is written once under its content hash, with the MIME type's extension, and reads back")
    func writtenOnce() async throws {
        try await TestEnvironment.withScratchDirectory { scratch in
            let cache = CoverArtCache(directory: scratch.path + "/earshot/art")
            let bytes = Fixtures.fakePicture(count: 1_000, seed: 1)
            let picture = CoverPicture(mimeType: "image/png", byteCount: bytes.count, bytes: .inline(bytes))
            guard case .stored(let path) = cache.store(picture) else { Issue.record("not stored"); return }
            let name = URL(fileURLWithPath: String(decoding: path.bytes, as: UTF8.self)).lastPathComponent
            #expect(name == ContentHash.sha256Hex(bytes) + ".png")
            #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.path + "/earshot/art/" + name))) == bytes)
            #expect(cache.store(picture) == .stored(path))
            let names = try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/earshot/art")
            #expect(names == [name], "no temporary file left, no second copy")
            #expect(CoverArtCache.fileExtension("image/jpeg") == "jpg")
            #expect(CoverArtCache.fileExtension("image/webp") == "webp")
            #expect(CoverArtCache.fileExtension("application/x-other") == "bin")
        }
    }

    @Test("over its bound the cache removes the pictures used longest ago first, never the one just stored")
    func oldestRemovedFirst() async throws {
        try await TestEnvironment.withScratchDirectory { scratch in
            let directory = scratch.path + "/art"
            let cache = CoverArtCache(directory: directory, capacityBytes: 3_500)
            var paths: [String] = []
            for seed in 1...3 {
                let bytes = Fixtures.fakePicture(count: 1_000, seed: UInt64(seed))
                guard case .stored(let path) = cache.store(
                    CoverPicture(mimeType: "image/png", byteCount: 1_000, bytes: .inline(bytes)))
                else { Issue.record("picture \(seed) not stored"); return }
                let text = String(decoding: path.bytes, as: UTF8.self)
                paths.append(text)
                // Distinct use times, oldest first, whatever the file system's timestamp resolution.
                let moment = timespec(tv_sec: 1_000_000 + seed * 10, tv_nsec: 0)
                var times = [moment, moment]
                #expect(utimensat(AT_FDCWD, text, &times, 0) == 0)
            }
            // Using the first again makes the second the oldest.
            let first = Fixtures.fakePicture(count: 1_000, seed: 1)
            #expect(cache.store(CoverPicture(mimeType: "image/png", byteCount: 1_000, bytes: .inline(first)))
                == .stored(TrackPath(paths[0])))
            let fourth = Fixtures.fakePicture(count: 1_000, seed: 4)
            guard case .stored(let newest) = cache.store(
                CoverPicture(mimeType: "image/png", byteCount: 1_000, bytes: .inline(fourth)))
            else { Issue.record("picture 4 not stored"); return }
            let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory).map { directory + "/" + $0 })
            #expect(left == [paths[0], paths[2], String(decoding: newest.bytes, as: UTF8.self)])
        }
    }

    @Test("the cover worker stores pictures in order, on its own thread under SCHED_IDLE, and reports each")
    func workerStoresOffTheCaller() async throws {
        try await TestEnvironment.withScratchDirectory { scratch in
            let cache = CoverArtCache(directory: scratch.path + "/earshot/art")
            let reported = LockedValue<[(index: Int, outcome: CoverArtOutcome, thread: String, policy: Int32)]>([])
            let worker = CoverArtWorker(cache: cache) { job, outcome in
                let thread = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                reported.withLock { $0.append((job.index, outcome, thread, sched_getscheduler(0))) }
            }
            let pictures = (0..<3).map { Fixtures.fakePicture(count: 2_000, seed: UInt64(100 + $0)) }
            for (index, bytes) in pictures.enumerated() {
                let picture = CoverPicture(mimeType: "image/png", byteCount: bytes.count, bytes: .inline(bytes))
                #expect(worker.submit(CoverArtWorker.Job(index: index, queueGeneration: 7, picture: picture)))
            }
            try await waitUntil("three outcomes", timeout: .seconds(30)) { reported.withLock { $0.count == 3 } }
            let outcomes = reported.withLock { $0 }
            #expect(outcomes.map(\.index) == [0, 1, 2])
            for (outcome, bytes) in zip(outcomes, pictures) {
                guard case .stored(let path) = outcome.outcome else {
                    Issue.record("not stored: \(outcome.outcome)")
                    continue
                }
                #expect(try Data(contentsOf: URL(fileURLWithPath: String(decoding: path.bytes, as: UTF8.self)))
                    == Data(bytes))
                #expect(outcome.thread == "earshot-covers")
                // SCHED_IDLE is 5 on Linux; an unprivileged thread may always lower itself to it.
                #expect(outcome.policy == 5)
            }
        }
    }
}
