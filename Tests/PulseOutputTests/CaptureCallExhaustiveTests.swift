// A bounded exhaustive check of the translator's capture bookkeeping (issue 20): every sequence, up to a depth, of
// capture new/change/remove notices, a microphone described and removed, our stream gone, and the call timer going off,
// checked against a plain model of what a call is. The depth: five notices hold every shape of a call's life that
// matters here (a capture starts, a second capture of the same application joins, the delay passes, one corks or is
// removed, its source goes) and the interleavings of two applications; each notice but the timer's comes 250 ms after
// the one before, so two of them outlast the 400 ms delay and the timer can go off between any two.
import EarshotCore
import PulseOutput
import Testing

/// What the test knows of the server and of what the translator has said, kept apart from the translator.
private struct Model {
    /// What a capture looks like now.
    enum Shape: CaseIterable {
        case runningOnMicrophone, corkedOnMicrophone, levelMeterOnMicrophone, runningOnUnknownSource
    }

    /// The captures (index -> client, shape) as last described.
    var captures: [UInt32: (client: UInt32, shape: Shape)] = [:]
    /// Since when each capture has been a call without a break.
    var qualifyingSince: [UInt32: Int64] = [:]
    /// Whether the microphone (source 1) is described.
    var microphoneKnown = true
    /// The clients the translator announced and did not yet end.
    var announced: Set<UInt32> = []

    func qualifies(_ index: UInt32) -> Bool {
        guard let capture = captures[index] else { return false }
        return capture.shape == .runningOnMicrophone && microphoneKnown
    }

    mutating func updateQualifying(at time: Int64) {
        for index in captures.keys {
            if qualifies(index) {
                if qualifyingSince[index] == nil { qualifyingSince[index] = time }
            } else {
                qualifyingSince[index] = nil
            }
        }
        for index in qualifyingSince.keys where captures[index] == nil { qualifyingSince[index] = nil }
    }
}

/// One notice of the alphabet.
private enum Notice: CustomStringConvertible {
    case described(index: UInt32, shape: Model.Shape)
    case removed(index: UInt32)
    case microphoneDescribed
    case microphoneRemoved
    case streamGone
    case timerExpired

    var description: String {
        switch self {
        case .described(let index, let shape): return "capture \(index) \(shape)"
        case .removed(let index): return "capture \(index) removed"
        case .microphoneDescribed: return "microphone described"
        case .microphoneRemoved: return "microphone removed"
        case .streamGone: return "stream gone"
        case .timerExpired: return "timer"
        }
    }
}

@Suite("Capture bookkeeping, exhaustively")
struct CaptureCallExhaustiveTests {
    /// Captures 10 and 11 belong to client 7 (one application, two streams), 12 to client 8.
    static let clients: [UInt32: UInt32] = [10: 7, 11: 7, 12: 8]
    static let delay = CallTiming.standard.microphoneProbeMilliseconds
    static let microphone = SourceSnapshot(index: 1, cardIndex: 0)

    fileprivate static var alphabet: [Notice] {
        var notices: [Notice] = []
        for index in clients.keys.sorted() {
            for shape in Model.Shape.allCases { notices.append(.described(index: index, shape: shape)) }
            notices.append(.removed(index: index))
        }
        return notices + [.microphoneDescribed, .microphoneRemoved, .streamGone, .timerExpired]
    }

    fileprivate static func snapshot(_ index: UInt32, _ shape: Model.Shape) -> SourceOutputSnapshot {
        let client = clients[index]!
        switch shape {
        case .runningOnMicrophone:
            return SourceOutputSnapshot(index: index, sourceIndex: 1, mediaRole: nil, clientIndex: client)
        case .corkedOnMicrophone:
            return SourceOutputSnapshot(index: index, sourceIndex: 1, mediaRole: nil, clientIndex: client, corked: true)
        case .levelMeterOnMicrophone:
            return SourceOutputSnapshot(index: index, sourceIndex: 1, mediaRole: nil, isLevelMeter: true,
                                        clientIndex: client)
        case .runningOnUnknownSource:
            return SourceOutputSnapshot(index: index, sourceIndex: 77, mediaRole: nil, clientIndex: client)
        }
    }

    @Test("Any order of capture and source notices and timer expiries keeps the calls true to the captures")
    func everySequenceKeepsTheInvariants() {
        var translator = JudgedTranslator()
        _ = translator.sourceChanged(Self.microphone, at: Moment(milliseconds: 0))
        var sequences = 0
        var violations: [String] = []
        explore(translator, Model(), time: 0, depth: 5, path: [], sequences: &sequences, violations: &violations)
        print("Capture bookkeeping check: \(sequences) notices over \(Self.alphabet.count) kinds, depth 5")
        #expect(violations.isEmpty, "\(violations.prefix(5).joined(separator: "\n"))")
        #expect(sequences > 1_000_000)
    }

