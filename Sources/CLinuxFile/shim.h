#include <sys/types.h>

// sync_file_range(2) is a glibc extension that Swift's Glibc module leaves out (it is declared
// only under _GNU_SOURCE): the declaration glibc's <fcntl.h> has, and the one flag used.
// https://man7.org/linux/man-pages/man2/sync_file_range.2.html
extern int sync_file_range(int fd, __off64_t offset, __off64_t nbytes, unsigned int flags);

// Starts writing back the file's dirty pages, without waiting for them.
static inline int clinuxfile_start_writeback(int fd) {
    return sync_file_range(fd, 0, 0, 2 /* SYNC_FILE_RANGE_WRITE */);
}
