// MPD's framing on one connection: lines and their limit, command lists, idle, replies. Pure values, no socket.
import Testing
@testable import MPDProtocol

@Suite("MPD framing")
struct MPDFramingTests {
    /// Feeds `text` as one line.
    static func take(_ framing: inout MPDFraming, _ text: String) -> MPDFramed {
        framing.take(Array(text.utf8))
    }

    /// Answers `ping` with nothing, `currentsong` with one line, and refuses anything else as MPD does.
    static func run(_ request: MPDRequest) -> Result<String, MPDError> {
        switch request.name {
        case "ping": return .success("")
        case "currentsong": return .success("file: a.mp3\n")
        default: return .failure(MPDError(.unknown, #"unknown command "\#(request.name)""#))
        }
    }

    @Test("lines split at LF, partial lines wait, a line over the limit is refused")
    func lineBuffer() {
        var buffer = MPDLineBuffer(limit: 8)
        buffer.append(Array("ping\nsta".utf8))
        #expect(buffer.next() == .line(Array("ping".utf8)))
        #expect(buffer.next() == nil)
        buffer.append(Array("tus\r\n\n".utf8))
        #expect(buffer.next() == .line(Array("status\r".utf8)))
        #expect(buffer.next() == .line([]))
        #expect(buffer.next() == nil)
        buffer.append(Array("123456789".utf8))
        #expect(buffer.next() == .tooLong)
        var exact = MPDLineBuffer(limit: 4)
        exact.append(Array("1234\n12345\n".utf8))
        #expect(exact.next() == .line(Array("1234".utf8)))
        #expect(exact.next() == .tooLong)
    }

    @Test("many lines through a small buffer come out whole and in order")
    func lineBufferCompacts() {
        var buffer = MPDLineBuffer(limit: 16)
        var lines: [String] = []
        for number in 0..<1000 {
            buffer.append(Array("line \(number)\n".utf8))
            while case .line(let bytes)? = buffer.next() { lines.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(lines == (0..<1000).map { "line \($0)" })
    }

    @Test("one request runs alone; its error has index 0 and its reply ends with OK")
    func single() {
        var framing = MPDFraming()
        guard case .run(let batch) = Self.take(&framing, "currentsong") else { Issue.record("no batch"); return }
        #expect(batch == MPDBatch(entries: [.success(MPDRequest("currentsong"))], isList: false, listOK: false))
        #expect(batch.reply(running: Self.run) == "file: a.mp3\nOK\n")
        guard case .run(let unknown) = Self.take(&framing, "frobnicate 1") else { Issue.record("no batch"); return }
        #expect(unknown.reply(running: Self.run) == "ACK [5@0] {} unknown command \"frobnicate\"\n")
        guard case .run(let broken) = Self.take(&framing, "add \"open") else { Issue.record("no batch"); return }
        #expect(broken.reply(running: Self.run) == "ACK [2@0] {add} Missing closing '\"'\n")
    }

    @Test("a command list runs at its end; list_OK after each in OK mode; the first error stops it with its index")
    func commandLists() {
        var framing = MPDFraming()
        #expect(Self.take(&framing, "command_list_ok_begin") == .nothing)
        #expect(framing.isBuildingList)
        #expect(Self.take(&framing, "ping") == .nothing)
        #expect(Self.take(&framing, "currentsong") == .nothing)
        guard case .run(let okList) = Self.take(&framing, "command_list_end\r") else { Issue.record("no list"); return }
        #expect(!framing.isBuildingList)
        #expect(okList.reply(running: Self.run) == "list_OK\nfile: a.mp3\nlist_OK\nOK\n")

        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        for line in ["ping", "currentsong", "bogus", "ping"] { #expect(Self.take(&framing, line) == .nothing) }
        guard case .run(let list) = Self.take(&framing, "command_list_end") else { Issue.record("no list"); return }
        #expect(list.reply(running: Self.run) == "file: a.mp3\nACK [5@2] {} unknown command \"bogus\"\n")

        // A line that does not parse fails at its place in the list, not before the list runs.
        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        #expect(Self.take(&framing, "ping") == .nothing)
        #expect(Self.take(&framing, "add \"x") == .nothing)
        guard case .run(let bad) = Self.take(&framing, "command_list_end") else { Issue.record("no list"); return }
        #expect(bad.reply(running: Self.run) == "ACK [2@1] {add} Missing closing '\"'\n")

        // An empty list is just OK; a nested begin is a command like any other inside a list (MPD knows none).
        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        guard case .run(let empty) = Self.take(&framing, "command_list_end") else { Issue.record("no list"); return }
        #expect(empty.reply(running: Self.run) == "OK\n")
        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        guard case .run(let nested) = Self.take(&framing, "command_list_end") else { Issue.record("no list"); return }
        #expect(nested.reply(running: Self.run) == "ACK [5@0] {} unknown command \"command_list_begin\"\n")
    }

    @Test("command_list_end outside a list reaches the commands (which do not know it)")
    func endOutsideList() {
        var framing = MPDFraming()
        guard case .run(let batch) = Self.take(&framing, "command_list_end") else { Issue.record("no batch"); return }
        #expect(batch.reply(running: Self.run) == "ACK [5@0] {} unknown command \"command_list_end\"\n")
    }

    @Test("idle: noidle ends it with OK; any other command closes; noidle when not idling is ignored")
    func idle() {
        var framing = MPDFraming()
        #expect(Self.take(&framing, "noidle") == .nothing)
        framing.idleStarted()
        #expect(framing.isIdling)
        #expect(Self.take(&framing, "noidle") == .endIdle)
        #expect(!framing.isIdling)
        framing.idleStarted()
        framing.idleEnded()
        #expect(Self.take(&framing, "noidle") == .nothing)
        framing.idleStarted()
        #expect(Self.take(&framing, "status") == .close(.commandWhileIdle))
    }

    @Test("a line not starting with a lower-case letter closes the connection (a stray HTTP request, noise)")
    func malformed() {
        var framing = MPDFraming()
        #expect(Self.take(&framing, "GET / HTTP/1.1") == .close(.malformedLine))
        #expect(Self.take(&framing, "") == .close(.malformedLine))
        #expect(Self.take(&framing, " ping") == .close(.malformedLine))
        #expect(framing.take([0xFF, 0x00]) == .close(.malformedLine))
    }

    @Test("a command list over its size limit closes the connection")
    func listLimit() {
        var framing = MPDFraming()
        #expect(Self.take(&framing, "command_list_begin") == .nothing)
        let long = "add " + String(repeating: "x", count: 4000)
        var result = MPDFramed.nothing
        var lines = 0
        while result == .nothing, lines < 1000 {
            result = Self.take(&framing, long)
            lines += 1
        }
        #expect(result == .close(.listTooLarge))
        #expect(lines * 4005 > MPDFraming.listSizeLimit)
    }
}
