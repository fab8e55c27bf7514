/*
 * lossyfs: a pass-through FUSE file system that can forget, on command, what a disk would forget
 * in a power cut, and can fail writes and syncs the way a failing disk does. It exists to test that
 * chunkmigrate's store, journal and segments survive a power cut at any moment.
 *
 *   lossyfs BACKING MOUNTPOINT [--control NAME] [-f] [-o OPTION]...
 *   echo COMMAND > MOUNTPOINT/.lossyfs-control      (the name is NAME with --control)
 *   cat MOUNTPOINT/.lossyfs-control                 (state, what is not yet durable, armed faults)
 *   fusermount3 -u MOUNTPOINT
 *
 * Without -f it returns once mounted and serves in the background; with -f it stays in the
 * foreground, and a test that remounts the same BACKING should wait for it to exit after unmounting.
 *
 * The model. Every operation reaches BACKING at once, so reads see the latest state, as they would
 * through a page cache; what is not yet durable is kept as what it would take to undo it.
 *   - File data. Each write and truncate of a file since its last fsync or fdatasync is kept on that
 *     file's inode with the bytes it replaced (and, for a write, the bytes it wrote). A successful
 *     fsync makes them durable. A failed fsync makes them lost: reads still see them, as they see
 *     clean pages that Linux keeps after a failed writeback, but no later fsync stores them.
 *   - Names. A directory's entries are durable as of its last fsync (FUSE fsyncdir). At the first
 *     change to a directory after that, its listing (name -> inode) is copied, and each create,
 *     mkdir, symlink, unlink, rmdir and rename is logged as an operation on the copy; fsync of the
 *     directory drops both. A file's own fsync does not make its name durable, nor does the fsync of
 *     another directory. A rename between two directories is two operations, one on each: a file
 *     that both directories still list after a cut has two names; a directory is placed once.
 *     Unlinked files, removed directories and replaced rename targets are kept under
 *     BACKING/.lossyfs-trash (hidden from the mount) so that a cut can bring them back.
 * chmod, chown and utimens are passed through and count as durable at once (a file a cut restores
 * gets the cut's time as its mtime); link, fallocate and extended attributes are not provided (the
 * kernel reports them as unsupported). BACKING must be one file system: undo relies on rename and
 * link within it.
 *
 * Commands, one per write to the control file:
 *   cut              power loss: every change not yet durable is undone in BACKING; after it every
 *                    operation fails with EIO until the file system is unmounted.
 *   cut-random SEED  power loss where the disk had written part of it: each unsynced write is kept
 *                    whole, dropped, or torn at 512-byte sectors (each sector kept or not), each
 *                    unsynced truncate and name operation is kept or dropped, all at random from SEED.
 *                    Kept writes are applied in order, so a sector ends with any one of its versions,
 *                    which is what reordered writeback leaves.
 *   fail-write N eio|enospc   the Nth write call from now (1 = the next one) fails with that errno
 *                    and changes nothing. Pages of a shared mmap (SQLite's -shm) count as writes.
 *   fail-sync N eio|enospc    the Nth file fsync or fdatasync from now fails, and the file's unsynced
 *                    data is lost as described above. Directory syncs are not counted.
 *   clear            disarm both faults.
 * After a cut, BACKING holds what the disk would hold: unmount (fusermount3 -u; `mountpoint` fails
 * then, as stat of the mount gets EIO) and mount it again to look.
 * The file system runs single-threaded (-s), which is all the locking it needs. What is not yet
 * durable is held in memory, about twice the bytes written since the last fsync (and, for a file
 * whose fsync failed, since that failure, until the cut or the unmount).
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TRASH ".lossyfs-trash"
#define SECTOR 512

enum { PENDING, SYNCED, LOST };

struct change {                 /* one write or truncate of a file since its last fsync */
    struct change *prev, *next;
    int state, is_write;
    off_t off;                  /* write: where it starts; truncate: the new size */
    size_t len;                 /* write: its length */
    char *data;                 /* write: the bytes written */
    off_t old_size;             /* the file's size before */
    off_t old_off;              /* the bytes it replaced, which lie below old_size */
    size_t old_len;
    char *old;
};

