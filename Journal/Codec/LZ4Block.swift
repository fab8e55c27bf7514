import CLZ4

/// The LZ4 block format, through liblz4. Every `LZ4_*` call of the project is in this file.
enum LZ4Block {
    /// Compresses `input` with `LZ4_compress_default`. The output is deterministic for a given
    /// input and liblz4 version.
    static func compress(_ input: [UInt8]) -> [UInt8] {
        guard !input.isEmpty else { return [] }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let written = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                source.withMemoryRebound(to: CChar.self) { source in
                    destination.withMemoryRebound(to: CChar.self) { destination in
                        LZ4_compress_default(
                            source.baseAddress, destination.baseAddress,
                            Int32(source.count), Int32(destination.count))
                    }
                }
            }
        }
        precondition(written > 0, "LZ4_compress_default failed with a buffer of LZ4_compressBound bytes")
        output.removeSubrange(Int(written)...)
        return output
    }

    /// Decompresses a block that must expand to exactly `rawLength` bytes; `nil` when the block is
    /// malformed or has another length (`LZ4_decompress_safe` never reads or writes out of bounds).
    static func decompress(_ input: ArraySlice<UInt8>, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0, !input.isEmpty, input.count <= Int(Int32.max), rawLength <= Int(Int32.max) else {
            return rawLength == 0 && input.isEmpty ? [] : nil
        }
        var output = [UInt8](repeating: 0, count: rawLength)
        let produced = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                source.withMemoryRebound(to: CChar.self) { source in
                    destination.withMemoryRebound(to: CChar.self) { destination in
                        LZ4_decompress_safe(
                            source.baseAddress, destination.baseAddress,
                            Int32(source.count), Int32(destination.count))
                    }
                }
            }
        }
        return produced == Int32(rawLength) ? output : nil
    }
}
