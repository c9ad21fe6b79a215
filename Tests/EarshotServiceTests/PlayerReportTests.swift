// The player's report: status and the MPRIS snapshot read from one state, so they agree on the track, the
// playback and the volume.
import AudioPipeline
import EarshotCore
import EarshotJSON
import EarshotMPRIS
import Foundation
import Testing
import TrackPaths
@testable import EarshotService

@Suite("Player report: status and MPRIS from one state")
struct PlayerReportTests {
    static let output = PlayerReport.Output(
        sinkName: "headphones", streamOpen: true, underruns: 2, serverUnderflows: 1, serverName: "pulseaudio 16.1",
        realtime: .schedFIFO(priority: 10), realtimeThread: 4242)

    static func report(_ rules: PlayerState, paths: TrackList = ["/music/a.mp3", "/music/b.mp3"]) -> PlayerReport {
        PlayerReport(
            rules: rules, paths: paths, queueGeneration: 3,
            metadata: TrackMetadata(title: "Blue in Green", artist: "Miles Davis", album: "Kind of Blue"),
            positionMilliseconds: 42_500, durationMilliseconds: 337_000, output: output, handling: handling)
    }

    /// A record of two inputs: an `add` of 900 µs, the slowest, and a status of 40 µs.
    static var handling: HandlingRecord {
        var record = HandlingRecord()
        record.note("request status", HandlingSample(micros: 40, cpuMicros: 40, waits: 0, preemptions: 0))
        record.note("request add", HandlingSample(micros: 900, cpuMicros: 900, waits: 0, preemptions: 0))
        return record
    }

    @Test("paused by a call on the first of two tracks: both views say paused, on the same track")
    func pausedByCall() throws {
        let rules = PlayerState(
            playback: .paused(.interruption), interruptions: [.serverCorkRequest], resumeIntent: .userAskedToPlay,
            queue: QueueCursor(trackCount: 2, index: 0), stream: StreamCondition(isOpen: true, isCorked: true),
            volumePercent: 80)
        let report = Self.report(rules)

        let status = report.status
        #expect(status["playback"] as? String == "paused")
        #expect(status["pauseReason"] as? String == "interruption")
        #expect(status["outputLostReason"] is JSONNull)
        #expect(status["activeInterruptions"] as? [String] == ["server"])
        #expect(status["waitingForInterruptionEnd"] as? Bool == true)
        #expect(status["resumeIntent"] as? String == "userAskedToPlay")
        #expect(status["positionMs"] as? Int == 42_500)
        #expect(status["durationMs"] as? Int == 337_000)
        #expect(status["trackIndex"] as? Int == 0)
        #expect(status["trackCount"] as? Int == 2)
        #expect(status["corked"] as? Bool == true)
        #expect(status["sink"] as? String == "headphones")
        #expect(status["underruns"] as? Int == 2)
        #expect(status["realtime"] as? String == "SCHED_FIFO 10")
        #expect(status["realtimeThread"] as? Int == 4242)
        #expect(status["volume"] as? Int == 80)
        #expect(status["slowestHandlingMicros"] as? Int == 900)
        #expect(status["slowestHandlingKind"] as? String == "request add")
        #expect(status["slowestHandlingCPUMicros"] as? Int == 900)
        #expect(status["slowestHandlingWaits"] as? Int == 0)
        #expect(status["slowestHandlingByKind"] as? [String: Int] == ["request add": 900, "request status": 40])
        // As `earshot status --json` prints it: the kinds are an object of numbers.
        let line = try JSONTree.text(status)
        #expect(line.contains(#""slowestHandlingByKind":{"#), "\(line)")

        var expected = MPRISSnapshot(
            playbackStatus: .paused, trackId: MPRISSnapshot.trackId(300_000), title: "Blue in Green",
            artists: ["Miles Davis"], album: "Kind of Blue", filePath: "/music/a.mp3",
            lengthMicroseconds: 337_000_000, volume: 0.8, canGoNext: true, canGoPrevious: true, canPlay: true,
            canPause: true, canSeek: true)
        // The track's ReplayGain as status gives it (none was applied to this one).
        expected.replayGainSource = "off"
        expected.replayGainDb = 0
        #expect(report.mprisSnapshot == expected)
        #expect(report.currentTrackId == report.mprisSnapshot.trackId)
        #expect(report.lengthMicroseconds == 337_000_000)
    }