struct file {                   /* a file with changes that are not yet durable */
    struct file *next;
    ino_t ino;
    int fd;                     /* our own handle on the inode: it outlives close and unlink */
    struct change *first, *last;
};

struct entry { char *name; ino_t ino; int is_dir; };
struct listing { struct entry *v; int n, cap; };
struct dir_op { struct entry set[2]; int n; };   /* up to two names set; ino 0 removes a name */

struct dir {                    /* a directory with name changes that are not yet durable */
    struct dir *next;
    ino_t ino;
    struct listing durable;     /* its entries as of its last fsync */
    struct dir_op *ops;
    int nops, cap;
};

static char backing[PATH_MAX], trash[PATH_MAX], control[NAME_MAX + 2] = "/.lossyfs-control";
static struct file *files;
static struct dir *dirs;
static int is_cut;
static long fail_write_n, fail_sync_n;
static int fail_write_err, fail_sync_err;
static uint64_t rng;

static int coin(int sides)      /* splitmix64, so that a seed always gives the same cut */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (int)((z ^ (z >> 31)) % (uint64_t)sides);
}

static void bpath(char *out, const char *path) { snprintf(out, PATH_MAX, "%s%s", backing, path); }
static void trash_path(char *out, ino_t ino) { snprintf(out, PATH_MAX, "%s/i%lu", trash, (unsigned long)ino); }
static int hidden(const char *p) { return !strncmp(p, "/" TRASH, sizeof TRASH) && (!p[sizeof TRASH] || p[sizeof TRASH] == '/'); }

/* Splits "/a/b/name" into the backing path of "/a/b" and "name". */
static const char *split(const char *path, char *parent)
{
    const char *slash = strrchr(path, '/');
    snprintf(parent, PATH_MAX, "%s%.*s", backing, (int)(slash - path), path);
    return slash + 1;
}

/* ---- names ---- */

static void listing_set(struct listing *l, const char *name, ino_t ino, int is_dir)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name)) {
            if (ino) { l->v[i].ino = ino; l->v[i].is_dir = is_dir; return; }
            free(l->v[i].name);
            l->v[i] = l->v[--l->n];
            return;
        }
    if (!ino) return;
    if (l->n == l->cap) l->v = realloc(l->v, sizeof *l->v * (l->cap = l->cap * 2 + 8));
    l->v[l->n++] = (struct entry){ strdup(name), ino, is_dir };
}

static void listing_free(struct listing *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i].name);
    free(l->v);
    *l = (struct listing){ 0 };
}

static int read_listing(const char *bp, struct listing *l)
{
    DIR *d = opendir(bp);
    if (!d) return -errno;
    int top = !strcmp(bp, backing) || !strcmp(bp + strlen(backing), "/");
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (top && !strcmp(e->d_name, TRASH))) continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            listing_set(l, e->d_name, st.st_ino, S_ISDIR(st.st_mode));
    }
    closedir(d);
    return 0;
}

static struct dir *dir_find(ino_t ino)
{
    for (struct dir *d = dirs; d; d = d->next) if (d->ino == ino) return d;
    return NULL;
}

/* The record of the directory at backing path bp, copying its listing if it has none yet. */
static struct dir *dir_at(const char *bp)
{
    struct stat st;
    if (lstat(bp, &st) != 0) return NULL;
    struct dir *d = dir_find(st.st_ino);
    if (d) return d;
    d = calloc(1, sizeof *d);
    d->ino = st.st_ino;
    read_listing(bp, &d->durable);
    d->next = dirs;
    return dirs = d;
}

static void dir_log(struct dir *d, const char *name, ino_t ino, int is_dir, const char *name2, ino_t ino2, int is_dir2)
{
    if (!d) return;
    if (d->nops == d->cap) d->ops = realloc(d->ops, sizeof *d->ops * (d->cap = d->cap * 2 + 8));
    struct dir_op *op = &d->ops[d->nops++];
    op->n = name2 ? 2 : 1;
    op->set[0] = (struct entry){ strdup(name), ino, is_dir };
    if (name2) op->set[1] = (struct entry){ strdup(name2), ino2, is_dir2 };
}

