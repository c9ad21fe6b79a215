// The player's part in calls inferred from microphone captures (see Player.swift): the server's notices about sources
// and capture streams go to the translator, which says which applications record from a microphone; the rules judge
// them (EarshotCore's CallSignals.swift) and arm their one-shot timer (`armTimer`) only while something waits.
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

    /// Arms the rules' timer for `moment`, or disarms it when nil (`armTimer`): its expiry comes back as `timerFired`.
    func armRulesTimer(for moment: Moment?) {
        guard let moment else {
            rulesTimer.disarm()
            return
        }
        // Set to exactly this moment: `arm` alone keeps an earlier deadline, and the rules' deadline can move later.
        let wait = max(moment.milliseconds(since: eventMoment()), 0)
        rulesTimer.disarm()
        rulesTimer.arm(after: .milliseconds(wait))
    }

    /// Dispatches the translator's `events`; the application behind a capture is named at debug level only (it is no
    /// user content, but a log at the default level holds kinds, causes and states alone).
    func dispatchCalls(_ events: [Event]) {
        for event in events {
            if configuration.debugLogging,
               case .callSignal(.microphoneCaptureRunning(let client, _, _), _) = event,
               !rules.calls.microphoneCalls.contains(client) {
                log.record("debug", ["call": "microphone#\(client)",
                                     "application": translator.applicationName(ofClient: client) ?? "unknown"])
            }
            dispatch(event)
        }
    }
}
