// Cover art on the desktop's media controls (issue 15), end to end: `earshot serve` on the real server and a private
// session bus, tracks tagged by lame and flac, and the real `playerctl`. `mpris:artUrl` must name a file in the
// service's art cache holding exactly the embedded picture; the album artist and the track number come along; a
// 50 MB picture is skipped by its length with its reason in the log, and the service never holds it in memory.
import EarshotTestSupport
import Foundation
import Testing

@Suite("Cover art over MPRIS", .serialized)
struct CoverArtTests {
    @Test("playerctl's mpris:artUrl names a cached file whose bytes are the embedded picture (FLAC, MP3)")
    func artURLNamesTheEmbeddedPicture() async throws {
        try await ServiceHarness.run { harness in
            let flacPicture = Fixtures.fakePicture(count: 6_000, seed: 0xF1AC)
            let mp3Picture = Fixtures.fakePicture(count: 9_000, seed: 0x3303)
            let flac = try Fixtures.coverTagged(.flac, picture: flacPicture, name: "e2e-cover.flac",
                                                title: "Cover FLAC", albumArtist: "Album Band", trackNumber: "4/10",
                                                seconds: 30)
            let mp3 = try Fixtures.coverTagged(.mp3, picture: mp3Picture, name: "e2e-cover.mp3", title: "Cover MP3",
                                               albumArtist: "Other Band", trackNumber: "7", seconds: 30)
            let big = try Self.mp3WithFiftyMegabytePicture(in: harness.root)
            let service = try await harness.startService(waitForMPRIS: true)
            try harness.earshotChecked(["play", flac.path, mp3.path, big.path])
            try await harness.waitForStatus(of: service, "playing") { $0.playback == "playing" }

            try await expectCover(harness, title: "Cover FLAC", picture: flacPicture, albumArtist: "Album Band",
                                  trackNumber: "4")
            try harness.playerctlEarshot(["next"])
            try await expectCover(harness, title: "Cover MP3", picture: mp3Picture, albumArtist: "Other Band",
                                  trackNumber: "7")
            try harness.playerctlEarshot(["next"])
            try await harness.waitForStatus(of: service, "on the third track") { $0.trackIndex == 2 }
            try await waitUntil("the service reports the 50 MB picture", timeout: .seconds(20)) {
                service.standardError().contains("track 3 of 3: cover art skipped: picture too large")
            }
            #expect(try harness.playerctl(["-p", "earshot", "metadata", "mpris:artUrl"]).standardOutput.trimmed == "")
            // Skipped by its length: the service's peak memory stays far below the picture's 50 MB.
            let peak = try Self.peakResidentKilobytes(of: service.processIdentifier)
            print("[cover art] earshot serve peak resident memory: \(peak) kB")
            #expect(peak < 48 * 1024, "VmHWM \(peak) kB")
            let log = service.standardError()
            for secret in ["Cover FLAC", "Album Band", harness.cacheHome.path] {
                #expect(!log.contains(secret), "the log names \(secret):\n\(log)")
            }
            #expect(await harness.stopService(service) == 0)
        }
    }

    /// Waits until MPRIS shows the track `title`, then checks its cover file, album artist and track number.
    private func expectCover(
        _ harness: ServiceHarness, title: String, picture: [UInt8], albumArtist: String, trackNumber: String
    ) async throws {
        let shown = try await harness.settle(title, timeout: .seconds(20)) {
            try harness.playerctl(["-p", "earshot", "metadata", "xesam:title"]).standardOutput.trimmed
        }
        #expect(shown == title)
        // The picture is stored by a worker of its own once the track has started, at the lowest priority: the title
        // may be published a moment before the picture's file is named.
        try await waitUntil("mpris:artUrl is set for \(title)", timeout: .seconds(20)) {
            (try? harness.playerctlEarshot(["metadata", "mpris:artUrl"]))?.isEmpty == false
        }
        let uri = try harness.playerctlEarshot(["metadata", "mpris:artUrl"])
        let file = try #require(URL(string: uri), "mpris:artUrl is not a URI: \(uri)")
        #expect(file.isFileURL, "\(uri)")
        #expect(file.path.hasPrefix(harness.cacheHome.path + "/earshot/art/"), "\(uri)")
        #expect(file.pathExtension == "png", "\(uri)")
        #expect(try [UInt8](Data(contentsOf: file)) == picture, "\(uri) does not hold the embedded picture")
        #expect(try harness.playerctlEarshot(["metadata", "xesam:albumArtist"]) == albumArtist)
        #expect(try harness.playerctlEarshot(["metadata", "xesam:trackNumber"]) == trackNumber)
    }

    /// A 30 s MP3 behind an ID3v2.3 tag whose front cover is 50 MB (a sparse hole: not written out by the test).
    private static func mp3WithFiftyMegabytePicture(in folder: URL) throws -> URL {
        let mp3 = try Data(contentsOf: try Fixtures.tone(seconds: 30))
        let pictureLength = 50 << 20
        let head: [UInt8] = [0] + Array("image/jpeg".utf8) + [0, 3, 0]
        let frameSize = head.count + pictureLength
        let frame = Array("APIC".utf8) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: frameSize >> $0) } + [0, 0]
        let tagSize = frame.count + frameSize
        let header = Array("ID3".utf8) + [3, 0, 0] + [21, 14, 7, 0].map { UInt8((tagSize >> $0) & 0x7F) }
        let url = folder.appendingPathComponent("big-picture.mp3")
        _ = FileManager.default.createFile(atPath: url.path, contents: Data(header + frame + head))
        let handle = try FileHandle(forWritingTo: url)
        try handle.seek(toOffset: UInt64(header.count + tagSize))
        try handle.write(contentsOf: mp3)
        try handle.close()
        return url
    }

    /// The process's peak resident set size (`VmHWM` in /proc/PID/status), in kB.
    private static func peakResidentKilobytes(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ").dropFirst().first ?? ""))
    }
}
