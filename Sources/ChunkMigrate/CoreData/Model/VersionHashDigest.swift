/// SHA-256 and SHA-512 (FIPS 180-4), the digests Core Data computes a model's version hashes
/// with (`CoreDataVersionHashes`): SHA-256 for every property and entity, SHA-512 for
/// `NSStoreModelVersionHashesDigest`.
///
/// A model of a few hundred properties takes thousands of short digests, so each runs over
/// pointers rather than arrays, with masking shifts: unoptimized (the tests), `JournalSHA256`,
/// written for a few fingerprints per job, hashed a macOS Photos model three times slower. Named
/// so that it collides with neither CryptoKit's nor swift-crypto's types.
///
/// ```swift
/// let hash = VersionHashDigest.sha256(Array("abc".utf8))   // 32 bytes
/// ```
enum VersionHashDigest {
    /// The SHA-256 of `message`, 32 bytes.
    static func sha256(_ message: [UInt8]) -> [UInt8] {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
        )
        let padded = pad(message, block: 64, lengthSize: 8)
        let w = UnsafeMutablePointer<UInt32>.allocate(capacity: 64)
        defer { w.deallocate() }
        k256.withUnsafeBufferPointer { k in
            padded.withUnsafeBufferPointer { bytes in
                var start = 0
                while start < bytes.count {
                    for i in 0..<16 {
                        let at = start + 4 * i
                        w[i] = UInt32(bytes[at]) &<< 24 | UInt32(bytes[at + 1]) &<< 16 | UInt32(bytes[at + 2]) &<< 8 | UInt32(bytes[at + 3])
                    }
                    for i in 16..<64 {
                        let x = w[i - 15], y = w[i - 2]
                        let s0 = (x &>> 7 | x &<< 25) ^ (x &>> 18 | x &<< 14) ^ (x &>> 3)
                        let s1 = (y &>> 17 | y &<< 15) ^ (y &>> 19 | y &<< 13) ^ (y &>> 10)
                        w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, h) = state
                    for i in 0..<64 {
                        let s1 = (e &>> 6 | e &<< 26) ^ (e &>> 11 | e &<< 21) ^ (e &>> 25 | e &<< 7)
                        let t1 = h &+ s1 &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
                        let s0 = (a &>> 2 | a &<< 30) ^ (a &>> 13 | a &<< 19) ^ (a &>> 22 | a &<< 10)
                        let t2 = s0 &+ ((a & b) ^ (a & c) ^ (b & c))
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ t2
                    }
                    state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
                    start += 64
                }
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            digest += [
                UInt8(word &>> 24), UInt8(truncatingIfNeeded: word &>> 16), UInt8(truncatingIfNeeded: word &>> 8),
                UInt8(truncatingIfNeeded: word),
            ]
        }
        return digest
    }

    /// The SHA-512 of `message`, 64 bytes.
    static func sha512(_ message: [UInt8]) -> [UInt8] {
        var state: [UInt64] = [
            0x6a09_e667_f3bc_c908, 0xbb67_ae85_84ca_a73b, 0x3c6e_f372_fe94_f82b, 0xa54f_f53a_5f1d_36f1,
            0x510e_527f_ade6_82d1, 0x9b05_688c_2b3e_6c1f, 0x1f83_d9ab_fb41_bd6b, 0x5be0_cd19_137e_2179,
        ]
        let padded = pad(message, block: 128, lengthSize: 16)
        var w = [UInt64](repeating: 0, count: 80)
        for start in stride(from: 0, to: padded.count, by: 128) {
            for i in 0..<16 {
                var word: UInt64 = 0
                for byte in padded[(start + 8 * i)..<(start + 8 * i + 8)] { word = word &<< 8 | UInt64(byte) }
                w[i] = word
            }
            for i in 16..<80 {
                let x = w[i - 15], y = w[i - 2]
                let s0 = (x &>> 1 | x &<< 63) ^ (x &>> 8 | x &<< 56) ^ (x &>> 7)
                let s1 = (y &>> 19 | y &<< 45) ^ (y &>> 61 | y &<< 3) ^ (y &>> 6)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var a = state[0], b = state[1], c = state[2], d = state[3]
            var e = state[4], f = state[5], g = state[6], h = state[7]
            for i in 0..<80 {
                let s1 = (e &>> 14 | e &<< 50) ^ (e &>> 18 | e &<< 46) ^ (e &>> 41 | e &<< 23)
                let t1 = h &+ s1 &+ ((e & f) ^ (~e & g)) &+ k512[i] &+ w[i]
                let s0 = (a &>> 28 | a &<< 36) ^ (a &>> 34 | a &<< 30) ^ (a &>> 39 | a &<< 25)
                let t2 = s0 &+ ((a & b) ^ (a & c) ^ (b & c))
                h = g; g = f; f = e; e = d &+ t1
                d = c; c = b; b = a; a = t1 &+ t2
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
            state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
        }
        return state.flatMap { word in stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: word >> UInt64($0)) } }
    }