static void dir_free(struct dir *d)
{
    for (int i = 0; i < d->nops; i++)
        for (int j = 0; j < d->ops[i].n; j++) free(d->ops[i].set[j].name);
    free(d->ops);
    listing_free(&d->durable);
    free(d);
}

static void dir_synced(ino_t ino)
{
    for (struct dir **p = &dirs; *p; p = &(*p)->next)
        if ((*p)->ino == ino) { struct dir *d = *p; *p = d->next; dir_free(d); return; }
}

/* Keeps the inode at bp, whose name goes away, in the trash as i<ino>. */
static int stash(const char *bp, const struct stat *st)
{
    char t[PATH_MAX];
    trash_path(t, st->st_ino);
    if (S_ISDIR(st->st_mode)) return rename(bp, t) ? -errno : 0;
    if (link(bp, t) != 0 && errno != EEXIST) return -errno;
    return unlink(bp) ? -errno : 0;
}

static int dir_is_empty(const char *bp)
{
    struct listing l = { 0 };
    int err = read_listing(bp, &l), empty = l.n == 0;
    listing_free(&l);
    return err ? err : empty ? 0 : -ENOTEMPTY;
}

/* ---- file data ---- */

static struct file *file_find(ino_t ino)
{
    for (struct file *f = files; f; f = f->next) if (f->ino == ino) return f;
    return NULL;
}

static void file_free(struct file *f)
{
    for (struct change *c = f->first, *n; c; c = n) { n = c->next; free(c->data); free(c->old); free(c); }
    close(f->fd);
    free(f);
}

/* Records a write (buf != NULL) or a truncate to off, before fd's file is changed. */
static int record(int fd, off_t off, size_t len, const char *buf)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return -errno;
    struct file *f = file_find(st.st_ino);
    if (!f) {
        f = calloc(1, sizeof *f);
        f->ino = st.st_ino;
        f->fd = dup(fd);
        f->next = files;
        files = f;
    }
    struct change *c = calloc(1, sizeof *c);
    c->is_write = buf != NULL;
    c->off = off;
    c->len = len;
    c->old_size = st.st_size;
    c->old_off = off;
    off_t end = buf ? off + (off_t)len : st.st_size;
    if (end > st.st_size) end = st.st_size;
    c->old_len = end > off ? (size_t)(end - off) : 0;
    c->old = malloc(c->old_len + 1);
    if (pread(f->fd, c->old, c->old_len, off) != (ssize_t)c->old_len) { free(c->old); free(c); return -EIO; }
    if (buf) memcpy(c->data = malloc(len), buf, len);
    c->prev = f->last;
    if (f->last) f->last->next = c; else f->first = c;
    f->last = c;
    return 0;
}

static void file_synced(ino_t ino, int failed)
{
    struct file *f = file_find(ino);
    if (!f) return;
    int lost = 0;
    for (struct change *c = f->first; c; c = c->next) {
        if (c->state == PENDING) c->state = failed ? LOST : SYNCED;
        lost |= c->state == LOST;
    }
    if (lost) return;           /* the undo records are still needed to take the lost data out */
    for (struct file **p = &files; *p; p = &(*p)->next)
        if (*p == f) { *p = f->next; break; }
    file_free(f);
}

