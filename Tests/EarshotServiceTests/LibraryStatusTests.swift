// The library's part of `status`: the object the owner shows from the library's last report, and its line for
// people (a running scan's progress; the tracks and the skipped files by reason).
import Testing
@testable import EarshotService

@Suite("Library status")
struct LibraryStatusTests {
    @Test("a running scan shows files done and to do; a finished one its tracks and skips by reason")
    func lines() {
        let running = LibraryStatus(scanning: true, filesDone: 120, filesToDo: 10_000).jsonObject
        #expect(running["scanning"] as? Bool == true && running["filesToDo"] as? Int == 10_000)
        #expect(running["tracks"] == nil && running["scansFinished"] as? Int == 0)
        #expect(StatusText.libraryLine(running) == "library: scanning, 120 of 10000 files read")
        let finished = LibraryStatus(scanning: false, filesDone: 3, filesToDo: 3, tracks: 9_876,
                                     skipped: ["permission": 2, "loop": 1]).jsonObject
        #expect(StatusText.libraryLine(finished) == "library: 9876 tracks (skipped: 1 loop, 2 permission)")
        let broken = LibraryStatus(scanning: false, problem: "scan failed (SQLite error 13: disk full)").jsonObject
        #expect(StatusText.libraryLine(broken) == "library: scan failed (SQLite error 13: disk full)")
        #expect(StatusText.render(["playback": "stopped", "library": finished]).hasSuffix("\nlibrary: 9876 tracks "
            + "(skipped: 1 loop, 2 permission)"))
        #expect(!StatusText.render(["playback": "stopped"]).contains("library"))
    }
}
