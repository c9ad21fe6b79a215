import CPulse

// Plain Swift copies of cards, sources and capture streams: what the translator needs to tell a Bluetooth headset
// switching to its call profile (the card stays, its profile changes, our sink is replaced) from an unplug (the card
// goes). Copied inside the callbacks, like Snapshots.swift; no C type leaves this module, and nothing here holds user
// content (no stream names).

/// One profile of a card (for example PulseAudio's `a2dp_sink` or PipeWire's `headset-head-unit`).
public struct CardProfileSnapshot: Sendable, Equatable {
    /// The profile's name.
    public var name: String
    /// How many sinks the card has while this profile is active; 0 for `off` or `a2dp_source`.
    public var sinkCount: UInt32
    /// How many sources the card has while this profile is active.
    public var sourceCount: UInt32

    /// Creates a profile description.
    public init(name: String, sinkCount: UInt32, sourceCount: UInt32) {
        self.name = name
        self.sinkCount = sinkCount
        self.sourceCount = sourceCount
    }

    /// Copies a profile out of libpulse's callback-scoped struct.
    init(_ profile: pa_card_profile_info2) {
        self.init(name: string(profile.name) ?? "", sinkCount: profile.n_sinks, sourceCount: profile.n_sources)
    }

    /// Whether this is an A2DP profile.
    public var isA2DP: Bool { Self.isA2DP(name) }

    /// Whether a Bluetooth profile name is an A2DP one: PulseAudio 16 says `a2dp_sink`, PipeWire `a2dp-sink`,
    /// `a2dp-sink-aac` or `a2dp-duplex`; the call profiles are `headset_head_unit`, `handsfree_head_unit` (PulseAudio)
    /// and `headset-head-unit`, `headset-head-unit-msbc` (PipeWire).
    public static func isA2DP(_ name: String) -> Bool {
        name.lowercased().hasPrefix("a2dp")
    }
}

/// A card (a hardware device: the owner of sinks, sources and profiles) as the server last described it. On
/// pipewire-pulse a card is a PipeWire device.
public struct CardSnapshot: Sendable, Equatable {
    /// The card's index on this server; valid until the card is removed.
    public var index: UInt32
    /// The card's name, for example `bluez_card.00_11_22_33_44_55`. Holds a device address: never logged.
    public var name: String
    /// Every profile the card offers.
    public var profiles: [CardProfileSnapshot]
    /// The name of the active profile, if the server reports one.
    public var activeProfileName: String?
    /// The card's `device.bus` property (`bluetooth`, `usb`, `pci`), if set.
    public var deviceBus: String?
    /// The card's `device.api` property (`bluez` on PulseAudio, `bluez5` on PipeWire, `alsa`), if set.
    public var deviceAPI: String?

    /// Creates a card description.
    public init(
        index: UInt32,
        name: String,
        profiles: [CardProfileSnapshot] = [],
        activeProfileName: String? = nil,
        deviceBus: String? = nil,
        deviceAPI: String? = nil
    ) {
        self.index = index
        self.name = name
        self.profiles = profiles
        self.activeProfileName = activeProfileName
        self.deviceBus = deviceBus
        self.deviceAPI = deviceAPI
    }

    /// Copies a card out of libpulse's callback-scoped struct.
    init(_ info: pa_card_info) {
        var profiles: [CardProfileSnapshot] = []
        if let list = info.profiles2 {
            profiles.reserveCapacity(Int(info.n_profiles))
            for position in 0..<Int(info.n_profiles) {
                guard let profile = list[position] else { break }
                profiles.append(CardProfileSnapshot(profile.pointee))
            }
        }
        self.init(
            index: info.index,
            name: string(info.name) ?? "",
            profiles: profiles,
            activeProfileName: info.active_profile2.flatMap { string($0.pointee.name) },
            deviceBus: property(info.proplist, PA_PROP_DEVICE_BUS),
            deviceAPI: property(info.proplist, PA_PROP_DEVICE_API)
        )
    }

    /// The active profile's description, if the card has an active profile.
    public var activeProfile: CardProfileSnapshot? {
        guard let activeProfileName else { return nil }
        return profiles.first { $0.name == activeProfileName }
    }

    /// Whether the card is a Bluetooth device. Both servers set `device.bus = bluetooth` on it (PulseAudio's
    /// module-bluez5-device, PipeWire's spa bluez5 device); the API name and A2DP profiles are further evidence.
    public var isBluetooth: Bool {
        deviceBus == "bluetooth" || deviceAPI?.hasPrefix("bluez") == true || profiles.contains { $0.isA2DP }
    }
}

/// A source (an input device, or the monitor of a sink) as the server last described it.
public struct SourceSnapshot: Sendable, Equatable {
    /// The source's index on this server.
    public var index: UInt32
    /// The card the source belongs to, if any. WirePlumber 0.5's Bluetooth loopback source (`bluez_input.ADDR`)
    /// belongs to the headset's device even while it plays A2DP.
    public var cardIndex: UInt32?
    /// The sink this source is the monitor of (`pa_source_info.monitor_of_sink`); nil for a microphone.
    public var monitorOfSinkIndex: UInt32?

