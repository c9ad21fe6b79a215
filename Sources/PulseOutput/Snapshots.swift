import CPulse

// Plain Swift copies of what the server reports. libpulse's info structs are only valid inside the callback that
// receives them, so everything is copied out there; no C type leaves this module.

/// What the sound server says about itself.
public struct ServerInfo: Sendable, Equatable {
    /// The server's own name: "pulseaudio", or "PulseAudio (on PipeWire 0.3.65)" for pipewire-pulse.
    public var serverName: String
    /// The protocol-level server version, for example "16.1" (pipewire-pulse reports "15.0.0").
    public var serverVersion: String
    /// The name of the default sink, if the server has one.
    public var defaultSinkName: String?

    /// Creates a server description.
    public init(serverName: String, serverVersion: String, defaultSinkName: String?) {
        self.serverName = serverName
        self.serverVersion = serverVersion
        self.defaultSinkName = defaultSinkName
    }

    /// A name for people: "PulseAudio 16.1", or "PulseAudio (on PipeWire 0.3.65)" as pipewire-pulse names itself.
    public var displayName: String {
        if serverName.lowercased() == "pulseaudio" {
            return "PulseAudio \(serverVersion)"
        }
        // pipewire-pulse puts the real version in its name; its version field is the emulated PulseAudio one.
        if serverName.contains("PipeWire") {
            return serverName
        }
        return "\(serverName) \(serverVersion)"
    }

    /// Copies the server's description out of libpulse's callback-scoped struct.
    init(_ info: pa_server_info) {
        self.init(
            serverName: string(info.server_name) ?? "",
            serverVersion: string(info.server_version) ?? "",
            defaultSinkName: string(info.default_sink_name)
        )
    }
}

/// What kind of device a port leads to (PulseAudio >= 14 reports it; older servers and null sinks say unknown).
public enum PortType: Sendable, Equatable {
    /// The server does not know.
    case unknown
    /// An auxiliary output.
    case aux
    /// Built-in speakers.
    case speaker
    /// Headphones (wired jack, or a Bluetooth headphone profile).
    case headphones
    /// A line output.
    case lineOut
    /// A microphone (source ports only).
    case mic
    /// A headset (headphones with a microphone).
    case headset
    /// A handset.
    case handset
    /// A phone earpiece.
    case earpiece
    /// S/PDIF.
    case spdif
    /// HDMI.
    case hdmi
    /// A television.
    case tv
    /// A radio.
    case radio
    /// A video output.
    case video
    /// A USB device.
    case usb
    /// A Bluetooth device.
    case bluetooth
    /// A portable device.
    case portable
    /// A hands-free device.
    case handsfree
    /// A car audio system.
    case car
    /// A hi-fi system.
    case hifi
    /// A phone.
    case phone
    /// A network device.
    case network
    /// A generic analog output.
    case analog

    /// Translates libpulse's `pa_device_port_type` value.
    init(rawType: UInt32) {
        // pulse/def.h says new values may be added: anything unrecognised is .unknown.
        switch pa_device_port_type(rawValue: rawType) {
        case PA_DEVICE_PORT_TYPE_AUX: self = .aux
        case PA_DEVICE_PORT_TYPE_SPEAKER: self = .speaker
        case PA_DEVICE_PORT_TYPE_HEADPHONES: self = .headphones
        case PA_DEVICE_PORT_TYPE_LINE: self = .lineOut
        case PA_DEVICE_PORT_TYPE_MIC: self = .mic
        case PA_DEVICE_PORT_TYPE_HEADSET: self = .headset
        case PA_DEVICE_PORT_TYPE_HANDSET: self = .handset
        case PA_DEVICE_PORT_TYPE_EARPIECE: self = .earpiece
        case PA_DEVICE_PORT_TYPE_SPDIF: self = .spdif
        case PA_DEVICE_PORT_TYPE_HDMI: self = .hdmi
        case PA_DEVICE_PORT_TYPE_TV: self = .tv
        case PA_DEVICE_PORT_TYPE_RADIO: self = .radio
        case PA_DEVICE_PORT_TYPE_VIDEO: self = .video
        case PA_DEVICE_PORT_TYPE_USB: self = .usb
        case PA_DEVICE_PORT_TYPE_BLUETOOTH: self = .bluetooth
        case PA_DEVICE_PORT_TYPE_PORTABLE: self = .portable
        case PA_DEVICE_PORT_TYPE_HANDSFREE: self = .handsfree
        case PA_DEVICE_PORT_TYPE_CAR: self = .car
        case PA_DEVICE_PORT_TYPE_HIFI: self = .hifi
        case PA_DEVICE_PORT_TYPE_PHONE: self = .phone
        case PA_DEVICE_PORT_TYPE_NETWORK: self = .network
        case PA_DEVICE_PORT_TYPE_ANALOG: self = .analog
        default: self = .unknown
        }
    }
}

