// Calls as real applications make them: another application's running capture from a microphone (RULES.md, the
// interruption row). Pure, like the translator that owns it: snapshots and moments in, events out.
import EarshotCore

/// Why a capture stream is not a call, for tests and debug logs.
public enum CaptureExclusion: String, Sendable, CaseIterable {
    /// Configuration `callDetection: "roles"`.
    case detectionOff
    /// The capture is corked: nothing is being recorded.
    case corked
    /// Neither a client nor a module owns it: nothing tells what it is (PulseAudio's own Bluetooth policy ignores
    /// streams without a client as well).
    case noClient
    /// A module owns it and no client does: a loopback, echo-cancel's or another filter's own capture of the device.
    case moduleStream
    /// One half of a PipeWire filter or loopback (`node.link-group`).
    case filterStream
    /// A level meter: peak detection (resample method `peaks`, or pipewire-pulse's `stream.monitor`).
    case levelMeter
    /// A recording of a sink or of one stream (`stream.capture.sink`), or of a source that is a sink's monitor.
    case recordsOutput
    /// The source is not known (not described yet, or gone): not known to be a microphone.
    case unknownSource
    /// Earshot's own process.
    case ownProcess
    /// The application is named in `callIgnoreApplications`.
    case ignoredApplication
    /// `callDetection: "knownApps"` and the application is not one of them.
    case unknownApplication
}

/// What call detection is told by configuration.
public struct CallDetectionSettings: Sendable, Equatable {
    /// Which captures count.
    public var detection: CallDetection
    /// Application names (`application.name` or `application.process.binary`, compared without case) that never count.
    public var ignoredApplications: Set<String>
    /// Earshot's own process id: its own captures never count (it makes none today; a future level meter must not
    /// pause it).
    public var ownProcessID: Int32?
    /// Applications known to make calls, lower case, matched against `application.name` and
    /// `application.process.binary`: browsers (every web meeting: Meet, Teams, Zoom and Discord on the web),
    /// WebRTC's native voice engine (Discord) and Zoom's, Electron calling apps, Telegram, Skype, Mumble, Jitsi,
    /// Element.
    /// Names from PLATFORM.md ("Calls as real applications make them") and the applications' own sources.
    public static let knownCallingApplications: Set<String> = [
        "chromium", "chromium input", "chromium-browser", "chrome", "google chrome", "google chrome input",
        "brave", "brave-browser", "msedge", "microsoft edge", "vivaldi-bin", "opera",
        "firefox", "firefox-esr", "firefox-bin", "librewolf", "waterfox",
        "webrtc voiceengine", "discord", "discordcanary", "zoom voiceengine", "zoom", "zoom.real",
        "slack", "teams", "teams-for-linux", "signal", "signal-desktop", "telegram-desktop", "telegram desktop",
        "telegram", "skypeforlinux", "skype", "mumble", "jitsi meet", "element", "element-desktop", "webex",
        "whatsapp-for-linux", "gnome-calls", "calls",
    ]

    /// Settings; by default any microphone capture counts (after the rules' probe, `CallTiming`).
    public init(
        detection: CallDetection = .microphone, ignoredApplications: Set<String> = [], ownProcessID: Int32? = nil
    ) {
        self.detection = detection
        self.ignoredApplications = Set(ignoredApplications.map { $0.lowercased() })
        self.ownProcessID = ownProcessID
    }

    /// Whether `capture`, recording from `source` (nil: not known), is a call, and if not, why.
    public func exclusion(of capture: SourceOutputSnapshot, source: SourceSnapshot?) -> CaptureExclusion? {
        if detection == .roles { return .detectionOff }
        // A module's own stream has no client on PulseAudio (its loopback, echo-cancel's capture of the device). The
        // owner module alone tells nothing there: every client's stream is owned by module-native-protocol-unix.
        if capture.clientIndex == nil { return capture.ownerModuleIndex == nil ? .noClient : .moduleStream }
        if capture.linkGroup != nil { return .filterStream }
        if capture.isLevelMeter || capture.isMonitorStream { return .levelMeter }
        if capture.capturesSink { return .recordsOutput }
        // What the stream is comes first, what it does now (corked) after: the reason stays the same for its life.
        if capture.corked { return .corked }
        guard let source, source.index == capture.sourceIndex else { return .unknownSource }
        if source.isMonitor { return .recordsOutput }
        if let own = ownProcessID, capture.processID == own { return .ownProcess }
        let names = [capture.applicationName, capture.applicationBinary].compactMap { $0?.lowercased() }
        if names.contains(where: ignoredApplications.contains) { return .ignoredApplication }
        if detection == .knownApps && !names.contains(where: Self.knownCallingApplications.contains) {
            return .unknownApplication
        }
        return nil
    }
}

