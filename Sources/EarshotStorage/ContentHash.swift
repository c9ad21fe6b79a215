// ContentHash: SHA-256 (FIPS 180-4), written here from the standard because the product links no crypto library and
// imports neither Foundation nor FoundationEssentials (SystemSupport says why). The cover-art cache names each picture
// by it, so the same picture in many files is stored once, and two different pictures could share a name only by a
// SHA-256 collision.

/// SHA-256 of a byte array.
enum ContentHash {
    /// The round constants: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// The digest of `bytes` as 64 lower-case hexadecimal digits.
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        var state: [UInt32] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
        ]
        // The message, a 1 bit, zeros to 56 bytes modulo 64, then its length in bits (big-endian, 64 bits).
        var tail = Array(bytes[(bytes.count - bytes.count % 64)...]) + [0x80]
        while tail.count % 64 != 56 { tail.append(0) }
        let bitLength = UInt64(bytes.count) &* 8
        tail += (0..<8).map { UInt8(truncatingIfNeeded: bitLength >> (56 - 8 * UInt64($0))) }
        var words = [UInt32](repeating: 0, count: 64)
        bytes.withUnsafeBufferPointer { whole in
            for start in stride(from: 0, to: bytes.count - bytes.count % 64, by: 64) {
                compress(UnsafeBufferPointer(rebasing: whole[start..<start + 64]), &state, &words)
            }
        }
        tail.withUnsafeBufferPointer { padded in
            for start in stride(from: 0, to: padded.count, by: 64) {
                compress(UnsafeBufferPointer(rebasing: padded[start..<start + 64]), &state, &words)
            }
        }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for word in state {
            for shift in stride(from: 28, through: 0, by: -4) { text.append(digits[Int(word >> UInt32(shift) & 0xF)]) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// One 64-byte block into `state`; `words` is scratch space for the message schedule.
    private static func compress(
        _ block: UnsafeBufferPointer<UInt8>, _ state: inout [UInt32], _ words: inout [UInt32]
    ) {
        func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 { value >> count | value << (32 - count) }
        for index in 0..<16 {
            words[index] = UInt32(block[4 * index]) << 24 | UInt32(block[4 * index + 1]) << 16
                | UInt32(block[4 * index + 2]) << 8 | UInt32(block[4 * index + 3])
        }
        for index in 16..<64 {
            let early = words[index - 15]
            let late = words[index - 2]
            let sigma0 = rotate(early, 7) ^ rotate(early, 18) ^ early >> 3
            let sigma1 = rotate(late, 17) ^ rotate(late, 19) ^ late >> 10
            words[index] = words[index - 16] &+ sigma0 &+ words[index - 7] &+ sigma1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for index in 0..<64 {
            let sum1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)
            let choice = (e & f) ^ (~e & g)
            let first = h &+ sum1 &+ choice &+ roundConstants[index] &+ words[index]
            let sum0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let second = sum0 &+ majority
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ first, c, b, a, first &+ second)
        }
        for (index, value) in [a, b, c, d, e, f, g, h].enumerated() { state[index] = state[index] &+ value }
    }
}
