// One request line of MPD's protocol split into a command name and its arguments, as MPD's tokenizer splits it:
// a name of ASCII letters, digits and `_` starting with a letter, then arguments separated by blanks, each either
// unquoted (any bytes above space but the two quotes) or double-quoted, where a backslash takes the next byte as it
// is. Pure: bytes in, a request or an `MPDError` out.

/// One parsed request: the command's name and its arguments, unescaped.
public struct MPDRequest: Sendable, Equatable {
    /// The command's name, as sent (MPD's names are case-sensitive and lower case).
    public var name: String
    /// The arguments, quotes removed and escapes resolved.
    public var arguments: [String]

    /// A request for `name` with `arguments`.
    public init(_ name: String, _ arguments: [String] = []) {
        self.name = name
        self.arguments = arguments
    }

    /// The most arguments one request may carry (MPD's own limit).
    public static let argumentLimit = 4096

    /// Splits one line (without its line break) into a request. Trailing blanks and a carriage return are ignored.
    /// Arguments are decoded as UTF-8, invalid bytes replaced (MPD's clients send UTF-8).
    public static func parse<Bytes: Collection<UInt8>>(_ line: Bytes) -> Result<MPDRequest, MPDError> {
        var scanner = Scanner(bytes: Array(line))
        scanner.trimTrailingBlanks()
        scanner.skipBlanks()
        guard !scanner.atEnd else { return .failure(MPDError(.unknown, "No command given")) }
        let name: String
        switch scanner.word() {
        case .failure(let error): return .failure(error)
        case .success(let word): name = word
        }
        var arguments: [String] = []
        while true {
            scanner.skipBlanks()
            if scanner.atEnd { break }
            guard arguments.count < argumentLimit else {
                return .failure(MPDError(.argument, command: name, "Too many arguments"))
            }
            switch scanner.argument() {
            case .failure(let error): return .failure(MPDError(error.code, command: name, error.message))
            case .success(let argument): arguments.append(argument)
            }
        }
        return .success(MPDRequest(name, arguments))
    }

    /// The request as a client would write it: every argument quoted and escaped (a line `parse` gives back as it is).
    public var line: String {
        var text = name
        for argument in arguments { text += " " + MPDRequest.quoted(argument) }
        return text
    }

    /// `text` in double quotes, with `"` and `\` escaped by a backslash.
    public static func quoted(_ text: String) -> String {
        // Scalars, not characters: a quote followed by a combining mark is one Character, and still a quote to MPD.
        var result = String.UnicodeScalarView()
        result.append("\"")
        for scalar in text.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { result.append("\\") }
            result.append(scalar)
        }
        result.append("\"")
        return String(result)
    }
}

/// A cursor over one line's bytes.
private struct Scanner {
    let bytes: [UInt8]
    var position = 0
    var end: Int

    init(bytes: [UInt8]) {
        self.bytes = bytes
        end = bytes.count
    }

    var atEnd: Bool { position >= end }

    static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
    static func isLetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) }
    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    mutating func trimTrailingBlanks() {
        while end > position, Scanner.isBlank(bytes[end - 1]) { end -= 1 }
    }

    mutating func skipBlanks() {
        while !atEnd, Scanner.isBlank(bytes[position]) { position += 1 }
    }

    /// The command's name: a letter, then letters, digits and `_`, up to a blank or the end.
    mutating func word() -> Result<String, MPDError> {
        guard Scanner.isLetter(bytes[position]) else { return .failure(MPDError(.unknown, "Letter expected")) }
        let start = position
        position += 1
        while !atEnd {
            let byte = bytes[position]
            if Scanner.isBlank(byte) { break }
            guard Scanner.isLetter(byte) || Scanner.isDigit(byte) || byte == 0x5F else {
                return .failure(MPDError(.unknown, "Invalid word character"))
            }
            position += 1
        }
        return .success(String(decoding: bytes[start..<position], as: UTF8.self))
    }

    /// One argument, quoted or not, ending at a blank or the end of the line.
    mutating func argument() -> Result<String, MPDError> {
        if bytes[position] == 0x22 { return quotedArgument() }
        let start = position
        while !atEnd, !Scanner.isBlank(bytes[position]) {
            let byte = bytes[position]
            // Bytes at or below space (control characters) and the quotes may not appear unquoted.
            guard byte > 0x20, byte != 0x22, byte != 0x27 else {
                return .failure(MPDError(.argument, "Invalid unquoted character"))
            }
            position += 1
        }
        return .success(String(decoding: bytes[start..<position], as: UTF8.self))
    }

    /// A double-quoted argument: a backslash takes the next byte literally; a blank or the end must follow.
    mutating func quotedArgument() -> Result<String, MPDError> {
        position += 1
        var value: [UInt8] = []
        while true {
            guard !atEnd else { return .failure(MPDError(.argument, "Missing closing '\"'")) }
            var byte = bytes[position]
            if byte == 0x22 { break }
            if byte == 0x5C {
                position += 1
                guard !atEnd else { return .failure(MPDError(.argument, "Missing closing '\"'")) }
                byte = bytes[position]
            }
            value.append(byte)
            position += 1
        }
        position += 1
        guard atEnd || Scanner.isBlank(bytes[position]) else {
            return .failure(MPDError(.argument, "Space expected after closing '\"'"))
        }
        return .success(String(decoding: value, as: UTF8.self))
    }
}
