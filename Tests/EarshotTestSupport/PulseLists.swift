// Waiting list queries for tests: what the server lists now, as a test asks for it between two steps. The product
// never waits for the server (its owner lists with `requestInventory` and takes the answer from its inbox), so these
// live here, built on that same non-blocking request: the list a test reads is the one the player would read.
// Never call them on the mainloop thread (inside a notice handler): the answer is delivered there, so the wait would
// only end by its timeout.
import Foundation
import PulseOutput
import SystemSupport

extension PulseConnection {
    /// Asks the server about itself.
    public func serverInfo() throws(PulseError) -> ServerInfo {
        guard let info = try listed(.serverInfo).serverInfo else {
            throw PulseError(code: .noEntity, step: "get server info")
        }
        return info
    }

    /// Lists the server's sinks.
    public func sinks() throws(PulseError) -> [SinkSnapshot] { try listed(.sinks).sinks }

    /// Lists the server's sink inputs (every client's playback streams, ours included).
    public func sinkInputs() throws(PulseError) -> [SinkInputSnapshot] { try listed(.sinkInputs).sinkInputs }

    /// Lists the server's cards.
    public func cards() throws(PulseError) -> [CardSnapshot] { try listed(.cards).cards }

    /// Lists the server's sources (monitors included).
    public func sources() throws(PulseError) -> [SourceSnapshot] { try listed(.sources).sources }

    /// Lists the server's source outputs (every client's capture streams).
    public func sourceOutputs() throws(PulseError) -> [SourceOutputSnapshot] {
        try listed(.sourceOutputs).sourceOutputs
    }

    /// Asks for `parts` with `requestInventory` and waits up to `timeout` for the answer. A connection that fails
    /// meanwhile never answers (libpulse cancels the queries): that ends as a timeout.
    public func listed(
        _ parts: InventoryParts, timeout: Duration = .seconds(5)
    ) throws(PulseError) -> ServerInventory {
        let answer = LockedValue<ServerInventory?>(nil)
        let answered = DispatchSemaphore(value: 0)
        try requestInventory(parts) { inventory in
            answer.withLock { $0 = inventory }
            answered.signal()
        }
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard answered.wait(timeout: .now() + .milliseconds(milliseconds)) == .success,
              let inventory = answer.withLock({ $0 })
        else { throw PulseError(code: .timeout, step: "list \(parts.rawValue)") }
        return inventory
    }
}