    private func explore(
        _ translator: JudgedTranslator, _ model: Model, time: Int64, depth: Int, path: [Notice],
        sequences: inout Int, violations: inout [String]
    ) {
        guard depth > 0, violations.count < 5 else { return }
        for notice in Self.alphabet {
            var translator = translator
            var model = model
            var now = time + 250
            let events: [Event]
            switch notice {
            case .described(let index, let shape):
                model.captures[index] = (Self.clients[index]!, shape)
                events = translator.sourceOutputChanged(Self.snapshot(index, shape), at: Moment(milliseconds: now))
            case .removed(let index):
                model.captures[index] = nil
                events = translator.sourceOutputRemoved(index, at: Moment(milliseconds: now))
            case .microphoneDescribed:
                model.microphoneKnown = true
                events = translator.sourceChanged(Self.microphone, at: Moment(milliseconds: now))
            case .microphoneRemoved:
                model.microphoneKnown = false
                events = translator.sourceRemoved(1, at: Moment(milliseconds: now))
            case .streamGone:
                // The translator forgets the server; the model too (the owner describes it again).
                model.captures = [:]
                model.microphoneKnown = false
                events = translator.ourStreamIsGone(at: Moment(milliseconds: now))
            case .timerExpired:
                // The owner's timer goes off at the deadline; with none armed there is no such notice.
                guard let deadline = translator.deadline else { continue }
                if deadline.milliseconds < time {
                    violations.append("deadline \(deadline) in the past at \(time) after \(path)")
                    continue
                }
                now = deadline.milliseconds
                events = translator.timerExpired(at: deadline)
            }
            sequences += 1
            let before = model
            model.updateQualifying(at: now)
            var problems = check(&model, translator, events, now: now)
            // An end allows a resume only when nothing about the call was lost from sight: none of its captures that
            // counted is still there on a source no longer known.
            for case .interruptionEnded(.microphoneCapture(let client), let resumeAllowed, _) in events {
                let lostSight = before.qualifyingSince.keys.contains { index in
                    Self.clients[index] == client && model.captures[index] != nil && !model.qualifies(index)
                        && model.captures[index]!.shape != .corkedOnMicrophone
                        && model.captures[index]!.shape != .levelMeterOnMicrophone
                }
                // Our stream gone: the calls did not really end, so none resumes.
                let streamGone: Bool
                if case .streamGone = notice { streamGone = true } else { streamGone = false }
                if resumeAllowed == (lostSight || streamGone) {
                    problems.append("resumeAllowed \(resumeAllowed) for \(client)")
                }
            }
            if !problems.isEmpty {
                violations += problems.map { "\($0) after \(path + [notice])" }
                continue
            }
            explore(translator, model, time: now, depth: depth - 1, path: path + [notice], sequences: &sequences,
                    violations: &violations)
        }
    }

    /// Checks what the translator said against the model, and updates the model's record of announced calls.
    private func check(_ model: inout Model, _ translator: JudgedTranslator, _ events: [Event], now: Int64)
        -> [String] {
        var problems: [String] = []
        for event in events {
            switch event {
            case .interruptionBegan(.microphoneCapture(let client), _):
                if !model.announced.insert(client).inserted { problems.append("began twice: \(client)") }
                // Never an excluded kind, never before the delay.
                let ready = model.qualifyingSince.contains { index, since in
                    Self.clients[index] == client && now - since >= Self.delay
                }
                if !ready { problems.append("began with no capture that has run the delay: \(client)") }
            case .interruptionEnded(.microphoneCapture(let client), _, _):
                if model.announced.remove(client) == nil { problems.append("an end without a begin: \(client)") }
            default:
                problems.append("unexpected \(event)")
            }
        }
        // No source active without a capture of it that is a call; every application whose capture has run the delay
        // is active; the translator's own record agrees; the deadline is the next capture's.
        for client in model.announced
        where !model.qualifyingSince.keys.contains(where: { Self.clients[$0] == client }) {
            problems.append("active with no capture running: \(client)")
        }
        for (index, since) in model.qualifyingSince where now - since >= Self.delay {
            if !model.announced.contains(Self.clients[index]!) { problems.append("not counted: capture \(index)") }
        }
        if translator.activeCalls != model.announced { problems.append("activeCalls \(translator.activeCalls)") }
        let waiting = model.qualifyingSince.filter { !model.announced.contains(Self.clients[$0.key]!) }
        let deadline = waiting.values.min().map { Moment(milliseconds: $0 + Self.delay) }
        if translator.deadline != deadline { problems.append("deadline \(String(describing: deadline))") }
        return problems
    }
}