/// Whether something is plugged into a port, as far as the hardware can tell (jack detection).
public enum PortAvailability: Sendable, Equatable {
    /// No jack detection for this port: it may or may not be usable.
    case unknown
    /// Unplugged.
    case no
    /// Plugged in.
    case yes

    /// Translates libpulse's `pa_port_available` value.
    init(rawAvailable: Int32) {
        switch pa_port_available(rawValue: UInt32(bitPattern: rawAvailable)) {
        case PA_PORT_AVAILABLE_NO: self = .no
        case PA_PORT_AVAILABLE_YES: self = .yes
        default: self = .unknown
        }
    }
}

/// One port of a sink (for example "analog-output-headphones"), copied from the server's sink info.
public struct PortSnapshot: Sendable, Equatable {
    /// The port's name, for example "analog-output-speaker".
    public var name: String
    /// What kind of device the port leads to.
    public var type: PortType
    /// Whether something is plugged in.
    public var availability: PortAvailability
    /// Ports sharing one jack share a group; nil when the port is in none. Opaque: compare, never parse.
    public var availabilityGroup: String?
    /// The server's preference for this port as a default; higher is preferred.
    public var priority: UInt32

    /// Creates a port description.
    public init(
        name: String,
        type: PortType = .unknown,
        availability: PortAvailability = .unknown,
        availabilityGroup: String? = nil,
        priority: UInt32 = 0
    ) {
        self.name = name
        self.type = type
        self.availability = availability
        self.availabilityGroup = availabilityGroup
        self.priority = priority
    }

    /// Copies a port out of libpulse's callback-scoped struct.
    init(_ port: pa_sink_port_info) {
        self.init(
            name: string(port.name) ?? "",
            type: PortType(rawType: port.type),
            availability: PortAvailability(rawAvailable: port.available),
            availabilityGroup: string(port.availability_group),
            priority: port.priority
        )
    }
}

/// A sink (an output device) as the server last described it.
public struct SinkSnapshot: Sendable, Equatable {
    /// The sink's name, stable across reloads (indices are not), for example "headphones".
    public var name: String
    /// The sink's index on this server; valid until the sink is removed.
    public var index: UInt32
    /// A human-readable description, for example "Headphones".
    public var description: String
    /// The sink's ports; empty for virtual sinks such as null sinks.
    public var ports: [PortSnapshot]
    /// The name of the active port, if the sink has ports.
    public var activePortName: String?
    /// The index of the module that created the sink, if any (unloading it removes the sink).
    public var ownerModuleIndex: UInt32?
    /// The card the sink belongs to (`pa_sink_info.card`), if any; null sinks and virtual sinks have none.
    public var cardIndex: UInt32?
    /// The Bluetooth profile this sink was made for: PulseAudio's `bluetooth.protocol` property (`a2dp_sink`,
    /// `handsfree_head_unit`) or PipeWire's `api.bluez5.profile` (`a2dp-sink`, `headset-head-unit`); nil otherwise.
    public var bluetoothProfile: String?

    /// Creates a sink description.
    public init(
        name: String,
        index: UInt32,
        description: String = "",
        ports: [PortSnapshot] = [],
        activePortName: String? = nil,
        ownerModuleIndex: UInt32? = nil,
        cardIndex: UInt32? = nil,
        bluetoothProfile: String? = nil
    ) {
        self.name = name
        self.index = index
        self.description = description
        self.ports = ports
        self.activePortName = activePortName
        self.ownerModuleIndex = ownerModuleIndex
        self.cardIndex = cardIndex
        self.bluetoothProfile = bluetoothProfile
    }

    /// The active port's description, if the sink has an active port.
    public var activePort: PortSnapshot? {
        guard let activePortName else { return nil }
        return ports.first { $0.name == activePortName }
    }

    /// Whether the sink is a Bluetooth sink in an A2DP profile (by its own property, whatever its card says now).
    public var isA2DP: Bool {
        bluetoothProfile.map(CardProfileSnapshot.isA2DP) ?? false
    }

    /// Copies a sink out of libpulse's callback-scoped struct.
    init(_ info: pa_sink_info) {
        var ports: [PortSnapshot] = []
        if let list = info.ports {
            ports.reserveCapacity(Int(info.n_ports))
            for position in 0..<Int(info.n_ports) {
                guard let port = list[position] else { break }
                ports.append(PortSnapshot(port.pointee))
            }
        }
        self.init(
            name: string(info.name) ?? "",
            index: info.index,
            description: string(info.description) ?? "",
            ports: ports,
            activePortName: info.active_port.flatMap { string($0.pointee.name) },
            ownerModuleIndex: validIndex(info.owner_module),
            cardIndex: validIndex(info.card),
            bluetoothProfile: property(info.proplist, "bluetooth.protocol")
                ?? property(info.proplist, "api.bluez5.profile")
        )
    }
}

