// MPD's request lines split as MPD splits them, and its `ACK` lines: pure functions, tested without a socket.
import Testing
@testable import MPDProtocol

@Suite("MPD request lines")
struct MPDRequestLineTests {
    func parse(_ text: String) -> Result<MPDRequest, MPDError> {
        MPDRequest.parse(Array(text.utf8))
    }

    @Test("a name alone, unquoted and quoted arguments, blanks and a carriage return around them")
    func splits() {
        #expect(parse("status") == .success(MPDRequest("status")))
        #expect(parse("play 3") == .success(MPDRequest("play", ["3"])))
        #expect(parse("  setvol\t50 \r") == .success(MPDRequest("setvol", ["50"])))
        #expect(parse("find artist \"Miles Davis\" album Kind") ==
            .success(MPDRequest("find", ["artist", "Miles Davis", "album", "Kind"])))
        #expect(parse("add \"\"") == .success(MPDRequest("add", [""])))
        #expect(parse("lsinfo Sigur/Rós_(2002).flac") == .success(MPDRequest("lsinfo", ["Sigur/Rós_(2002).flac"])))
        #expect(parse("command_list_ok_begin") == .success(MPDRequest("command_list_ok_begin")))
    }

    @Test("a backslash in quotes takes the next byte as it is; MPD's filter expressions survive")
    func escapes() {
        #expect(parse(#"search "a \"quoted\" \\ word""#) ==
            .success(MPDRequest("search", [#"a "quoted" \ word"#])))
        #expect(parse(#"find "(artist == \"AC/DC\")""#) == .success(MPDRequest("find", [#"(artist == "AC/DC")"#])))
        #expect(parse(#"add "\n""#) == .success(MPDRequest("add", ["n"])))
        // Unquoted, a backslash is an ordinary byte.
        #expect(parse(#"add a\b"#) == .success(MPDRequest("add", [#"a\b"#])))
    }

    @Test("broken quotes, a name that is not a word, quotes inside an unquoted word: MPD's errors")
    func refusals() {
        #expect(parse("") == .failure(MPDError(.unknown, "No command given")))
        #expect(parse("   ") == .failure(MPDError(.unknown, "No command given")))
        #expect(parse("9lives") == .failure(MPDError(.unknown, "Letter expected")))
        #expect(parse("play-now") == .failure(MPDError(.unknown, "Invalid word character")))
        #expect(parse(#"add "open"#) == .failure(MPDError(.argument, command: "add", "Missing closing '\"'")))
        #expect(parse(#"add "open\"#) == .failure(MPDError(.argument, command: "add", "Missing closing '\"'")))
        #expect(parse(#"add "a"b"#) ==
            .failure(MPDError(.argument, command: "add", "Space expected after closing '\"'")))
        #expect(parse(#"add a"b""#) == .failure(MPDError(.argument, command: "add", "Invalid unquoted character")))
        #expect(parse("add it's") == .failure(MPDError(.argument, command: "add", "Invalid unquoted character")))
        #expect(parse("add a\u{1}b") == .failure(MPDError(.argument, command: "add", "Invalid unquoted character")))
    }

    @Test("at most 4096 arguments")
    func argumentLimit() {
        let most = "add" + String(repeating: " x", count: MPDRequest.argumentLimit)
        #expect((try? parse(most).get())?.arguments.count == MPDRequest.argumentLimit)
        #expect(parse(most + " y") == .failure(MPDError(.argument, command: "add", "Too many arguments")))
    }

    @Test("a request written back as a line parses to itself, whatever its arguments hold")
    func roundTrip() {
        let requests = [
            MPDRequest("find", ["artist", "a \"b\" \\ c", "", " ", "tab\there", "Ü"]), MPDRequest("ping"),
            MPDRequest("add", ["'single'"]),
            // Found by scripts/fuzz: a quote or backslash with a combining mark after it is one Character in Swift.
            MPDRequest("add", ["\"\u{0733}x\\\u{0301}"]), MPDRequest("add", ["\0\u{1}\r\n"]),
        ]
        for request in requests {
            #expect(parse(request.line) == .success(request), "\(request.line)")
        }
    }

    @Test("ACK lines: code, index, command, one line of message")
    func ackLines() {
        #expect(MPDError(.unknown, #"unknown command "foo""#).line == "ACK [5@0] {} unknown command \"foo\"\n")
        #expect(MPDError(.noExist, command: "play", "No such song").at(index: 3).line ==
            "ACK [50@3] {play} No such song\n")
        #expect(MPDError(.system, command: "update", "two\nlines").line == "ACK [52@0] {update} two lines\n")
        #expect(MPDError(.system, command: "update", "CR\r\nLF").line == "ACK [52@0] {update} CR  LF\n")
        #expect(MPDErrorCode.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 50, 51, 52, 53, 54, 55, 56])
    }
}
