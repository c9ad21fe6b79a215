// The randomized checker's oracle: after every step, the truth from the server (`pactl list sink-inputs`) and the
// sinks' monitors, held against what Earshot says (`status`, MPRIS through playerctl, the event log). It never
// predicts what Earshot should do next (the rulebook's own tests do that); it checks what shared/RULES.md says must
// hold whatever happened ("What correct means, measured"):
//   - not playing (paused, stopped, idle): nothing of ours sounds on any sink once the step's bound has passed, and
//     our stream, if there is one, is corked;
//   - playing: our stream is uncorked on the sink the status names, and that sink's monitor hears it; no other
//     sink does;
//   - status, MPRIS and the event log agree with each other, and the status's sink and cork with the server's;
//   - the position moves only by playing, a seek or a track change (a step that may move it says so in the catalogue).
// Each check listens over a window of `window` after the state has held still for two readings; a state in motion
// (a track ending, a resume starting) is read again, a few times, before anything is judged.

import EarshotTestSupport
import Foundation

/// A check the oracle found broken after a step.
struct CheckerFinding: Error, CustomStringConvertible {
    /// The check's short name (`silent when not playing`), which a shrunk replay must break again.
    let check: String
    /// What was seen.
    let detail: String

    var description: String { "\(check): \(detail)" }
}

/// One reading of the service's status, with the play order the oracle needs for the position check.
struct CheckerObservation: Sendable {
    /// The status.
    let status: EarshotStatus
    /// `repeat` of the status (`off`, `track`, `queue`).
    let repeatMode: String
    /// When it was read.
    let at: ContinuousClock.Instant

    /// Whether the status says playing.
    var playing: Bool { status.playback == "playing" }
}

/// The checks run after every step.
struct CheckerOracle {
    /// How long after a step the oracle starts listening: the rules' bounds (an unplug corks within 10 ms, a
    /// pause's fade is 50 ms by default), the stream's buffer (about 50 ms) and the recorder's timing (+/-20 ms),
    /// with room for a loaded machine.
    static let bound = Duration.milliseconds(300)
    /// How long each listening window lasts.
    static let window = Duration.milliseconds(500)
    /// How much sound a window may hold on a sink that must be silent (the recorder's timing at the window's edge).
    static let allowedSoundMilliseconds = 20.0
    /// How much of a window must sound on the sink a playing status names.
    static let requiredSoundFraction = 0.3
    /// How many windows are tried before a judgement (a state in motion, audio that is only starting).
    static let attempts = 6

    /// The world observed.
    let world: CheckerWorld

    /// Reads the status on the control socket, with its `repeat`.
    func observe() throws -> CheckerObservation {
        let reply = try world.harness.requestChecked(["command": "status"], timeout: .seconds(10))
        guard let fields = reply["status"] as? [String: Any] else {
            throw CheckerFinding(check: "status answers", detail: "no status in \(reply)")
        }
        let status = try JSONDecoder().decode(EarshotStatus.self, from: JSONSerialization.data(withJSONObject: fields))
        return CheckerObservation(status: status, repeatMode: fields["repeat"] as? String ?? "off", at: .now)
    }

