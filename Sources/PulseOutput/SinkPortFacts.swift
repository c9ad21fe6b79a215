// Pure: no libpulse here. What the server said about a sink's ports, in EarshotCore's words (`SinkPorts`): the
// translator reports our sink's ports before and after each change (`Event.sinkPortsChanged`), and EarshotCore's
// `PortJudge` decides whether that is an unplug, a port choice or a replug (PortChanges.swift).
import EarshotCore

extension SinkSnapshot {
    /// The sink's ports and its active port, as facts for the rules.
    public var portFacts: SinkPorts {
        SinkPorts(ports: ports.map(\.fact), activeName: activePortName)
    }
}

extension PortSnapshot {
    /// The port as a fact for the rules: its name, whether it is headphone-like and its availability.
    public var fact: SinkPort {
        SinkPort(name: name, headphoneLike: isHeadphoneLike, availability: availability.fact)
    }

    /// Whether the port leads to something only the wearer hears, read from the server's description: its type, or,
    /// when the server does not know the type, its name ("analog-output-headphones", "headset-output"), the only
    /// evidence left. This is a reading of the server's data, so it stays with the translator; what a switch away from
    /// such a port means for the music is the rules' (`PortJudge`).
    public var isHeadphoneLike: Bool {
        switch type {
        case .headphones, .headset:
            return true
        case .unknown:
            let name = name.lowercased()
            return name.contains("headphone") || name.contains("headset")
        default:
            return false
        }
    }
}

extension PortAvailability {
    /// The same availability in EarshotCore's words.
    var fact: SinkPort.Availability {
        switch self {
        case .unknown: return .unknown
        case .no: return .unplugged
        case .yes: return .plugged
        }
    }
}
