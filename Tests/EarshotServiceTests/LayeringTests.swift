// The layering rules of STYLE.md, checked on the sources: only adapter targets import C modules, so the service
// (the serial owner) imports none; a C call the service needs belongs in an adapter with a Swift interface. And the
// owner imports nothing that may wait (issue 21): not its clients' target, not its storage's, only the modules listed
// in `ownerModules`, in its sources and in Package.swift alike; what may wait reaches it through the interfaces it
// defines (OwnerInterfaces.swift), wired in by the `earshot` executable.
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
        "EarshotLogind", "EarshotIdleInhibitor", "RealtimeScheduling", "EarshotService", "EarshotJSON", "EarshotClients",
        "EarshotStorage", "MusicLibrary", "MPDProtocol",
        "earshot",
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

    /// What the owner (EarshotService) may import: modules that hand over and return, and the rulebook. Anything else
    /// is a decision to make here, with a reason. Dispatch: the owner's thread sleeps on its own semaphore between
    /// jobs (`OwnerThread`), and `PlayerOwner.run`'s caller waits for the owner to end. EarshotMPRIS: the owner only
    /// publishes through `MPRISPublishing`, whose calls queue for the bus thread. PulseOutput: the stream's commands
    /// are sent, never waited for (their acknowledgements come back as notices).
    static let ownerModules: Set<String> = [
        "EarshotCore", "TrackPaths", "SystemSupport", "AudioPipeline", "PulseOutput", "EarshotMPRIS",
        "RealtimeScheduling", "EarshotJSON", "Glibc", "Dispatch", "Synchronization",
    ]

    /// The targets whose threads may wait (for a client, for the disk, for the library's database): never the owner's
    /// dependencies.
    static let waitingTargets: Set<String> = ["EarshotClients", "EarshotStorage", "MusicLibrary"]

    /// The waiting targets that serve the owner and so depend on it (the library is an adapter below it instead).
    static let ownersHelpers = ["EarshotClients", "EarshotStorage"]

    /// The dependencies Package.swift's `package` text gives the target named `target` (the names in the bracket
    /// after its `name:`).
    static func dependencies(of target: String, inPackage text: String) -> [String]? {
        guard let named = text.range(of: "name: \"\(target)\""),
              let open = text[named.upperBound...].range(of: "dependencies: ["),
              let close = text[open.upperBound...].firstIndex(of: "]") else { return nil }
        // Only this target's own bracket: a target without dependencies would otherwise take the next one's.
        guard !text[named.upperBound..<open.lowerBound].contains(".target(") else { return [] }
        return text[open.upperBound..<close].split(separator: ",").compactMap { entry in
            let name = entry.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: ["\""])
            return name.isEmpty ? nil : name
        }
    }

    /// Why the imports of owner files (name and text) break the owner's rule, one line each; empty when they keep it.
    static func ownerImportViolations(_ files: [(name: String, text: String)]) -> [String] {
        files.flatMap { file in
            importedModules(file.text).filter { !ownerModules.contains($0) || waitingTargets.contains($0) }
                .map { "\(file.name) imports \($0)" }
        }
    }

    @Test("the owner's rule sees an added import and an added dependency (it would pass vacuously otherwise)")
    func ownerRuleSeesViolations() throws {
        let added = "import EarshotCore\nimport EarshotStorage\n@preconcurrency import EarshotClients\n"
            + "import Foundation"
        #expect(Self.ownerImportViolations([("Player.swift", added)]) == [
            "Player.swift imports EarshotStorage", "Player.swift imports EarshotClients",
            "Player.swift imports Foundation",
        ])
        let package = """
            .target(name: "EarshotJSON"),
            .target(
                name: "EarshotService",
                dependencies: ["EarshotCore", "EarshotStorage"]
            ),
            """
        #expect(Self.dependencies(of: "EarshotService", inPackage: package) == ["EarshotCore", "EarshotStorage"])
        #expect(Self.dependencies(of: "EarshotJSON", inPackage: package) == [])
    }

    @Test("the owner (EarshotService) imports neither its clients nor its storage, nor any module not listed")
    func ownerImportsNothingThatWaits() throws {
        let folder = Self.sources.appendingPathComponent("EarshotService", isDirectory: true)
        let names = try Self.swiftFiles(of: "EarshotService")
        #expect(names.contains("Player.swift"))
        let files = try names.map { name in
            (name: name, text: try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))
        }
        let violations = Self.ownerImportViolations(files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "; "))")

        let packageFile = Self.sources.deletingLastPathComponent().appendingPathComponent("Package.swift")
        let package = try String(contentsOf: packageFile, encoding: .utf8)
        let dependencies = try #require(Self.dependencies(of: "EarshotService", inPackage: package))
        #expect(dependencies.contains("EarshotCore"), "Package.swift's EarshotService target not read: \(dependencies)")
        let offending = dependencies.filter { !Self.ownerModules.contains($0) || Self.waitingTargets.contains($0) }
        #expect(offending.isEmpty, "Package.swift: EarshotService depends on \(offending.joined(separator: ", "))")
        // The other way round is the point: the clients and the storage depend on the owner.
        for target in Self.ownersHelpers {
            #expect(Self.dependencies(of: target, inPackage: package)?.contains("EarshotService") == true, "\(target)")
        }
    }

    @Test("only the library imports SQLite; the library is an adapter: it imports neither the owner nor its clients")
    func libraryIsAnAdapter() throws {
        for target in try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).sorted() {
            let folder = Self.sources.appendingPathComponent(target, isDirectory: true)
            for name in try Self.swiftFiles(of: target) {
                let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
                let modules = Self.importedModules(text)
                if modules.contains("CSQLite") {
                    #expect(target == "MusicLibrary", "\(target)/\(name) imports CSQLite")
                }
                if target == "MusicLibrary" {
                    let offending = modules.filter {
                        ["EarshotService", "EarshotClients", "EarshotStorage", "Foundation"].contains($0)
                    }
                    #expect(offending.isEmpty, "MusicLibrary/\(name) imports \(offending.joined(separator: ", "))")
                }
            }
        }
        let packageFile = Self.sources.deletingLastPathComponent().appendingPathComponent("Package.swift")
        let package = try String(contentsOf: packageFile, encoding: .utf8)
        #expect(Self.dependencies(of: "MusicLibrary", inPackage: package)?.contains("CSQLite") == true)
        #expect(Self.dependencies(of: "EarshotService", inPackage: package)?.contains("MusicLibrary") == false)
    }

    @Test("MPD's protocol parser is pure: it imports nothing (no socket, no thread, no owner), so it can be fuzzed")
    func mpdProtocolIsPure() throws {
        let folder = Self.sources.appendingPathComponent("MPDProtocol", isDirectory: true)
        let names = try Self.swiftFiles(of: "MPDProtocol")
        #expect(!names.isEmpty, "Sources/MPDProtocol holds no Swift file")
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            let modules = Self.importedModules(text)
            #expect(modules.isEmpty, "MPDProtocol/\(name) imports \(modules.joined(separator: ", "))")
        }
        let packageFile = Self.sources.deletingLastPathComponent().appendingPathComponent("Package.swift")
        let package = try String(contentsOf: packageFile, encoding: .utf8)
        #expect(Self.dependencies(of: "MPDProtocol", inPackage: package) == [])
    }

    @Test("the owner writes nothing to standard error itself: lines and messages go through the log's queue")
    func ownerNeverWritesStandardError() throws {
        let folder = Self.sources.appendingPathComponent("EarshotService", isDirectory: true)
        for name in try Self.swiftFiles(of: "EarshotService") {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(!text.contains("StandardStream.writeError"), "\(name) writes to standard error on the owner")
        }
    }
}
