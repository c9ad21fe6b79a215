// The player's part in calls inferred from microphone captures (see Player.swift): the server's notices about sources
// and capture streams go to the translator, which says which calls began and ended, and the one-shot timer that lets
// a capture's delay run out (CaptureCalls.swift in PulseOutput) is armed only while a capture waits for it.
import EarshotCore
import PulseOutput

extension Player {
    /// The translator's call detection, as configured: the owner's own process never counts.
    static func callDetection(of configuration: PlayerConfiguration, ownProcessID: Int32) -> CallDetectionSettings {
        CallDetectionSettings(
            detection: configuration.callDetection, ignoredApplications: configuration.callIgnoreApplications,
            ownProcessID: ownProcessID)
    }

    /// A notice about a source or a capture stream: the calls it begins or ends go to the rules.
    func captureNoticed(_ notice: ConnectionNotice, at now: Moment) {
        switch notice {
        case .sourceChanged(let source): dispatchCalls(translator.sourceChanged(source, at: now))
        case .sourceRemoved(let index): dispatchCalls(translator.sourceRemoved(index, at: now))
        case .sourceOutputChanged(let capture): dispatchCalls(translator.sourceOutputChanged(capture, at: now))
        case .sourceOutputRemoved(let index): dispatchCalls(translator.sourceOutputRemoved(index, at: now))
        default: break
        }
    }

    /// The translator's timer went off: captures that have run long enough count now, and profile switches that
    /// waited long enough for our stream end.
    func translatorTimerWentOff() {
        dispatchCalls(translator.timerExpired(at: monotonicMoment()))
    }

    /// Arms the translator's timer for its deadline, or disarms it when nothing waits (a player with no capture
    /// waiting to count and no profile switch waiting for our stream has none armed).
    func armTranslatorTimer() {
        guard let deadline = translator.deadline else {
            translatorTimer.disarm()
            return
        }
        let wait = max(deadline.milliseconds(since: monotonicMoment()), 0)
        translatorTimer.arm(after: .milliseconds(wait))
    }

    /// Dispatches the translator's `events`; the application behind an inferred call is named at debug level only
    /// (it is no user content, but a log at the default level holds kinds, causes and states alone).
    func dispatchCalls(_ events: [Event]) {
        for event in events {
            if configuration.debugLogging, case .interruptionBegan(.microphoneCapture(let client), _) = event {
                log.record("debug", ["call": "microphone#\(client)",
                                     "application": translator.applicationName(ofClient: client) ?? "unknown"])
            }
            dispatch(event)
        }
    }
}