/// The applications recording from a microphone, as the server describes their captures: which captures are
/// another application's running capture from a microphone, since when, and which applications the rules have been
/// told of (`CallSignal.microphoneCaptureRunning`). Whether and when one is a call is the rules' (CallSignals.swift).
///
/// One application per client index: every capture of a client counts towards one, recording since its earliest
/// capture that has recorded without a break; it stops when the last of them stops counting (removed, corked, its
/// source gone). The client index rather than the process id: every client stream has one, the server never reuses it
/// while the client lives, and it needs no trust in what the client says of itself (`application.process.id` is the
/// client's own claim, and a number of another pid namespace inside a Flatpak sandbox).
struct CaptureCalls: Sendable {
    /// A capture that records from a microphone now.
    struct Qualifying: Sendable, Equatable {
        /// Its client: the application it records for.
        var client: UInt32
        /// Since when it has qualified without a break.
        var since: Moment
        /// Whether it was listed with the server's inventory when our stream opened (it ran before we did).
        var listed: Bool
    }

    /// What counts.
    var settings: CallDetectionSettings
    /// The captures that qualify now, by index.
    private(set) var qualifying: [UInt32: Qualifying] = [:]
    /// The applications (client indices) reported as recording and not yet reported stopped.
    private(set) var reported: Set<UInt32> = []
    /// Captures seen recording an output (a sink's monitor, a stream): they stay recordings for their life. When the
    /// sink goes, PulseAudio moves a recorder of its monitor to the default source, a microphone, and a recorder of
    /// what the speakers played is no call because the server moved it.
    private(set) var recordersOfOutput: Set<UInt32> = []

    /// Captures judged with `settings`.
    init(settings: CallDetectionSettings) {
        self.settings = settings
    }

    /// Judges every capture again at `moment` and reports the applications that stopped recording (in client order)
    /// and every one that records (in client order, again with each notice: the rules count its time). Captures in
    /// `alreadyRunning` are listed with the inventory.
    mutating func reweigh(
        captures: [UInt32: SourceOutputSnapshot], sources: [UInt32: SourceSnapshot], at moment: Moment,
        alreadyRunning: Set<UInt32> = []
    ) -> [Event] {
        var now: [UInt32: Qualifying] = [:]
        // Applications whose capture stopped counting because something about it is no longer known (its source
        // went away, its client is missing or another): said with their stop.
        var lostTrack: Set<UInt32> = []
        recordersOfOutput.formIntersection(captures.keys)
        for capture in captures.values {
            var exclusion = settings.exclusion(of: capture, source: sources[capture.sourceIndex])
            if exclusion == .recordsOutput { recordersOfOutput.insert(capture.index) }
            if recordersOfOutput.contains(capture.index) { exclusion = .recordsOutput }
            if let earlier = qualifying[capture.index],
               exclusion == .unknownSource || exclusion == .noClient || (exclusion == nil
                                                                         && capture.clientIndex != earlier.client) {
                lostTrack.insert(earlier.client)
            }
            // The exclusion check has made sure there is a client.
            guard exclusion == nil, let client = capture.clientIndex else { continue }
            if let earlier = qualifying[capture.index], earlier.client == client {
                now[capture.index] = earlier
            } else {
                now[capture.index] = Qualifying(client: client, since: moment,
                                                listed: alreadyRunning.contains(capture.index))
            }
        }
        qualifying = now
        var recording: [UInt32: Qualifying] = [:]
        for capture in now.values {
            guard let earlier = recording[capture.client] else {
                recording[capture.client] = capture
                continue
            }
            recording[capture.client] = Qualifying(client: capture.client, since: min(earlier.since, capture.since),
                                                   listed: earlier.listed || capture.listed)
        }
        let stopped = reported.subtracting(recording.keys).sorted()
        reported = Set(recording.keys)
        return stopped.map {
            Event.callSignal(.microphoneCaptureStopped(client: $0, sourceLost: lostTrack.contains($0)), at: moment)
        } + recording.keys.sorted().compactMap { client in
            recording[client].map {
                Event.callSignal(.microphoneCaptureRunning(client: client, since: $0.since, listedAtStart: $0.listed),
                                 at: moment)
            }
        }
    }

    /// Forgets everything (our stream is gone, with the server's description): the rules end what they counted
    /// (`CallSignal.ourStreamGone`).
    mutating func forget() {
        qualifying = [:]
        reported = []
        recordersOfOutput = []
    }
}
