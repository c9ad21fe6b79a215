// The layering rule of STYLE.md, checked on the sources: only adapter targets import C modules, so the service
// (the serial owner) imports none. A C call the service needs belongs in an adapter with a Swift interface.
import Foundation
import Testing

@Suite("Layering")
struct LayeringTests {
    /// Sources/, found from this file's place in the package.
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // EarshotServiceTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()
        .appendingPathComponent("Sources", isDirectory: true)

    /// The names of the Swift files directly in Sources/`target`.
    static func swiftFiles(of target: String) throws -> [String] {
        let folder = sources.appendingPathComponent(target, isDirectory: true)
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
            .sorted()
    }

    /// The C modules of the package: the targets under Sources/ that hold no Swift file.
    static func cModules() throws -> Set<String> {
        let targets = try FileManager.default.contentsOfDirectory(atPath: sources.path)
        return Set(try targets.filter { try swiftFiles(of: $0).isEmpty })
    }

    /// The modules a Swift file imports, whatever attributes or access level precede `import`.
    static func importedModules(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard let at = words.firstIndex(of: "import"), words[..<at].allSatisfy({ $0.hasPrefix("@") || [
                "public", "package", "internal", "fileprivate", "private",
            ].contains($0) }), at + 1 < words.count else { return nil }
            // `import struct Module.Type` names a kind first; `import Module.Sub` a submodule.
            let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "typealias", "func", "let", "var"]
            let name = kinds.contains(words[at + 1]) && at + 2 < words.count ? words[at + 2] : words[at + 1]
            return String(name.split(separator: ".").first ?? name)
        }
    }

    @Test("the package's C modules are found (the check below would pass vacuously otherwise)")
    func findsCModules() throws {
        let modules = try Self.cModules()
        #expect(modules.isSuperset(of: ["CPulse", "CMPG123", "CSystemd", "CThreadShim", "CMPRISShim"]))
        #expect(!modules.contains("EarshotService"))
    }

    @Test("the import reader sees plain, attributed and scoped imports")
    func readsImports() {
        let text = "import Foundation\n@preconcurrency import CSystemd\n  public import CPulse.shim\nimport struct CMPG123.x"
        #expect(Self.importedModules(text) == ["Foundation", "CSystemd", "CPulse", "CMPG123"])
    }

    @Test("EarshotService imports no C module")
    func serviceImportsNoCModule() throws {
        let cModules = try Self.cModules()
        let folder = Self.sources.appendingPathComponent("EarshotService", isDirectory: true)
        let names = try Self.swiftFiles(of: "EarshotService")
        #expect(!names.isEmpty)
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            let offending = Self.importedModules(text).filter(cModules.contains)
            #expect(offending.isEmpty, "\(name) imports \(offending.joined(separator: ", "))")
        }
    }

    /// The targets linked into `earshot` (Package.swift), whose sources must not import Foundation in any form.
    static let productTargets = [
        "EarshotCore", "TrackPaths", "SystemSupport", "AudioPipeline", "PulseOutput", "EarshotMPRIS",
        "EarshotLogind", "RealtimeScheduling", "EarshotService", "earshot",
    ]

    @Test("no target of the earshot product imports Foundation or FoundationEssentials (issue 14)")
    func productImportsNoFoundation() throws {
        let foundations: Set<String> = ["Foundation", "FoundationEssentials", "FoundationInternationalization"]
        for target in Self.productTargets {
            let folder = Self.sources.appendingPathComponent(target, isDirectory: true)
            let names = try Self.swiftFiles(of: target)
            #expect(!names.isEmpty, "Sources/\(target) holds no Swift file")
            for name in names {
                let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                let offending = Self.importedModules(text).filter(foundations.contains)
                #expect(offending.isEmpty, "\(target)/\(name) imports \(offending.joined(separator: ", "))")
            }
        }
    }
}