/* Puts back the file's durable state, plus a random part of its pending changes when random. */
static void settle(struct file *f, int random)
{
    for (struct change *c = f->last; c; c = c->prev) {
        if (ftruncate(f->fd, c->old_size) != 0 || pwrite(f->fd, c->old, c->old_len, c->old_off) < 0)
            perror("lossyfs: undo");
    }
    for (struct change *c = f->first; c; c = c->next) {
        int how = c->state == SYNCED ? 1 : c->state == PENDING && random ? coin(c->is_write ? 3 : 2) : 0;
        if (!how) continue;
        if (!c->is_write) { if (ftruncate(f->fd, c->off)) perror("lossyfs: redo"); continue; }
        for (off_t s = c->off / SECTOR * SECTOR; s < c->off + (off_t)c->len; s += SECTOR) {
            off_t lo = s > c->off ? s : c->off, hi = s + SECTOR < c->off + (off_t)c->len ? s + SECTOR : c->off + (off_t)c->len;
            if ((how == 1 || coin(2)) && pwrite(f->fd, c->data + (lo - c->off), hi - lo, lo) < 0) perror("lossyfs: redo");
        }
    }
}

/* ---- the power cut ---- */

/* Moves every inode under bp to trash/i<ino>, recording each directory's listing first. */
static void flatten(const char *bp)
{
    struct listing cur = { 0 };
    char child[PATH_MAX], t[PATH_MAX];
    dir_at(bp);
    read_listing(bp, &cur);
    for (int i = 0; i < cur.n; i++) {
        snprintf(child, sizeof child, "%s/%s", bp, cur.v[i].name);
        trash_path(t, cur.v[i].ino);
        if (cur.v[i].is_dir) { flatten(child); rename(child, t); }
        else { link(child, t); unlink(child); }
    }
    listing_free(&cur);
}

/* Lays out, under bp, the directory ino as it would be found after the cut. */
static void rebuild(const char *bp, ino_t ino)
{
    struct dir *d = dir_find(ino);
    char child[PATH_MAX], t[PATH_MAX];
    for (int i = 0; d && i < d->durable.n; i++) {
        struct entry *e = &d->durable.v[i];
        snprintf(child, sizeof child, "%s/%s", bp, e->name);
        trash_path(t, e->ino);
        if (!e->is_dir) link(t, child);
        else if (rename(t, child) == 0) rebuild(child, e->ino);   /* a directory already placed is not placed twice */
    }
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(p);
}

static void cut(int random)
{
    for (struct file *f = files; f; f = f->next) settle(f, random);
    flatten(backing);
    for (struct dir *d = dirs; random && d; d = d->next)
        for (int i = 0; i < d->nops; i++)
            if (coin(2))
                for (int j = 0; j < d->ops[i].n; j++)
                    listing_set(&d->durable, d->ops[i].set[j].name, d->ops[i].set[j].ino, d->ops[i].set[j].is_dir);
    struct stat st;
    lstat(backing, &st);
    rebuild(backing, st.st_ino);
    nftw(trash, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    while (files) { struct file *f = files; files = f->next; file_free(f); }
    while (dirs) { struct dir *d = dirs; dirs = d->next; dir_free(d); }
    is_cut = 1;
}

/* ---- the control file ---- */

static int errno_named(const char *s) { return !strcmp(s, "eio") ? EIO : !strcmp(s, "enospc") ? ENOSPC : 0; }

static int command(const char *buf, size_t size)
{
    char line[128], err[16];
    unsigned long long seed;
    long n;
    snprintf(line, sizeof line, "%.*s", (int)(size < sizeof line - 1 ? size : sizeof line - 1), buf);
    line[strcspn(line, "\r\n")] = 0;
    if (is_cut) return -EIO;
    if (!strcmp(line, "cut")) cut(0);
    else if (sscanf(line, "cut-random %llu", &seed) == 1) { rng = seed; cut(1); }
    else if (sscanf(line, "fail-write %ld %15s", &n, err) == 2 && n > 0 && errno_named(err)) { fail_write_n = n; fail_write_err = errno_named(err); }
    else if (sscanf(line, "fail-sync %ld %15s", &n, err) == 2 && n > 0 && errno_named(err)) { fail_sync_n = n; fail_sync_err = errno_named(err); }
    else if (!strcmp(line, "clear")) fail_write_n = fail_sync_n = 0;
    else { fprintf(stderr, "lossyfs: unknown command '%s'\n", line); return -EINVAL; }
    return (int)size;
}

static int status(char *out, size_t cap)
{
    int nfiles = 0, ndirs = 0;
    long long bytes = 0;
    for (struct file *f = files; f; f = f->next, nfiles++)
        for (struct change *c = f->first; c; c = c->next) if (c->state == PENDING) bytes += c->len;
    for (struct dir *d = dirs; d; d = d->next) ndirs += d->nops > 0;
    return snprintf(out, cap, "state %s\nunsynced-files %d\nunsynced-bytes %lld\nunsynced-dirs %d\nfail-write %ld\nfail-sync %ld\n",
                    is_cut ? "cut" : "live", nfiles, bytes, ndirs, fail_write_n, fail_sync_n);
}

/* ---- FUSE operations ---- */

#define GUARD(path) do { if (is_cut) return -EIO; if (hidden(path)) return -ENOENT; } while (0)
#define NO_FD ((uint64_t)-1)    /* the handle of the control file and of directories */

/* The backing descriptor behind fi, or -1 when the operation came by path alone. */
static int fd_of(const struct fuse_file_info *fi) { return fi && fi->fh != NO_FD ? (int)fi->fh : -1; }

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;    /* every write reaches us, so faults hit the caller */
    cfg->use_ino = 1;
    cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
    return NULL;
}