/// A playback stream on the server (ours or anyone's), as last described.
public struct SinkInputSnapshot: Sendable, Equatable {
    /// The sink input's index; valid until the stream goes away.
    public var index: UInt32
    /// The index of the sink the stream plays on.
    public var sinkIndex: UInt32
    /// The stream's `media.role` property ("music", "phone", ...), if set.
    public var mediaRole: String?
    /// Whether the stream is corked (paused) on the server.
    public var corked: Bool
    /// Whether the stream is muted on the server (module-role-cork mutes the streams it corks).
    public var muted: Bool
    /// The index of the client that owns the stream, if any.
    public var clientIndex: UInt32?
    /// The owning application's `application.name`, if set.
    public var applicationName: String?
    /// The index of the module that created the stream (a loopback, a combine sink, a filter), if any.
    public var ownerModuleIndex: UInt32?

    /// Creates a sink input description.
    public init(
        index: UInt32,
        sinkIndex: UInt32,
        mediaRole: String?,
        corked: Bool,
        muted: Bool,
        clientIndex: UInt32?,
        applicationName: String?,
        ownerModuleIndex: UInt32? = nil
    ) {
        self.index = index
        self.sinkIndex = sinkIndex
        self.mediaRole = mediaRole
        self.corked = corked
        self.muted = muted
        self.clientIndex = clientIndex
        self.applicationName = applicationName
        self.ownerModuleIndex = ownerModuleIndex
    }

    /// Copies a sink input out of libpulse's callback-scoped struct.
    init(_ info: pa_sink_input_info) {
        // The media name (a track title, for other players too) is deliberately not copied: nothing here needs it
        // and what is not copied cannot be logged.
        self.init(
            index: info.index,
            sinkIndex: info.sink,
            mediaRole: property(info.proplist, PA_PROP_MEDIA_ROLE),
            corked: info.corked != 0,
            muted: info.mute != 0,
            clientIndex: validIndex(info.client),
            applicationName: property(info.proplist, PA_PROP_APPLICATION_NAME),
            ownerModuleIndex: validIndex(info.owner_module)
        )
    }
}

/// One subscription event from the server: something of a kind was added, changed or removed.
public struct ServerChange: Sendable, Equatable {
    /// Which kind of object the event is about.
    public enum Facility: Sendable, Equatable {
        /// A sink (output device).
        case sink
        /// A sink input (a playback stream).
        case sinkInput
        /// A card (hardware device, owner of ports and profiles).
        case card
        /// A source (an input device, or a sink's monitor).
        case source
        /// A source output (a capture stream).
        case sourceOutput
        /// The server itself (for example its default sink).
        case server
        /// Anything else the server reports; not subscribed to, kept so nothing is silently misread.
        case other
    }

    /// What happened to the object.
    public enum Kind: Sendable, Equatable {
        /// It appeared.
        case new
        /// It changed.
        case change
        /// It went away.
        case remove
    }

    /// Which kind of object the event is about.
    public var facility: Facility
    /// What happened to it.
    public var kind: Kind
    /// The object's index (meaningless for `.server`).
    public var index: UInt32

    /// Creates a change description.
    public init(facility: Facility, kind: Kind, index: UInt32) {
        self.facility = facility
        self.kind = kind
        self.index = index
    }

    /// Decodes a subscription event's facility and kind bits.
    init(rawEvent: UInt32, index: UInt32) {
        let facility = pa_subscription_event_type(rawValue: rawEvent & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue)
        switch facility {
        case PA_SUBSCRIPTION_EVENT_SINK: self.facility = .sink
        case PA_SUBSCRIPTION_EVENT_SINK_INPUT: self.facility = .sinkInput
        case PA_SUBSCRIPTION_EVENT_CARD: self.facility = .card
        case PA_SUBSCRIPTION_EVENT_SOURCE: self.facility = .source
        case PA_SUBSCRIPTION_EVENT_SOURCE_OUTPUT: self.facility = .sourceOutput
        case PA_SUBSCRIPTION_EVENT_SERVER: self.facility = .server
        default: self.facility = .other
        }
        let kind = pa_subscription_event_type(rawValue: rawEvent & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue)
        switch kind {
        case PA_SUBSCRIPTION_EVENT_NEW: self.kind = .new
        case PA_SUBSCRIPTION_EVENT_REMOVE: self.kind = .remove
        default: self.kind = .change
        }
        self.index = index
    }
}

/// A C string copied into Swift, or nil for a null pointer.
func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}

/// A property from a libpulse property list, or nil when absent.
func property(_ list: OpaquePointer?, _ key: String) -> String? {
    guard let list else { return nil }
    return string(pa_proplist_gets(list, key))
}

/// nil for libpulse's PA_INVALID_INDEX ((uint32_t) -1), the index itself otherwise.
func validIndex(_ index: UInt32) -> UInt32? {
    index == UInt32.max ? nil : index
}