    @Test("the last track playing: no next track, and the track id changes with the queue's generation")
    func lastTrackPlaying() {
        let rules = PlayerState(playback: .playing, queue: QueueCursor(trackCount: 2, index: 1),
                                stream: StreamCondition(isOpen: true, isCorked: false))
        var report = Self.report(rules)
        #expect(report.status["playback"] as? String == "playing")
        #expect(report.status["corked"] as? Bool == false)
        #expect(report.mprisSnapshot.playbackStatus == .playing)
        #expect(report.mprisSnapshot.filePath == "/music/b.mp3")
        #expect(report.mprisSnapshot.canGoNext == false)
        let before = report.currentTrackId
        report.queueGeneration += 1
        #expect(report.currentTrackId != before)
        #expect(report.mprisSnapshot.trackId == report.currentTrackId)
    }

    @Test("output lost: status names the cause, MPRIS shows paused")
    func outputLost() {
        let rules = PlayerState(
            playback: .paused(.outputLost(.deviceRemoved)), queue: QueueCursor(trackCount: 2, index: 0))
        let report = Self.report(rules)
        #expect(report.status["pauseReason"] as? String == "outputLost")
        #expect(report.status["outputLostReason"] as? String == OutputLossReason.deviceRemoved.description)
        #expect(report.mprisSnapshot.playbackStatus == .paused)
    }

    @Test("idle: status says stopped, MPRIS shows no track and offers nothing")
    func idle() {
        var output = Self.output
        output.realtime = nil
        output.streamOpen = false
        var report = Self.report(PlayerState(), paths: [])
        report.output = output
        report.durationMilliseconds = nil
        #expect(report.status["playback"] as? String == "stopped")
        #expect(report.status["realtime"] as? String == "none (not connected)")
        #expect(report.status["streamOpen"] as? Bool == false)
        #expect(report.status["durationMs"] is JSONNull)
        #expect(report.mprisSnapshot == MPRISSnapshot(playbackStatus: .stopped, volume: 1.0))
        #expect(report.lengthMicroseconds == nil)
    }

    @Test("rule 23: status says whether the rules want the idle suspend held off, and which service holds it")
    func idleInhibitor() {
        var rules = PlayerState(
            policy: ResumePolicy(inhibitIdleSuspend: true), playback: .playing,
            queue: QueueCursor(trackCount: 2, index: 0), stream: StreamCondition(isOpen: true, isCorked: false))
        rules.idleInhibitorHeld = true
        var held = Self.report(rules)
        held.output.idleInhibitorService = "portal"
        #expect(held.status["idleInhibitorWanted"] as? Bool == true)
        #expect(held.status["idleInhibitorHeldBy"] as? String == "portal")
        #expect(StatusText.render(held.status).contains("idle suspend: held off (portal)"))
        // Wanted, but no service took it (a bus with none of the three).
        let unheld = Self.report(rules)
        #expect(unheld.status["idleInhibitorHeldBy"] is JSONNull)
        #expect(StatusText.render(unheld.status).contains("idle suspend: not held off (no service took it)"))
        // Not playing: nothing wanted, nothing said.
        rules.playback = .paused(.user)
        rules.idleInhibitorHeld = false
        let paused = Self.report(rules)
        #expect(paused.status["idleInhibitorWanted"] as? Bool == false)
        #expect(!StatusText.render(paused.status).contains("idle suspend"))
    }

    @Test("ReplayGain: status names the mode, the current track's gain and its source; the text says it in words")
    func replayGain() throws {
        let rules = PlayerState(
            playback: .playing, queue: QueueCursor(trackCount: 2, index: 0),
            stream: StreamCondition(isOpen: true, isCorked: false))
        var report = Self.report(rules)
        report.replayGain = ReplayGainSettings(mode: .auto)
        report.metadata?.replayGain.applied = AppliedGain(
            decibels: 12, linear: 1 / 0.9, source: .albumTag, limitedByPeak: true)
        let gain = try #require(report.status["replayGain"] as? [String: Any])
        #expect(gain["mode"] as? String == "auto")
        #expect(gain["source"] as? String == "albumTag")
        #expect(gain["gainDb"] as? Double == 0.92)
        #expect(gain["limitedByPeak"] as? Bool == true)
        #expect(StatusText.render(report.status).contains(
            "replaygain auto: 0.9 dB from the album tag, limited by its peak"))
        report.metadata?.replayGain.applied = AppliedGain(decibels: -6.5, linear: AppliedGain.linearFactor(-6.5),
                                                          source: .fallback, limitedByPeak: false)
        #expect(StatusText.render(report.status).contains("replaygain auto: -6.5 dB, no value in the file"))
        report.metadata?.replayGain.applied = nil
        report.replayGain.mode = .off
        #expect(StatusText.render(report.status).contains("replaygain off: none applied"))
    }
}