    /// Checks the world after `step`; `previous` is the last observation of the step before. Returns this step's.
    func check(after step: CheckerStep, previous: CheckerObservation?) async throws -> CheckerObservation {
        try await Task.sleep(for: Self.bound)
        var soundedWhileNotPlaying = 0
        var last: CheckerObservation?
        for attempt in 1...Self.attempts {
            guard world.service.isRunning else {
                throw CheckerFinding(
                    check: "service runs", detail: "earshot serve exited: \(world.service.standardError())")
            }
            try await world.restartRecorders()
            let first = try observe()
            if attempt == 1 { try checkPositionAcrossSteps(step: step, previous: previous, now: first) }
            let windowStart = ContinuousClock.now
            try await Task.sleep(for: Self.window)
            let second = try observe()
            let windowEnd = ContinuousClock.now
            last = second
            guard first.status.playback == second.status.playback, first.status.trackIndex == second.status.trackIndex,
                  first.status.trackCount == second.status.trackCount
            else { continue }
            // The recorder's file holds the window's end a little after it.
            try await Task.sleep(for: .milliseconds(100))
            let heard = try world.recorders.mapValues { recorder in
                let recording = try recorder.recorded(since: windowStart)
                let end = min(recording.duration, recording.time(of: windowEnd))
                return end > 0 ? recording.audibleMilliseconds(within: 0..<end) : 0
            }
            let streams = try world.ourStreams()
            let windowMilliseconds = Self.window / .milliseconds(1)
            if second.playing {
                guard let sink = second.status.sink else { continue }
                let sounding = heard[sink] ?? 0
                let elsewhere = heard.filter { $0.key != sink && $0.value > Self.allowedSoundMilliseconds }
                let uncorkedThere = streams.contains { !$0.corked && $0.sinkName == sink }
                if !elsewhere.isEmpty {
                    throw CheckerFinding(
                        check: "playing sounds only on its sink",
                        detail: "status \(second.status) but heard \(elsewhere) ms elsewhere; streams \(streams)")
                }
                guard uncorkedThere, sounding >= windowMilliseconds * Self.requiredSoundFraction else {
                    if attempt < Self.attempts { continue }
                    throw CheckerFinding(
                        check: "playing sounds on its sink",
                        detail: "status \(second.status); heard \(heard) ms in \(windowMilliseconds) ms; "
                            + "streams \(streams)")
                }
            } else {
                let sounding = heard.filter { $0.value > Self.allowedSoundMilliseconds }
                let uncorked = streams.filter { !$0.corked }
                if !sounding.isEmpty || !uncorked.isEmpty {
                    // Twice in a row, so that a fade or a late buffer on a loaded machine is not taken for a lie.
                    soundedWhileNotPlaying += 1
                    if soundedWhileNotPlaying < 2 && attempt < Self.attempts { continue }
                    // Two checks: sound is what the user hears; an uncorked stream with nothing heard (a drained
                    // queue's end) is what the rules forbid too (rule 22: leaving playing corks or closes it).
                    throw CheckerFinding(
                        check: sounding.isEmpty ? "corked when not playing" : "silent when not playing",
                        detail: "status \(second.status); heard \(sounding) ms; uncorked streams "
                            + "\(uncorked.map { "#\($0.index) on \($0.sinkName ?? "none")" })")
                }
            }
            // After the sound: a player that says stopped while it plays shows both, and the sound is what the user
            // notices.
            // A repeat in force before the step still counts: the decoder joins the next track (here the same one
            // again) ahead of the seam, and a change of order after that is heard from the track after (rule 22).
            let repeatedBefore = previous.map { $0.repeatMode != "off" } ?? false
            try await checkPositionWithin(first, second, repeatedBefore: repeatedBefore)
            try await checkAgreement(second)
            return second
        }
        // Still in motion after every attempt: nothing to judge that would be fair; the next step judges again.
        guard let last else { throw CheckerFinding(check: "status answers", detail: "no observation") }
        return last
    }

    /// MPRIS and the event log say what the status says; the status's sink and cork are the server's.
    private func checkAgreement(_ observation: CheckerObservation) async throws {
        // Each is read against a status read with it: the state may change meanwhile (a stall found, a track
        // ended), and every reader then follows within a moment.
        var status = observation.status
        var saidByMPRIS = ""
        var logged: String?
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            let normalized = status.playback == "idle" ? "stopped" : status.playback
            saidByMPRIS = (try? world.harness.playerctl(["-p", "earshot", "status"]).standardOutput.trimmed)
                ?? "no answer"
            logged = world.eventLogPlayback().map { $0 == "idle" ? "stopped" : $0 }
            if saidByMPRIS == Self.mprisPlayback(status.playback), logged == nil || logged == normalized { break }
            guard ContinuousClock.now < deadline else {
                if saidByMPRIS != Self.mprisPlayback(status.playback) {
                    throw CheckerFinding(check: "MPRIS agrees", detail: "MPRIS says \(saidByMPRIS), status \(status)")
                }
                throw CheckerFinding(
                    check: "event log agrees",
                    detail: "the event log's last state is \(logged ?? "none"), status \(status)")
            }
            try await Task.sleep(for: .milliseconds(100))
            status = try observe().status
        }
        let streams = try world.ourStreams()
        guard streams.count == 1, let stream = streams.first, let sink = stream.sinkName else { return }
        if status.streamOpen && (status.sink != sink || status.corked != stream.corked) {
            // Acknowledgements arrive a little after the server acts: read once more before judging.
            try await Task.sleep(for: .milliseconds(500))
            let again = try observe().status
            let streamNow = try world.ourStreams().first
            if let streamNow, again.streamOpen,
               again.sink != streamNow.sinkName || again.corked != streamNow.corked {
                throw CheckerFinding(
                    check: "status agrees with the server",
                    detail: "status \(again); the server has our stream on \(streamNow.sinkName ?? "none"), "
                        + "corked \(streamNow.corked)")
            }
        }
    }

