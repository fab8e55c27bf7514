#if canImport(Compression)
    import Compression
#elseif canImport(CLZ4)
    import CLZ4
#else
    #error("the journal needs an LZ4 block codec: the Compression framework (Apple platforms) or liblz4 (CLZ4)")
#endif

/// The LZ4 block format: liblz4 on Linux, the Compression framework's `COMPRESSION_LZ4_RAW` on
/// Apple platforms. Every LZ4 call of the project is in this file.
///
/// The block is the bare LZ4 block format (no frame, no size prefix, no checksum); the decoded
/// size is not in the block, it is the segment header's `rawLength`. Both encoders make valid
/// blocks and both decoders read any valid block, so a journal written on one platform reads on
/// the other; the encoders need not make the same bytes for the same input (FORMAT.md, Encodings).
enum LZ4Block {
    /// The block for `input`, or `nil` when the encoder could not make one (the caller then stores
    /// the input uncompressed). Deterministic for a given input and encoder (liblz4 version, or
    /// Compression framework of one OS release).
    static func compress(_ input: [UInt8]) -> [UInt8]? {
        guard !input.isEmpty, input.count <= Int(Int32.max) / 2 else { return nil }
        #if canImport(Compression)
            // compression_encode_buffer returns the number of bytes written to the destination, and 0
            // when the output does not fit (its decode counterpart's page notes that truncating
            // instead "differs from that of compression_encode_buffer"). Apple documents no
            // worst-case output size for LZ4_RAW, so the buffer gets LZ4's own bound plus a margin,
            // and a 0 falls back to the uncompressed varints, which is a valid segment too.
            // https://developer.apple.com/documentation/compression/compression_encode_buffer(_:_:_:_:_:_:)
            // https://developer.apple.com/documentation/compression/compression_lz4_raw
            var output = [UInt8](repeating: 0, count: input.count + input.count / 255 + 16 + 1024)
            let written = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { destination in
                    compression_encode_buffer(
                        destination.baseAddress!, destination.count,
                        source.baseAddress!, source.count,
                        nil, COMPRESSION_LZ4_RAW)
                }
            }
            guard written > 0 else { return nil }
        #else
            let bound = Int(LZ4_compressBound(Int32(input.count)))
            var output = [UInt8](repeating: 0, count: bound)
            let written = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { destination in
                    source.withMemoryRebound(to: CChar.self) { source in
                        destination.withMemoryRebound(to: CChar.self) { destination in
                            Int(
                                LZ4_compress_default(
                                    source.baseAddress, destination.baseAddress,
                                    Int32(source.count), Int32(destination.count)))
                        }
                    }
                }
            }
            precondition(written > 0, "LZ4_compress_default failed with a buffer of LZ4_compressBound bytes")
        #endif
        output.removeSubrange(written...)
        return output
    }

    /// Decompresses a block that must expand to exactly `rawLength` bytes; `nil` when the block is
    /// malformed or expands to another length. Neither decoder reads or writes out of bounds.
    static func decompress(_ input: ArraySlice<UInt8>, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0, !input.isEmpty, input.count <= Int(Int32.max), rawLength < Int(Int32.max) else {
            return rawLength == 0 && input.isEmpty ? [] : nil
        }
        #if canImport(Compression)
            // compression_decode_buffer returns the bytes written, 0 on an error, and when the output
            // does not fit it "writes the first dst_size bytes to the buffer and returns dst_size"
            // without an error. So the buffer has one byte more than `rawLength`: a block that
            // expands to more fills it and is refused, as LZ4_decompress_safe refuses it on Linux.
            // https://developer.apple.com/documentation/compression/compression_decode_buffer(_:_:_:_:_:_:)
            var output = [UInt8](repeating: 0, count: rawLength + 1)
            let produced = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { destination in
                    compression_decode_buffer(
                        destination.baseAddress!, destination.count,
                        source.baseAddress!, source.count,
                        nil, COMPRESSION_LZ4_RAW)
                }
            }
            guard produced == rawLength else { return nil }
            output.removeLast()
            return output
        #else
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
        #endif
    }
}