    /// Whether the source is the monitor of a sink (recording what a sink plays, not a microphone).
    public var isMonitor: Bool { monitorOfSinkIndex != nil }

    /// Creates a source description.
    public init(index: UInt32, cardIndex: UInt32?, monitorOfSinkIndex: UInt32? = nil) {
        self.index = index
        self.cardIndex = cardIndex
        self.monitorOfSinkIndex = monitorOfSinkIndex
    }

    /// Copies a source out of libpulse's callback-scoped struct.
    init(_ info: pa_source_info) {
        self.init(
            index: info.index, cardIndex: validIndex(info.card), monitorOfSinkIndex: validIndex(info.monitor_of_sink)
        )
    }
}

/// A capture stream (a source output: anyone's recording) as the server last described it. It holds what judging a
/// call needs (CaptureCalls.swift) and nothing of what is recorded: no media name.
public struct SourceOutputSnapshot: Sendable, Equatable {
    /// The source output's index; valid until the stream goes away.
    public var index: UInt32
    /// The index of the source it records from (PA_INVALID_INDEX while pipewire-pulse has not linked it yet).
    public var sourceIndex: UInt32
    /// The stream's `media.role` property ("phone", ...), if set.
    public var mediaRole: String?
    /// Whether the stream only measures levels (resample method `peaks`, as volume meters such as pavucontrol use):
    /// PulseAudio's module-bluetooth-policy ignores those too.
    public var isLevelMeter: Bool
    /// The index of the module that created the stream (a loopback, a filter), if any. On PulseAudio every client's
    /// stream names module-native-protocol-unix here (measured on 16.1 with parecord): only the client tells them apart.
    public var ownerModuleIndex: UInt32?
    /// The index of the client that owns the stream; nil for a module's own stream (PulseAudio's loopback has none).
    public var clientIndex: UInt32?
    /// The owning application's `application.name` ("Chromium input", "Firefox"). Not user content, but logged at
    /// debug level only.
    public var applicationName: String?
    /// The owning application's `application.process.binary` ("chrome", "firefox").
    public var applicationBinary: String?
    /// The owning application's `application.process.id`, when it says (as a client may claim any number, it only
    /// tells Earshot's own streams apart).
    public var processID: Int32?
    /// Whether the stream is corked (paused): Chromium opens its capture corked and uncorks it while capturing.
    public var corked: Bool
    /// Whether pipewire-pulse marks the stream as a monitor (`stream.monitor=true`: its peak-detect streams).
    public var isMonitorStream: Bool
    /// Whether the stream records a sink or one of its streams (`stream.capture.sink=true` on pipewire-pulse, which
    /// is how it carries `direct_on_input`; libpulse's source output info has no such field, and on PulseAudio such
    /// a recording sits on the sink's monitor source).
    public var capturesSink: Bool
    /// The stream's `node.link-group`, which PipeWire sets on both halves of a filter or loopback (echo-cancel,
    /// EasyEffects' own nodes, pw-loopback).
    public var linkGroup: String?

    /// Creates a source output description.
    public init(
        index: UInt32, sourceIndex: UInt32, mediaRole: String?, isLevelMeter: Bool = false,
        ownerModuleIndex: UInt32? = nil, clientIndex: UInt32? = nil, applicationName: String? = nil,
        applicationBinary: String? = nil, processID: Int32? = nil, corked: Bool = false,
        isMonitorStream: Bool = false, capturesSink: Bool = false, linkGroup: String? = nil
    ) {
        self.index = index
        self.sourceIndex = sourceIndex
        self.mediaRole = mediaRole
        self.isLevelMeter = isLevelMeter
        self.ownerModuleIndex = ownerModuleIndex
        self.clientIndex = clientIndex
        self.applicationName = applicationName
        self.applicationBinary = applicationBinary
        self.processID = processID
        self.corked = corked
        self.isMonitorStream = isMonitorStream
        self.capturesSink = capturesSink
        self.linkGroup = linkGroup
    }

    /// Copies a source output out of libpulse's callback-scoped struct.
    init(_ info: pa_source_output_info) {
        // As for sink inputs, the media name is deliberately not copied.
        self.init(
            index: info.index,
            sourceIndex: info.source,
            mediaRole: property(info.proplist, PA_PROP_MEDIA_ROLE),
            isLevelMeter: string(info.resample_method) == "peaks",
            ownerModuleIndex: validIndex(info.owner_module),
            clientIndex: validIndex(info.client),
            applicationName: property(info.proplist, PA_PROP_APPLICATION_NAME),
            applicationBinary: property(info.proplist, PA_PROP_APPLICATION_PROCESS_BINARY),
            processID: property(info.proplist, PA_PROP_APPLICATION_PROCESS_ID).flatMap { Int32($0) },
            corked: info.corked != 0,
            isMonitorStream: property(info.proplist, "stream.monitor") == "true",
            capturesSink: property(info.proplist, "stream.capture.sink") == "true",
            linkGroup: property(info.proplist, "node.link-group")
        )
    }
}