    /// What MPRIS's `PlaybackStatus` says for a status's `playback`.
    private static func mprisPlayback(_ playback: String) -> String {
        switch playback {
        case "playing": "Playing"
        case "paused": "Paused"
        default: "Stopped"
        }
    }

    /// Within one window of a state that held still: not playing, the position stays; playing, it moves forward
    /// no faster than time (or wraps, under a repeat now or before the step: `repeatedBefore`).
    private func checkPositionWithin(
        _ first: CheckerObservation, _ second: CheckerObservation, repeatedBefore: Bool
    ) async throws {
        let moved = second.status.positionMs - first.status.positionMs
        let elapsed = Int((second.at - first.at) / .milliseconds(1))
        let tolerance = 30 + Int(((try? TestEnvironment.serverPeriodSeconds()) ?? 0) * 1000)
        if !first.playing {
            guard abs(moved) <= tolerance else {
                throw CheckerFinding(
                    check: "position still when not playing",
                    detail: "moved \(moved) ms in \(elapsed) ms: \(first.status) -> \(second.status)")
            }
        } else if moved < -tolerance && second.repeatMode == "off" && !repeatedBefore || moved > elapsed + 300 {
            // At a track's end the position may be the next track's a moment before the index follows (the track
            // change is heard a little after it is decoded): a change that shows within a second is one.
            try await Task.sleep(for: .seconds(1))
            let later = try observe()
            if later.status.trackIndex != second.status.trackIndex
                || later.status.trackCount != second.status.trackCount
            {
                return
            }
            throw CheckerFinding(
                check: "position moves only by playing",
                detail: "moved \(moved) ms in \(elapsed) ms while playing: \(first.status) -> \(second.status); "
                    + "a second later \(later.status)")
        }
    }

    /// Between the end of the step before and now: a step that may not move the position, taken while not playing,
    /// leaves it where it was.
    private func checkPositionAcrossSteps(
        step: CheckerStep, previous: CheckerObservation?, now: CheckerObservation
    ) throws {
        guard let previous, !previous.playing, !now.playing,
              previous.status.trackIndex == now.status.trackIndex, previous.status.trackCount == now.status.trackCount,
              CheckerCatalogue.action(step.verb)?.movesPosition == false
        else { return }
        let tolerance = 30 + Int(((try? TestEnvironment.serverPeriodSeconds()) ?? 0) * 1000)
        let moved = now.status.positionMs - previous.status.positionMs
        if abs(moved) > tolerance {
            throw CheckerFinding(
                check: "position still across a step that does not move it",
                detail: "`\(step)` moved it \(moved) ms: \(previous.status) -> \(now.status)")
        }
    }
}