static void fs_destroy(void *data)
{
    (void)data;
    if (!is_cut) nftw(trash, rm_entry, 16, FTW_DEPTH | FTW_PHYS);   /* no power cut: everything stays */
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    char bp[PATH_MAX];
    if (!strcmp(path, control)) {
        memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        return 0;
    }
    GUARD(path);
    bpath(bp, path);
    return (fd_of(fi) >= 0 ? fstat(fd_of(fi), st) : lstat(bp, st)) ? -errno : 0;
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
    GUARD(path);
    fi->fh = NO_FD;
    return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off; (void)fi; (void)flags;
    char bp[PATH_MAX];
    GUARD(path);
    bpath(bp, path);
    DIR *d = opendir(bp);
    if (!d) return -errno;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(path, "/") || strcmp(e->d_name, TRASH)) fill(buf, e->d_name, NULL, 0, 0);
    closedir(d);
    return 0;
}

/* Files are opened read-write without O_APPEND (the kernel gives each write its offset), so that
   the bytes a write replaces can be read; O_TRUNC is done here so that it is recorded. */
static int open_file(const char *path, int flags, mode_t mode, struct fuse_file_info *fi)
{
    char bp[PATH_MAX], parent[PATH_MAX];
    struct stat st;
    if (!strcmp(path, control)) { fi->direct_io = 1; fi->fh = NO_FD; return 0; }
    GUARD(path);
    bpath(bp, path);
    const char *name = split(path, parent);
    int existed = lstat(bp, &st) == 0;
    struct dir *d = existed || !(flags & O_CREAT) ? NULL : dir_at(parent);   /* its listing before the create */
    int fd = open(bp, (flags & ~(O_ACCMODE | O_APPEND | O_TRUNC)) | O_RDWR, mode);
    if (fd < 0) return -errno;
    if (!existed) {
        fstat(fd, &st);
        dir_log(d, name, st.st_ino, 0, NULL, 0, 0);
    } else if ((flags & O_TRUNC) && st.st_size > 0) {
        int err = record(fd, 0, 0, NULL);
        if (err || ftruncate(fd, 0)) { close(fd); return err ? err : -errno; }
    }
    fi->fh = fd;
    return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi) { return open_file(path, fi->flags, 0, fi); }
static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi) { return open_file(path, fi->flags | O_CREAT, mode, fi); }

