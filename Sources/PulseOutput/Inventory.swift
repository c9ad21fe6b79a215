// Listing what the server has without waiting: `requestInventory` sends one list query per part asked for and
// returns; the lists are collected on the mainloop thread as their callbacks arrive, and the whole inventory is
// handed over once the last list has ended. It is the product's only way to list the server: nothing here waits. The
// tests' waiting forms (`sinks()`, `sinkInputs()`, ...) are built on it in Tests/EarshotTestSupport/PulseLists.swift.

import CPulse

/// What the server has, listed at one moment: the answer to `PulseConnection.requestInventory`. A part that was not
/// asked for, or whose list failed (the server is going away), is empty.
public struct ServerInventory: Sendable, Equatable {
    /// The server's sinks.
    public var sinks: [SinkSnapshot] = []
    /// Every client's playback streams, ours included.
    public var sinkInputs: [SinkInputSnapshot] = []
    /// The server's sources (monitors included).
    public var sources: [SourceSnapshot] = []
    /// Every client's capture streams.
    public var sourceOutputs: [SourceOutputSnapshot] = []
    /// The server's cards.
    public var cards: [CardSnapshot] = []
    /// The server's own description, when asked for (`InventoryParts.serverInfo`).
    public var serverInfo: ServerInfo?

    /// An empty inventory.
    public init() {}
}

/// Which lists an inventory holds.
public struct InventoryParts: OptionSet, Sendable {
    public let rawValue: Int

    /// Creates a set of parts from its raw value.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// `sinks`.
    public static let sinks = InventoryParts(rawValue: 1 << 0)
    /// `sinkInputs`.
    public static let sinkInputs = InventoryParts(rawValue: 1 << 1)
    /// `sources`.
    public static let sources = InventoryParts(rawValue: 1 << 2)
    /// `sourceOutputs`.
    public static let sourceOutputs = InventoryParts(rawValue: 1 << 3)
    /// `cards`.
    public static let cards = InventoryParts(rawValue: 1 << 4)
    /// `serverInfo`: the server's name and version (not a list, and not part of `all`).
    public static let serverInfo = InventoryParts(rawValue: 1 << 5)
    /// Every list.
    public static let all: InventoryParts = [.sinks, .sinkInputs, .sources, .sourceOutputs, .cards]
}

/// One inventory being collected. Guarded by the mainloop lock: it is filled by list callbacks on the mainloop
/// thread and set up by `requestInventory` with the lock held.
final class InventoryCollector: @unchecked Sendable {
    /// The lists so far.
    var inventory = ServerInventory()
    /// Lists that have not ended yet.
    var pendingLists = 0
    /// The connection that keeps this collector alive until it is complete.
    unowned let connection: PulseConnection
    /// Receives the finished inventory, on the mainloop thread.
    let deliver: @Sendable (ServerInventory) -> Void

    init(connection: PulseConnection, deliver: @escaping @Sendable (ServerInventory) -> Void) {
        self.connection = connection
        self.deliver = deliver
    }

    /// One list ended (well or not); the last one hands the inventory over. Lock held.
    func listEnded() {
        pendingLists -= 1
        guard pendingLists == 0 else { return }
        connection.inventoryCollected(self)
        deliver(inventory)
    }

    /// The collector behind a list callback's userdata, unretained (the connection holds it).
    static func from(_ userdata: UnsafeMutableRawPointer?) -> InventoryCollector? {
        guard let userdata else { return nil }
        return Unmanaged<InventoryCollector>.fromOpaque(userdata).takeUnretainedValue()
    }
}

extension PulseConnection {
    /// Sends a list query for each of `parts` and returns at once; `deliver` receives them all together on the
    /// mainloop thread (with the lock held: it must return quickly) once every list has ended. Queries pending when
    /// the connection fails are cancelled by libpulse, and then `deliver` is never called. Throws when the connection
    /// is not ready or libpulse refused every query.
    public func requestInventory(
        _ parts: InventoryParts = .all, deliver: @escaping @Sendable (ServerInventory) -> Void
    ) throws(PulseError) {
        try withLock { () throws(PulseError) in
            guard let context, pa_context_get_state(context) == PA_CONTEXT_READY else {
                throw PulseError(code: .badState, step: "request inventory")
            }
            let collector = InventoryCollector(connection: self, deliver: deliver)
            let me = Unmanaged.passUnretained(collector).toOpaque()
            // Callbacks cannot run before the lock is released, so the count is complete before any list ends. Each
            // list calls back once per entry, then once with no entry (endOfList 1 at a good end, negative on error).
            var started: [OpaquePointer?] = []
            if parts.contains(.sinks) {
                started.append(pa_context_get_sink_info_list(context, { _, info, _, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    if let info { collector.inventory.sinks.append(SinkSnapshot(info.pointee)) } else { collector.listEnded() }
                }, me))
            }
            if parts.contains(.sinkInputs) {
                started.append(pa_context_get_sink_input_info_list(context, { _, info, _, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    if let info {
                        collector.inventory.sinkInputs.append(SinkInputSnapshot(info.pointee))
                    } else {
                        collector.listEnded()
                    }
                }, me))
            }
            if parts.contains(.sources) {
                started.append(pa_context_get_source_info_list(context, { _, info, _, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    if let info { collector.inventory.sources.append(SourceSnapshot(info.pointee)) } else { collector.listEnded() }
                }, me))
            }
            if parts.contains(.sourceOutputs) {
                started.append(pa_context_get_source_output_info_list(context, { _, info, _, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    if let info {
                        collector.inventory.sourceOutputs.append(SourceOutputSnapshot(info.pointee))
                    } else {
                        collector.listEnded()
                    }
                }, me))
            }
            if parts.contains(.cards) {
                started.append(pa_context_get_card_info_list(context, { _, info, _, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    if let info { collector.inventory.cards.append(CardSnapshot(info.pointee)) } else { collector.listEnded() }
                }, me))
            }
            if parts.contains(.serverInfo) {
                started.append(pa_context_get_server_info(context, { _, info, userdata in
                    guard let collector = InventoryCollector.from(userdata) else { return }
                    collector.inventory.serverInfo = info.map { ServerInfo($0.pointee) }
                    collector.listEnded()
                }, me))
            }
            let sent = started.compactMap { $0 }
            guard !sent.isEmpty || parts.isEmpty else {
                throw PulseError.lastError(of: context, step: "request inventory")
            }
            for operation in sent { release(operation) }
            guard !sent.isEmpty else {
                deliver(ServerInventory())
                return
            }
            collector.pendingLists = sent.count
            inventoryStarted(collector)
        }
    }

    /// Asks the server about itself and returns at once; the answer arrives as the notice `.serverInfoChanged`.
    /// Throws when the connection is not ready.
    public func requestServerInfo() throws(PulseError) {
        try withLock { () throws(PulseError) in
            guard let context, pa_context_get_state(context) == PA_CONTEXT_READY else {
                throw PulseError(code: .badState, step: "request server info")
            }
            askForServerInfo(on: context)
        }
    }
}
