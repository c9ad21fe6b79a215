// The breadth-first search the smaller exhaustive checks share (ExhaustiveLiveRulesTests,
// ExhaustiveServerLinkTests): every node reachable from the starts through an alphabet of events, each transition
// checked by the caller's step.
import EarshotCore

/// What a bounded search met.
struct BoundedSearch {
    /// The distinct nodes reached, the starts included.
    var states = 0
    /// The transitions taken.
    var transitions = 0
    /// The first problems found, each with the event and the node it came from (the search stops after five).
    var violations: [String] = []

    /// Searches from `starts` through `events`. `step` applies one event to one node and returns the node after it
    /// with the problems of that transition, or nil for an event that cannot happen in that node.
    init<Node: Hashable>(from starts: [Node], events: [Event], step: (Node, Event) -> (Node, [String])?) {
        var seen = Set(starts)
        var frontier = starts
        while !frontier.isEmpty && violations.count < 5 {
            var next: [Node] = []
            for node in frontier {
                for event in events {
                    guard let (after, problems) = step(node, event) else { continue }
                    transitions += 1
                    violations += problems.map { "\($0) after \(event) from \(node)" }
                    if seen.insert(after).inserted { next.append(after) }
                }
            }
            frontier = next
        }
        states = seen.count
    }

    /// The violations, each cut to a readable length, one a line.
    var report: String {
        violations.prefix(5).map { String($0.prefix(1_500)) }.joined(separator: "\n")
    }
}
