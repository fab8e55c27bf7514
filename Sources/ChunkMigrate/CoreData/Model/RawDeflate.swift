#if canImport(Compression)
import Compression
#elseif canImport(CZlib)
import CZlib
#else
#error("Core Data's model cache needs raw DEFLATE: the Compression framework (Apple platforms) or zlib (CZlib)")
#endif

/// Raw DEFLATE (RFC 1951: no zlib header, no checksum), the compression of a Core Data store's
/// `Z_MODELCACHE.Z_CONTENT`: zlib on Linux, the Compression framework's `COMPRESSION_ZLIB` on
/// Apple platforms, which despite its name encodes raw DEFLATE, the stream zlib's `deflateInit2`
/// makes with a window of -15 bits (Apple's Data Compression overview, on ZLIB:
/// https://developer.apple.com/documentation/compression/data_compression). Every zlib call of the
/// project is in this file.
enum RawDeflate {
    /// What went wrong inflating: the input is not raw DEFLATE, or expands past the limit.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The bytes `input` inflates to.
    ///
    /// - Parameter limit: the most bytes the result may have (a model cache is a few hundred
    ///   kilobytes; a corrupt one must not exhaust memory).
    /// - Throws: ``Failure`` when the input is not a complete raw DEFLATE stream or expands past
    ///   `limit`.
    static func inflate(_ input: [UInt8], limit: Int = 256 << 20) throws -> [UInt8] {
        guard !input.isEmpty else { throw Failure(description: "empty input") }
        #if canImport(Compression)
        // compression_decode_buffer returns the number of bytes written and truncates silently
        // when the buffer is too small, so a result that fills the buffer is decoded again into a
        // larger one; 0 means the input is not valid.
        // https://developer.apple.com/documentation/compression/compression_decode_buffer(_:_:_:_:_:_:)
        var capacity = max(4096, input.count * 8)
        while true {
            var output = [UInt8](repeating: 0, count: capacity)
            let written = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { destination in
                    compression_decode_buffer(destination.baseAddress!, destination.count,
                                              source.baseAddress!, source.count, nil, COMPRESSION_ZLIB)
                }
            }
            guard written > 0 else { throw Failure(description: "not a raw DEFLATE stream") }
            if written < capacity {
                output.removeSubrange(written...)
                return output
            }
            guard capacity < limit else { throw Failure(description: "expands past \(limit) bytes") }
            capacity = min(limit, capacity * 4)
        }
        #else
        var stream = z_stream()
        guard czlib_inflate_init_raw(&stream) == Z_OK else { throw Failure(description: "zlib: inflateInit2 failed") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var input = input
        let status: Int32 = input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = UInt32(source.count)
            while true {
                let result = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                output += chunk[0..<(chunk.count - Int(stream.avail_out))]
                if result != Z_OK || output.count > limit { return result }
                if stream.avail_in == 0 && stream.avail_out != 0 { return Z_BUF_ERROR }
            }
        }
        guard output.count <= limit else { throw Failure(description: "expands past \(limit) bytes") }
        guard status == Z_STREAM_END else {
            throw Failure(description: status == Z_BUF_ERROR ? "the stream ends early" : "not a raw DEFLATE stream (zlib \(status))")
        }
        return output
        #endif
    }

    /// `input` compressed as raw DEFLATE at zlib's default level.
    static func deflate(_ input: [UInt8]) -> [UInt8] {
        guard !input.isEmpty else { return [0x03, 0x00] }   // one empty final block
        #if canImport(Compression)
        // compression_encode_buffer returns 0 when the output does not fit; DEFLATE's stored
        // blocks bound the output at the input plus 5 bytes per 16 KiB block.
        var output = [UInt8](repeating: 0, count: input.count + input.count / 16_000 * 5 + 64)
        let written = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                compression_encode_buffer(destination.baseAddress!, destination.count,
                                          source.baseAddress!, source.count, nil, COMPRESSION_ZLIB)
            }
        }
        precondition(written > 0, "COMPRESSION_ZLIB failed with a buffer of DEFLATE's bound")
        output.removeSubrange(written...)
        return output
        #else
        var stream = z_stream()
        precondition(czlib_deflate_init_raw(&stream, Z_DEFAULT_COMPRESSION) == Z_OK, "zlib: deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))))
        var input = input
        let result: Int32 = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = source.baseAddress
                stream.avail_in = UInt32(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = UInt32(destination.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        precondition(result == Z_STREAM_END, "zlib: deflate with a buffer of deflateBound did not finish (\(result))")
        output.removeSubrange(Int(stream.total_out)...)
        return output
        #endif
    }
}
