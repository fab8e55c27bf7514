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

    /// The most a model cache may inflate to: 16 MiB, 45 times the largest of the fixtures' 136
    /// (macOS 26.1 Photos, 181,587 bytes inflating to 373,744), so that a damaged or hostile one
    /// (a few megabytes of DEFLATE inflate to gigabytes) is refused at an app's launch before it
    /// costs more than a few tens of megabytes.
    static let modelCacheLimit = 16 << 20

    /// The bytes `input` inflates to.
    ///
    /// - Parameter limit: the most bytes the result may have: by default ``modelCacheLimit``.
    /// - Throws: ``Failure`` when the input is not a complete raw DEFLATE stream or expands past
    ///   `limit`.
    static func inflate(_ input: [UInt8], limit: Int = modelCacheLimit) throws -> [UInt8] {
        guard !input.isEmpty else { throw Failure(description: "empty input") }
        #if canImport(Compression)
            // The stream API rather than compression_decode_buffer, whose result is 0 both for an
            // error and for a stream that inflates to nothing, and which does not tell a truncated
            // stream from a complete one.
            // https://developer.apple.com/documentation/compression/compression_stream_process(_:_:)
            return try stream(input, operation: COMPRESSION_STREAM_DECODE, limit: limit)
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
        guard !input.isEmpty else { return [0x03, 0x00] }  // one empty final block
        #if canImport(Compression)
            // The stream API grows the output as it needs: no bound on the compressed size to guess.
            guard let output = try? stream(input, operation: COMPRESSION_STREAM_ENCODE, limit: Int.max) else {
                preconditionFailure("COMPRESSION_ZLIB could not encode \(input.count) bytes")
            }
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

    #if canImport(Compression)
        /// Runs a Compression framework stream with `COMPRESSION_ZLIB` over the whole input, growing
        /// the output 64 KiB at a time.
        ///
        /// - Throws: ``Failure`` when the stream reports an error, when decoding ends with input used
        ///   up but no end of stream (a truncated stream), or past `limit` bytes of output.
        private static func stream(_ input: [UInt8], operation: compression_stream_operation, limit: Int) throws -> [UInt8] {
            let stream = UnsafeMutablePointer<compression_stream>.allocate(capacity: 1)
            defer { stream.deallocate() }
            guard compression_stream_init(stream, operation, COMPRESSION_ZLIB) == COMPRESSION_STATUS_OK else {
                throw Failure(description: "compression_stream_init failed")
            }
            defer { compression_stream_destroy(stream) }
            var output: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            return try input.withUnsafeBufferPointer { source in
                stream.pointee.src_ptr = source.baseAddress!  // never empty: both callers handle empty input first
                stream.pointee.src_size = source.count
                while true {
                    let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer in
                        stream.pointee.dst_ptr = buffer.baseAddress!
                        stream.pointee.dst_size = buffer.count
                        let status = compression_stream_process(stream, Int32(COMPRESSION_STREAM_FINALIZE.rawValue))
                        return (status, buffer.count - stream.pointee.dst_size)
                    }
                    output += chunk[0..<produced]
                    guard output.count <= limit else { throw Failure(description: "expands past \(limit) bytes") }
                    switch status {
                    case COMPRESSION_STATUS_END:
                        return output
                    case COMPRESSION_STATUS_OK where produced == chunk.count:
                        continue  // the output was full: more to come
                    case COMPRESSION_STATUS_OK:
                        throw Failure(description: "the stream ends early")
                    default:
                        throw Failure(description: "not a raw DEFLATE stream")
                    }
                }
            }
        }
    #endif
}
