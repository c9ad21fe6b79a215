// Issue 14: the product imports neither Foundation nor FoundationEssentials, so it neither links nor maps ICU (which
// Foundation's internationalization brings: tens of megabytes of data and several of resident memory) nor carries
// FoundationEssentials (over 1 MiB resident in an idle service, for the little of it the product used). These fail
// when any product target imports either again. scripts/package checks its static build the same way.

import EarshotTestSupport
import Foundation
import Testing

/// What gives ICU away in a library list or a process's memory map (lowercased): ICU itself, as the toolchain
/// ships it or as a system library, and the Foundation libraries that pull it in.
private let icuMarkers = ["_foundationicu", "libicu", "libfoundation.so", "libfoundationinternationalization"]

/// The markers found in `text`, lowercased.
private func icuMarkersFound(in text: String) -> [String] {
    let lowered = text.lowercased()
    return icuMarkers.filter { lowered.contains($0) }
}

@Suite("No ICU in the product", .serialized)
struct LeanBinaryTests {
    /// The binary the tests run: no ICU or full Foundation among the libraries it loads, and no ICU data inside.
    @Test("the earshot binary links no ICU and holds no ICU data")
    func binaryCarriesNoICU() throws {
        let binary = try TestEnvironment.earshotBinary.path
        let libraries = try ProcessRunner.runChecked("ldd", [binary]).standardOutput
        // Not vacuous: ldd listed what the binary does load.
        #expect(libraries.contains("libpulse.so"), "ldd \(binary): \(libraries)")
        #expect(icuMarkersFound(in: libraries).isEmpty, "ldd \(binary): \(libraries)")
        // ICU's data archive is named icudtNN (icudt76_dat in the toolchain's static library).
        let contents = try Data(contentsOf: URL(fileURLWithPath: binary))
        #expect(contents.range(of: Data("icudt".utf8)) == nil, "\(binary) holds ICU's data")
    }

    /// Internet radio's libcurl (and the OpenSSL, Kerberos and LDAP it brings, about 6 MB resident) is loaded when
    /// the first stream plays (Sources/CCurlLoader), never at start.
    @Test("the earshot binary does not link libcurl")
    func binaryLinksNoCurl() throws {
        let binary = try TestEnvironment.earshotBinary.path
        let libraries = try ProcessRunner.runChecked("ldd", [binary]).standardOutput
        #expect(libraries.contains("libpulse.so"), "ldd \(binary): \(libraries)")
        #expect(!libraries.contains("libcurl") && !libraries.contains("libssl"), "ldd \(binary): \(libraries)")
    }

    /// The binary the tests run holds no code of FoundationEssentials or _FoundationCollections, linked in or loaded.
    @Test("the earshot binary holds and links no FoundationEssentials")
    func binaryCarriesNoFoundationEssentials() throws {
        let binary = try TestEnvironment.earshotBinary.path
        let libraries = try ProcessRunner.runChecked("ldd", [binary]).standardOutput
        #expect(libraries.contains("libpulse.so"), "ldd \(binary): \(libraries)")
        #expect(!libraries.lowercased().contains("libfoundation"), "ldd \(binary): \(libraries)")
        // Swift's mangled names carry the module: `$s20FoundationEssentials...` and `$s22_FoundationCollections...`.
        let symbols = try ProcessRunner.runChecked("nm", [binary]).standardOutput
        // Not vacuous: nm read the symbols, the service's own included.
        #expect(symbols.contains("$s14EarshotService"), "nm \(binary) lists no EarshotService symbol")
        let markers = ["$s20FoundationEssentials", "$s22_FoundationCollections"]
        let found = markers.filter { symbols.contains($0) }
        #expect(found.isEmpty, "\(binary) holds symbols of \(found.joined(separator: ", "))")
    }

    /// A running service: nothing loaded later (dlopen) brings ICU in either.
    @Test("a running earshot serve maps no ICU")
    func serviceMapsNoICU() async throws {
        try await ServiceHarness.run { harness in
            let service = try await harness.startService()
            // Through cat: Foundation's file reading stops short on /proc files, which report a size of 0.
            let maps = try ProcessRunner.runChecked("cat", ["/proc/\(service.processIdentifier)/maps"]).standardOutput
            #expect(maps.contains("libpulse.so"), "the service's memory map lists no libpulse: \(maps)")
            #expect(icuMarkersFound(in: maps).isEmpty, "earshot serve maps \(icuMarkersFound(in: maps))")
            #expect(await harness.stopService(service) == 0)
        }
    }
}