static int fs_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    if (fi->fh != NO_FD) close(fi->fh);
    return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    if (fi->fh == NO_FD) {
        char text[512];
        int n = status(text, sizeof text);
        if (off >= n) return 0;
        n = (int)(n - off) < (int)size ? (int)(n - off) : (int)size;
        memcpy(buf, text + off, n);
        return n;
    }
    GUARD(path);
    ssize_t n = pread(fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    if (fi->fh == NO_FD) return command(buf, size);
    GUARD(path);
    if (fail_write_n && --fail_write_n == 0) return -fail_write_err;
    int err = size ? record(fi->fh, off, size, buf) : 0;
    if (err) return err;
    ssize_t n = pwrite(fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    char bp[PATH_MAX];
    if (!strcmp(path, control)) return 0;
    GUARD(path);
    bpath(bp, path);
    int fd = fd_of(fi) >= 0 ? fd_of(fi) : open(bp, O_RDWR);
    if (fd < 0) return -errno;
    int err = record(fd, size, 0, NULL);
    if (!err && ftruncate(fd, size)) err = -errno;
    if (fd != fd_of(fi)) close(fd);
    return err;
}

/* BACKING itself is not synced: the disk being tested is the one modelled here. */
static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    struct stat st;
    if (fi->fh == NO_FD) return 0;
    GUARD(path);
    if (fstat(fi->fh, &st)) return -errno;
    int failed = fail_sync_n && --fail_sync_n == 0;
    file_synced(st.st_ino, failed);
    return failed ? -fail_sync_err : 0;
}

static int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync; (void)fi;
    char bp[PATH_MAX];
    struct stat st;
    GUARD(path);
    bpath(bp, path);
    if (lstat(bp, &st)) return -errno;
    dir_synced(st.st_ino);
    return 0;
}

/* A directory (target NULL) or a symbolic link made at path, its name logged in its parent. */
static int make_name(const char *path, mode_t mode, const char *target)
{
    char bp[PATH_MAX], parent[PATH_MAX];
    struct stat st;
    GUARD(path);
    bpath(bp, path);
    const char *name = split(path, parent);
    struct dir *d = dir_at(parent);
    if ((target ? symlink(target, bp) : mkdir(bp, mode)) || lstat(bp, &st)) return -errno;
    dir_log(d, name, st.st_ino, target == NULL, NULL, 0, 0);
    return 0;
}

static int fs_mkdir(const char *path, mode_t mode) { return make_name(path, mode, NULL); }

static int fs_symlink(const char *target, const char *path) { return make_name(path, 0, target); }

static int fs_readlink(const char *path, char *buf, size_t size)
{
    char bp[PATH_MAX];
    GUARD(path);
    bpath(bp, path);
    ssize_t n = readlink(bp, buf, size - 1);
    if (n < 0) return -errno;
    buf[n] = 0;
    return 0;
}

static int remove_name(const char *path, int want_dir)
{
    char bp[PATH_MAX], parent[PATH_MAX];
    struct stat st;
    GUARD(path);
    bpath(bp, path);
    const char *name = split(path, parent);
    if (lstat(bp, &st)) return -errno;
    if (want_dir && !S_ISDIR(st.st_mode)) return -ENOTDIR;
    if (!want_dir && S_ISDIR(st.st_mode)) return -EISDIR;
    int err = want_dir ? dir_is_empty(bp) : 0;
    if (err) return err;
    struct dir *d = dir_at(parent);
    if ((err = stash(bp, &st))) return err;
    dir_log(d, name, 0, 0, NULL, 0, 0);
    return 0;
}

