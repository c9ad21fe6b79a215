// The devices behind a virtual sink, for the translator (ServerEventTranslator.swift). Pure, like it: snapshots in,
// facts out (`VirtualSinkSignal`), which EarshotCore's `OutputFactJudge` judges (VirtualSinkSignals.swift).

import EarshotCore

/// What carries our sink's audio on to the devices the user hears, when our sink is a virtual one.
///
/// A carrier is a playback stream (sink-input) owned by a module that takes our sink's audio: a module with a
/// capture stream on our sink's monitor (`module-loopback source=fx.monitor`, `pw-loopback`), or the module that owns
/// our sink itself and also plays into other sinks (`module-combine-sink`'s slaves, a filter's or echo-cancel's
/// master). The sinks the carriers play on are followed in turn, so a chain of virtual sinks leads to the device at
/// its end. A client's streams (ours included) are never carriers, whatever module the server names as their owner
/// (PulseAudio names module-native-protocol-unix for every one): effect applications
/// that are clients (EasyEffects on PipeWire is a graph of native nodes) cannot be followed this way.
struct VirtualSinkChain: Sendable {
    /// Every sink known, by index: its owner module may carry it on, and a carrier's old sink still existing tells
    /// a deliberate move from the server's.
    private var sinks: [UInt32: SinkSnapshot] = [:]
    /// The server's sources, by index, as last described: a monitor says which sink it records. The translator reads
    /// them too (a call's microphone), so they are kept here once.
    private(set) var sources: [UInt32: SourceSnapshot] = [:]
    /// Every playback stream owned by a module, by index.
    private var moduleStreams: [UInt32: SinkInputSnapshot] = [:]
    /// Every capture stream of the session, by index: a module's may carry our sink's audio on, and the translator
    /// looks at all of them for a call.
    private(set) var captures: [UInt32: SourceOutputSnapshot] = [:]
    /// The sink our stream plays on, where the chain starts.
    private var start: UInt32?
    /// The carriers as last followed: sink-input index -> the sink it plays on.
    private(set) var carriers: [UInt32: UInt32] = [:]
    /// The sinks behind ours (devices and virtual sinks between), as last followed; empty when ours is a device.
    private(set) var sinksBehind: Set<UInt32> = []
    /// Sinks behind ours whose removal was reported, until their carriers have moved off them.
    private var reportedRemovals: Set<UInt32> = []

    /// Our stream is on `sink` now: the chain starts there. A move of our own stream is not the chain's to report.
    mutating func startsAt(_ sink: SinkSnapshot) {
        sinks[sink.index] = sink
        start = sink.index
        reportedRemovals = []
        (carriers, sinksBehind) = follow()
    }

    /// A sink appeared or changed.
    mutating func sinkDescribed(_ sink: SinkSnapshot) {
        sinks[sink.index] = sink
        (carriers, sinksBehind) = follow()
    }

    /// A sink other than ours was removed: a device (or a virtual sink) behind ours is reported.
    mutating func sinkRemoved(_ index: UInt32) -> [Event] {
        sinks[index] = nil
        guard sinksBehind.contains(index) else { return [] }
        // The carriers still name it until the server has moved them; `carrierMoved` then knows it is reported.
        reportedRemovals.insert(index)
        return [.virtualSinkSignal(.sinkBehindRemoved)]
    }

    /// A source appeared or changed: a monitor says which sink it records.
    mutating func sourceDescribed(_ source: SourceSnapshot) {
        sources[source.index] = source
        (carriers, sinksBehind) = follow()
    }

    /// A source was removed.
    mutating func sourceRemoved(_ index: UInt32) {
        sources[index] = nil
        (carriers, sinksBehind) = follow()
    }

    /// A capture stream appeared or changed: a module's may take our sink's audio. Never an event by itself.
    mutating func captureDescribed(_ capture: SourceOutputSnapshot) {
        captures[capture.index] = capture
        (carriers, sinksBehind) = follow()
    }

    /// A capture stream went away.
    mutating func captureRemoved(_ index: UInt32) {
        captures[index] = nil
        (carriers, sinksBehind) = follow()
    }

    /// A playback stream appeared or changed: a carrier on another sink than before was moved.
    mutating func streamDescribed(_ input: SinkInputSnapshot) -> [Event] {
        // A module's own stream has an owner module and no client (measured on PulseAudio 16.1 and both PipeWires).
        moduleStreams[input.index] = input.ownerModuleIndex == nil || input.clientIndex != nil ? nil : input
        let previous = carriers
        (carriers, sinksBehind) = follow()
        guard let from = previous[input.index], let to = carriers[input.index], from != to else { return [] }
        return carrierMoved(from: from)
    }

    /// A playback stream went away. A carrier going is no event: what it played is no longer heard, but nothing
    /// of ours reaches another device either.
    mutating func streamRemoved(_ index: UInt32) {
        moduleStreams[index] = nil
        (carriers, sinksBehind) = follow()
    }

    /// A carrier left the sink `from`, reported with what is known of that sink: its removal reported before, still
    /// there, or unknown (the rules tell the server's move after a removal from the user's).
    private mutating func carrierMoved(from: UInt32) -> [Event] {
        let left: LeftSink
        if reportedRemovals.contains(from) {
            left = .removalReported
            if !carriers.values.contains(from) { reportedRemovals.remove(from) }
        } else {
            left = sinks[from] != nil ? .exists : .unknown
        }
        return [.virtualSinkSignal(.carrierMoved(left: left))]
    }

    /// Follows the carriers from our sink: every carrier reached, with its sink, and every sink reached.
    private func follow() -> (carriers: [UInt32: UInt32], sinks: Set<UInt32>) {
        guard let start else { return ([:], []) }
        var carriers: [UInt32: UInt32] = [:]
        var reached: Set<UInt32> = [start]
        var pending = [start]
        while let sink = pending.popLast() {
            let modules = carrierModules(of: sink)
            // PA_INVALID_INDEX: pipewire-pulse 1.4 describes a new stream before it is linked.
            for stream in moduleStreams.values where stream.sinkIndex != sink && stream.sinkIndex != UInt32.max {
                guard let module = stream.ownerModuleIndex, modules.contains(module) else { continue }
                carriers[stream.index] = stream.sinkIndex
                if reached.insert(stream.sinkIndex).inserted { pending.append(stream.sinkIndex) }
            }
        }
        reached.remove(start)
        return (carriers, reached)
    }

    /// The modules that take `sink`'s audio: those recording its monitor, and the one that owns it.
    private func carrierModules(of sink: UInt32) -> Set<UInt32> {
        // Only a module's capture carries audio on; a client's (a recorder, a level meter) ends there.
        // A client's stream names an owner module too on PulseAudio (module-native-protocol-unix owns every client
        // stream), so ownership alone would make that module a carrier, and every client's playback anywhere would
        // look like our audio carried on: only a stream without a client is a module's own.
        var modules = Set(captures.values.compactMap { capture in
            capture.clientIndex == nil && sources[capture.sourceIndex]?.monitorOfSinkIndex == sink
                ? capture.ownerModuleIndex : nil
        })
        if let owner = sinks[sink]?.ownerModuleIndex { modules.insert(owner) }
        return modules
    }
}
