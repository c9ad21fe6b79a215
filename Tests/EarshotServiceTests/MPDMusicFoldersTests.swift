// `listfiles` reads the disk (issue 37): every entry of a music folder's folder but `.` and `..`, files with their
// size, folders, each with its time; links, pipes and names with a line break left out; no `..` above the music
// folders. The comparison with MPD 0.23 itself is in MPDComparisonTests.
import Foundation
import MPDProtocol
import Testing
import TrackPaths
@testable import EarshotClients

@Suite("MPD listfiles")
struct MPDMusicFoldersTests {
    /// Two music folders: the first with a file, a hidden file, a folder, a link, a pipe and a name with a line break;
    /// the second with the same folder, a file of the same name and one of its own.
    static func makeFolders() throws -> (URL, MPDMusicFolders) {
        let top = FileManager.default.temporaryDirectory.appendingPathComponent("listfiles-\(UUID().uuidString)")
        let first = top.appendingPathComponent("first"), second = top.appendingPathComponent("second")
        for folder in [first.appendingPathComponent("sub"), second.appendingPathComponent("sub")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        try Data("abc".utf8).write(to: first.appendingPathComponent("a.mp3"))
        try Data("hidden".utf8).write(to: first.appendingPathComponent(".hidden"))
        try Data("x".utf8).write(to: first.appendingPathComponent("new\nline.mp3"))
        try FileManager.default.createSymbolicLink(atPath: first.appendingPathComponent("link.mp3").path,
                                                   withDestinationPath: "a.mp3")
        #expect(mkfifo(first.appendingPathComponent("pipe").path, 0o600) == 0)
        try Data("longer".utf8).write(to: second.appendingPathComponent("a.mp3"))
        try Data("12345".utf8).write(to: second.appendingPathComponent("b.mp3"))
        try Data("1".utf8).write(to: second.appendingPathComponent("sub/c.mp3"))
        return (top, MPDMusicFolders(roots: [TrackPath(first.path), TrackPath(second.path)]))
    }

    /// The entries of a reply as `KIND NAME [SIZE]`, sorted (the disk's order is its own), every time checked.
    static func entries(_ reply: Result<String, MPDError>) -> [String] {
        guard case .success(let text) = reply else { return ["failed: \(reply)"] }
        var entries: [String] = []
        for line in text.split(separator: "\n") {
            let (key, value) = (line.prefix { $0 != ":" }, line.drop { $0 != ":" }.dropFirst(2))
            switch key {
            case "file", "directory": entries.append("\(key) \(value)")
            case "size": entries[entries.count - 1] += " \(value)"
            case "Last-Modified":
                #expect(value.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/) != nil, "\(value)")
            default: entries.append("unexpected \(line)")
            }
        }
        return entries.sorted()
    }

    @Test("files with their size and folders, a name once across music folders; links, pipes, line breaks left out")
    func listsTheDisk() throws {
        let (top, folders) = try Self.makeFolders()
        defer { try? FileManager.default.removeItem(at: top) }
        let expected = ["directory sub", "file .hidden 6", "file a.mp3 3", "file b.mp3 5"]
        for uri in [nil, "", ".", "sub/..", "./"] {
            #expect(Self.entries(folders.listFiles(uri)) == expected, "\(uri ?? "nil")")
        }
        #expect(Self.entries(folders.listFiles("sub")) == ["file c.mp3 1"])
        #expect(Self.entries(folders.listFiles("sub/")) == ["file c.mp3 1"])
    }

    @Test("a URI outside the music folders is MPD's permission refusal; a missing folder or a file its system error")
    func refusals() throws {
        let (top, folders) = try Self.makeFolders()
        defer { try? FileManager.default.removeItem(at: top) }
        for uri in ["/", "/etc", "..", "../", "sub/../..", "file:///etc", "http://example.com/"] {
            guard case .failure(let error) = folders.listFiles(uri) else {
                Issue.record("\(uri) was listed")
                continue
            }
            #expect(error.code == .permission && error.line == "ACK [4@0] {listfiles} Access denied\n", "\(uri)")
        }
        for uri in ["missing", "a.mp3", "pipe", "link.mp3", "sub/c.mp3/x", "sub\u{0}"] {
            guard case .failure(let error) = folders.listFiles(uri) else {
                Issue.record("\(uri) was listed")
                continue
            }
            #expect(error.code == .system, "\(uri)")
        }
    }
}