static int fs_unlink(const char *path) { return remove_name(path, 0); }
static int fs_rmdir(const char *path) { return remove_name(path, 1); }

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
    char bf[PATH_MAX], bt[PATH_MAX], pf[PATH_MAX], pt[PATH_MAX];
    struct stat sf, st;
    GUARD(from);
    GUARD(to);
    if (flags & ~RENAME_NOREPLACE) return -EINVAL;
    bpath(bf, from);
    bpath(bt, to);
    const char *nf = split(from, pf), *nt = split(to, pt);
    if (lstat(bf, &sf)) return -errno;
    int replaces = lstat(bt, &st) == 0;
    if (replaces) {
        if (flags & RENAME_NOREPLACE) return -EEXIST;
        if (st.st_ino == sf.st_ino) return 0;
        if (S_ISDIR(sf.st_mode) && !S_ISDIR(st.st_mode)) return -ENOTDIR;
        if (!S_ISDIR(sf.st_mode) && S_ISDIR(st.st_mode)) return -EISDIR;
        if (S_ISDIR(st.st_mode) && dir_is_empty(bt)) return -ENOTEMPTY;
    }
    struct dir *df = dir_at(pf), *dt = dir_at(pt);
    int err = replaces ? stash(bt, &st) : 0;
    if (err) return err;
    if (rename(bf, bt)) return -errno;
    int is_dir = S_ISDIR(sf.st_mode);
    if (df == dt) dir_log(df, nf, 0, 0, nt, sf.st_ino, is_dir);
    else { dir_log(df, nf, 0, 0, NULL, 0, 0); dir_log(dt, nt, sf.st_ino, is_dir, NULL, 0, 0); }
    return 0;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    char bp[PATH_MAX];
    if (!strcmp(path, control)) return 0;
    GUARD(path);
    bpath(bp, path);
    return (fd_of(fi) >= 0 ? fchmod(fd_of(fi), mode) : chmod(bp, mode)) ? -errno : 0;
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    char bp[PATH_MAX];
    GUARD(path);
    bpath(bp, path);
    return (fd_of(fi) >= 0 ? fchown(fd_of(fi), uid, gid) : lchown(bp, uid, gid)) ? -errno : 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    char bp[PATH_MAX];
    if (!strcmp(path, control)) return 0;
    GUARD(path);
    bpath(bp, path);
    return (fd_of(fi) >= 0 ? futimens(fd_of(fi), tv) : utimensat(AT_FDCWD, bp, tv, AT_SYMLINK_NOFOLLOW)) ? -errno : 0;
}

static int fs_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    if (is_cut) return -EIO;
    return statvfs(backing, st) ? -errno : 0;
}

static const struct fuse_operations ops = {
    .init = fs_init, .destroy = fs_destroy, .getattr = fs_getattr, .opendir = fs_opendir, .readdir = fs_readdir,
    .open = fs_open, .create = fs_create, .release = fs_release, .read = fs_read, .write = fs_write,
    .truncate = fs_truncate, .fsync = fs_fsync, .fsyncdir = fs_fsyncdir, .mkdir = fs_mkdir,
    .symlink = fs_symlink, .readlink = fs_readlink, .unlink = fs_unlink, .rmdir = fs_rmdir,
    .rename = fs_rename, .chmod = fs_chmod, .chown = fs_chown, .utimens = fs_utimens, .statfs = fs_statfs,
};

int main(int argc, char **argv)
{
    char *args[argc + 4], fsname[PATH_MAX + 16], *positional[2] = { 0 };
    int n = 0, npos = 0;
    args[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--control") && i + 1 < argc && !strchr(argv[i + 1], '/')) snprintf(control, sizeof control, "/%s", argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) { args[n++] = argv[i++]; args[n++] = argv[i]; }
        else if (argv[i][0] == '-') args[n++] = argv[i];
        else if (npos < 2) positional[npos++] = argv[i];
        else npos = 3;
    }
    if (npos != 2) {
        fprintf(stderr, "usage: %s BACKING MOUNTPOINT [--control NAME] [-f] [-o OPTION]...\n", argv[0]);
        return 2;
    }
    if (!realpath(positional[0], backing)) { perror(positional[0]); return 1; }
    if (strlen(backing) > PATH_MAX / 2) { fprintf(stderr, "lossyfs: %s: path too long\n", backing); return 1; }
    snprintf(trash, sizeof trash, "%s/" TRASH, backing);
    nftw(trash, rm_entry, 16, FTW_DEPTH | FTW_PHYS);        /* left by a run that did not unmount */
    if (mkdir(trash, 0700)) { perror(trash); return 1; }
    snprintf(fsname, sizeof fsname, "fsname=lossyfs:%s", backing);
    args[n++] = positional[1];
    args[n++] = "-s";
    args[n++] = "-o";
    args[n++] = fsname;
    return fuse_main(n, args, &ops, NULL);
}