    /// `message`, the bit `1`, zeros, and the length in bits in the block's last `lengthSize`
    /// bytes (big-endian; the upper 8 of SHA-512's 16 are zero for any message in memory), to a
    /// whole number of blocks.
    private static func pad(_ message: [UInt8], block: Int, lengthSize: Int) -> [UInt8] {
        var padded = message
        padded.reserveCapacity(message.count + 2 * block)
        padded.append(0x80)
        while padded.count % block != block - lengthSize { padded.append(0) }
        padded += [UInt8](repeating: 0, count: lengthSize - 8)
        let bits = UInt64(message.count) &* 8
        for shift in stride(from: 56, through: 0, by: -8) { padded.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        return padded
    }

    /// SHA-256's round constants: the first 32 bits of SHA-512's (both the fractional parts of the
    /// cube roots of the first primes, FIPS 180-4, 4.2.2 and 4.2.3).
    private static let k256: [UInt32] = k512.prefix(64).map { UInt32(truncatingIfNeeded: $0 >> 32) }

    private static let k512: [UInt64] = [
        0x428a_2f98_d728_ae22, 0x7137_4491_23ef_65cd, 0xb5c0_fbcf_ec4d_3b2f, 0xe9b5_dba5_8189_dbbc, 0x3956_c25b_f348_b538,
        0x59f1_11f1_b605_d019, 0x923f_82a4_af19_4f9b, 0xab1c_5ed5_da6d_8118, 0xd807_aa98_a303_0242, 0x1283_5b01_4570_6fbe,
        0x2431_85be_4ee4_b28c, 0x550c_7dc3_d5ff_b4e2, 0x72be_5d74_f27b_896f, 0x80de_b1fe_3b16_96b1, 0x9bdc_06a7_25c7_1235,
        0xc19b_f174_cf69_2694, 0xe49b_69c1_9ef1_4ad2, 0xefbe_4786_384f_25e3, 0x0fc1_9dc6_8b8c_d5b5, 0x240c_a1cc_77ac_9c65,
        0x2de9_2c6f_592b_0275, 0x4a74_84aa_6ea6_e483, 0x5cb0_a9dc_bd41_fbd4, 0x76f9_88da_8311_53b5, 0x983e_5152_ee66_dfab,
        0xa831_c66d_2db4_3210, 0xb003_27c8_98fb_213f, 0xbf59_7fc7_beef_0ee4, 0xc6e0_0bf3_3da8_8fc2, 0xd5a7_9147_930a_a725,
        0x06ca_6351_e003_826f, 0x1429_2967_0a0e_6e70, 0x27b7_0a85_46d2_2ffc, 0x2e1b_2138_5c26_c926, 0x4d2c_6dfc_5ac4_2aed,
        0x5338_0d13_9d95_b3df, 0x650a_7354_8baf_63de, 0x766a_0abb_3c77_b2a8, 0x81c2_c92e_47ed_aee6, 0x9272_2c85_1482_353b,
        0xa2bf_e8a1_4cf1_0364, 0xa81a_664b_bc42_3001, 0xc24b_8b70_d0f8_9791, 0xc76c_51a3_0654_be30, 0xd192_e819_d6ef_5218,
        0xd699_0624_5565_a910, 0xf40e_3585_5771_202a, 0x106a_a070_32bb_d1b8, 0x19a4_c116_b8d2_d0c8, 0x1e37_6c08_5141_ab53,
        0x2748_774c_df8e_eb99, 0x34b0_bcb5_e19b_48a8, 0x391c_0cb3_c5c9_5a63, 0x4ed8_aa4a_e341_8acb, 0x5b9c_ca4f_7763_e373,
        0x682e_6ff3_d6b2_b8a3, 0x748f_82ee_5def_b2fc, 0x78a5_636f_4317_2f60, 0x84c8_7814_a1f0_ab72, 0x8cc7_0208_1a64_39ec,
        0x90be_fffa_2363_1e28, 0xa450_6ceb_de82_bde9, 0xbef9_a3f7_b2c6_7915, 0xc671_78f2_e372_532b, 0xca27_3ece_ea26_619c,
        0xd186_b8c7_21c0_c207, 0xeada_7dd6_cde0_eb1e, 0xf57d_4f7f_ee6e_d178, 0x06f0_67aa_7217_6fba, 0x0a63_7dc5_a2c8_98a6,
        0x113f_9804_bef9_0dae, 0x1b71_0b35_131c_471b, 0x28db_77f5_2304_7d84, 0x32ca_ab7b_40c7_2493, 0x3c9e_be0a_15c9_bebc,
        0x431d_67c4_9c10_0d4c, 0x4cc5_d4be_cb3e_42b6, 0x597f_299c_fc65_7e2a, 0x5fcb_6fab_3ad6_faec, 0x6c44_198c_4a47_5817,
    ]
}
