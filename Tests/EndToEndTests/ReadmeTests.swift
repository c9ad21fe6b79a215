// The README is the user's door: every verb it shows must be one the binary knows, and its configuration table must
// name exactly the keys the service reads (Config/config.json lists them, and ConfigurationFileTests holds that file
// to the parser's own list). A verb renamed or a key added without the README following fails here.
import EarshotTestSupport
import Foundation
import Testing

@Suite("The README names only what exists")
struct ReadmeTests {
    @Test("every `earshot VERB` in the README is a verb of `earshot --help`")
    func verbsExist() throws {
        // playerctl's `-p earshot` names the player, not a verb.
        let readme = try Self.readme().replacingOccurrences(of: "-p earshot", with: "-p")
        let named = Set(readme.matches(of: /earshot ([a-z][a-z-]*)/).map { String($0.output.1) })
        #expect(named.count >= 10, "the README shows the control verbs: \(named.sorted())")
        let help = try ProcessRunner.run(try TestEnvironment.earshotBinary.path, ["--help"], timeout: .seconds(20))
            .requireSuccess().standardOutput
        let section = help.components(separatedBy: "\nVerbs:\n").last?.components(separatedBy: "\n\n").first ?? ""
        let verbs = Set(section.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .compactMap { $0.split(separator: " ").first.map(String.init) })
        #expect(!verbs.isEmpty, "earshot --help lists its verbs")
        let unknown = named.subtracting(verbs)
        #expect(unknown.isEmpty, "the README names verbs the binary does not have: \(unknown.sorted())")
    }

    @Test("the README's configuration table names exactly the keys of Config/config.json")
    func configurationKeysMatch() throws {
        let readme = try Self.readme()
        let section = try #require(readme.components(separatedBy: "\n## Configuration\n").last?
            .components(separatedBy: "\n## ").first, "the README has a Configuration section")
        let documented = Set(section.matches(of: /\n\| `([A-Za-z]+)` \|/).map { String($0.output.1) })
        let shipped = try Data(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("Config/config.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: shipped) as? [String: Any])
        let keys = Set(object.keys).subtracting(["//"])
        #expect(!keys.isEmpty)
        #expect(documented == keys, """
            README only: \(documented.subtracting(keys).sorted()); config.json only: \(keys.subtracting(documented).sorted())
            """)
    }

    private static func readme() throws -> String {
        try String(contentsOf: TestEnvironment.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    }
}
