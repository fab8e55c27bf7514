#include <zlib.h>

// inflateInit2 and deflateInit2 are macros (they pass the library version and the stream's size),
// which Swift cannot call; these wrappers are the same calls.
static inline int czlib_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

static inline int czlib_deflate_init_raw(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
