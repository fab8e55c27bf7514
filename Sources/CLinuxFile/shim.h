#include <stdint.h>

// sync_file_range(2) is a Linux call that Swift's Glibc module leaves out (glibc declares it only
// under _GNU_SOURCE): declared here as the man page gives it, with the one flag used.
// https://man7.org/linux/man-pages/man2/sync_file_range.2.html
extern int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);

// Starts writing back the file's dirty pages, without waiting for them.
static inline int clinuxfile_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */);
}
