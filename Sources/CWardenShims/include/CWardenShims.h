// CWardenShims — the thin C shim under CacheWarden's filesystem layer and engine.
//
// Why this module exists (each item is something Swift cannot express well):
//  * `statx(2)`: Swift's Glibc module cannot name `struct statx` (the type's name clashes with the function's),
//    so the birth time and the mount ID, which only statx reports, are read here (`cwsys_birth_time`,
//    `cwsys_mount_id`).
//  * `malloc_trim(3)`: <malloc.h> is not part of Swift's Glibc module (`cwsys_release_free_memory`).
//  * `statfs(2)`: <sys/vfs.h> is not part of it either, and `statvfs` has no filesystem type
//    (`cwsys_filesystem_magic`, `cwsys_descriptor_filesystem`).
//  * `pthread_setname_np(3)` is a GNU extension Swift's Glibc module does not declare (`cwsys_name_thread`).
//  * journald's native protocol for records too large for one datagram: `memfd_create(2)` and the `F_SEAL_*`
//    flags are GNU/Linux-only and not in Swift's Glibc module, and an `SCM_RIGHTS` control message is built with
//    the `CMSG_*` macros, which Swift cannot call (`cwsys_memfd`, `cwsys_seal`, `cwsys_send_descriptor`).
//  * `sched_getaffinity(2)` and `CPU_COUNT` are a GNU extension and a macro Swift's Glibc module does not offer
//    (`cwsys_usable_processors`).
//  * The program's own read-only segments (`cwsys_drop_clean_program_pages`): found with `dl_iterate_phdr(3)` and
//    the ELF program headers, C structures Swift's Glibc module does not describe.
//  * `<sys/epoll.h>` is not part of Swift's Glibc module, and `struct epoll_event` is packed on x86_64: the
//    readiness set the backends keep their notification descriptors in (`ReadinessSet`) goes through
//    `cwsys_epoll_create`, `cwsys_epoll_add` and `cwsys_epoll_remove`.
//  * `getdents64(2)` is declared by <dirent.h> only under `_GNU_SOURCE`, which Swift's Glibc module does not
//    set (`cwsys_read_directory`). `readdir(3)` would need a `dup`, an `fdopendir` (an `fstat` and two `fcntl`s)
//    and a `closedir` per directory: a third of the system calls of a tree walk.
//  * `struct linux_dirent64`, the record `getdents64(2)` fills the buffer with, ends in a flexible array and is not
//    declared by any header Swift imports: its fields are read here, at the offsets the compiler gives them
//    (`offsetof`, checked by `_Static_assert` against glibc's `struct dirent64`), never at offsets written out in
//    Swift (`cwsys_dirent_next`).
//  * `openat2(2)` has no glibc wrapper, and `syscall(2)` is variadic, which Swift cannot call
//    (`cwsys_open_directory_in_mount`, `cwsys_open_root`); `name_to_handle_at(2)`'s `struct file_handle` ends in a
//    flexible array (`cwsys_mount_id`'s fallback).
//  * `O_PATH` is defined by <fcntl.h> only under `_GNU_SOURCE` (`cwsys_open_directory_path`), and so is
//    `renameat2(2)` (`cwsys_rename_noreplace`).
//  * `F_OFD_SETLK` (open file description locks, Linux 3.15) is defined only under `_GNU_SOURCE`, and `fcntl(2)`
//    is variadic: a client's POSIX-style lock (Gradle's) is taken here (`cwsys_ofd_try_lock`).
//
// Every symbol here is prefixed `cwsys_`.
#ifndef CWARDENSHIMS_H
#define CWARDENSHIMS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/// Birth time of `name` (relative to `dirfd`, a final symlink not followed) in nanoseconds since 1970, and the
/// inode it was read from (the caller's `fstatat` of the name may have seen another file).
/// Returns 0 on success, 1 when the filesystem records no birth time, -1 with `errno` set on failure.
int cwsys_birth_time(int dirfd, const char *name, int64_t *nanoseconds, uint64_t *ino);

/// The ID of the mount `name` (relative to `dirfd`; "" for `dirfd` itself; a final symlink not followed, an
/// automount point not triggered) is on: `statx(2)`'s `STATX_MNT_ID`, the number `/proc/self/mountinfo` lists
/// first, or before Linux 5.8 the one `name_to_handle_at(2)` reports. A bind mount of a folder of the same
/// filesystem is told apart only here. Returns 0, or -1 with `errno` set (where neither can tell).
int cwsys_mount_id(int dirfd, const char *name, uint64_t *id);

/// `renameat2(2)` of `from` in `fromdir` to `to` in `todir` with `RENAME_NOREPLACE` (never over an existing name:
/// `EEXIST`). Returns 0, or -1 with `errno` set.
int cwsys_rename_noreplace(int fromdir, const char *from, int todir, const char *to);

/// An `O_PATH` descriptor of the directory at the absolute `path`, opened without following any symlink on the
/// way (`openat2(2)` with `RESOLVE_NO_SYMLINKS`): a registered root's path is canonical, so a symlink anywhere in
/// it means the path was changed since it was checked. Returns the descriptor, or -1 with `errno` set (`ELOOP`
/// for a symlink, `ENOSYS` before Linux 5.6).
int cwsys_open_root(const char *path);

/// Returns the allocator's free pages to the kernel (`malloc_trim(0)`); 1 when memory was released.
int cwsys_release_free_memory(void);

/// The `f_type` magic of the filesystem holding `path` (32 bits, as in <linux/magic.h>). Returns 0 on success,
/// -1 with `errno` set on failure.
int cwsys_filesystem_magic(const char *path, uint32_t *magic);

/// The same for the filesystem holding the open descriptor `fd` (`fstatfs(2)`), with its `f_fsid` (the id
/// fanotify names the filesystem by in its events) into `fsid`.
int cwsys_descriptor_filesystem(int fd, uint32_t *magic, uint64_t *fsid);

/// Names the calling thread (as `top -H` and /proc/PID/task/TID/comm show it; the kernel keeps 15 bytes).
void cwsys_name_thread(const char *name);

/// A close-on-exec memfd that allows sealing (`memfd_create(2)`). Returns the descriptor, or -1 with `errno` set.
int cwsys_memfd(const char *name);

/// Seals `fd` against shrinking, growing, writing and further seals (what journald requires of a memfd it is
/// handed). Returns 0, or -1 with `errno` set.
int cwsys_seal(int fd);

/// Sends one empty datagram carrying descriptor `fd` (`SCM_RIGHTS`) from `sock` to the Unix socket address
/// `address` (`struct sockaddr_un`, `length` bytes). Returns 0, or -1 with `errno` set.
int cwsys_send_descriptor(int sock, const void *address, uint32_t length, int fd);

/// The processors this process may run on (its CPU affinity mask, as nproc(1) counts them), or -1 with `errno`
/// set.
int cwsys_usable_processors(void);

/// Unmaps the resident pages of the running program's segments that are never written (code, read-only data):
/// `madvise(MADV_DONTNEED)` on each `PT_LOAD` without `PF_W`. They stay in the page cache, and the next access
/// maps them again from there (a minor fault, no I/O); writable segments (data, relocated read-only data) are
/// not touched. Returns the bytes advised, or -1 with `errno` set.
long cwsys_drop_clean_program_pages(void);

/// A close-on-exec epoll descriptor, or -1 with errno set.
int cwsys_epoll_create(void);

/// Adds `fd` to the set, level-triggered `EPOLLIN` (the packed `struct epoll_event` is built here). Returns 0, or
/// -1 with errno set.
int cwsys_epoll_add(int epfd, int fd);

/// Takes `fd` out of the set. Returns 0, or -1 with errno set.
int cwsys_epoll_remove(int epfd, int fd);

/// `getdents64(2)`: reads `struct linux_dirent64` records of the open directory `fd`, from its current offset,
/// into `buffer`. Returns the bytes read (0 at the end), or -1 with `errno` set.
long cwsys_read_directory(int fd, void *buffer, size_t length);

/// The kernel's `struct linux_dirent64` (getdents64(2)): what `cwsys_read_directory` fills its buffer with. Declared
/// here because no header Swift imports does (glibc's `struct dirent64`, checked equal in CWardenShims.c, needs
/// `_GNU_SOURCE`).
struct cwsys_linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
_Static_assert(offsetof(struct cwsys_linux_dirent64, d_ino) == 0, "linux_dirent64.d_ino");
_Static_assert(offsetof(struct cwsys_linux_dirent64, d_off) == 8, "linux_dirent64.d_off");
_Static_assert(offsetof(struct cwsys_linux_dirent64, d_reclen) == 16, "linux_dirent64.d_reclen");
_Static_assert(offsetof(struct cwsys_linux_dirent64, d_type) == 18, "linux_dirent64.d_type");
_Static_assert(offsetof(struct cwsys_linux_dirent64, d_name) == 19, "linux_dirent64.d_name");

/// Decodes the record at `offset` of `buf` (holding `len` bytes from one `cwsys_read_directory`): its inode number,
/// its type (`DT_*`) and its NUL-terminated name, which points into `buf`. Returns the offset of the next record, or
/// -1 when no complete record starts at `offset` (a short or corrupt read). Inline and allocation-free: it runs once
/// per entry of every walk.
static inline long cwsys_dirent_next(const void *buf, long len, long offset, uint64_t *ino, uint8_t *type,
                                     const char **name) {
    const long name_at = (long)offsetof(struct cwsys_linux_dirent64, d_name);
    if (offset < 0 || len - offset < name_at + 1) return -1;
    const char *record = (const char *)buf + offset;
    unsigned short reclen;
    memcpy(&reclen, record + offsetof(struct cwsys_linux_dirent64, d_reclen), sizeof reclen);
    if ((long)reclen < name_at + 1 || (long)reclen > len - offset) return -1;
    memcpy(ino, record + offsetof(struct cwsys_linux_dirent64, d_ino), sizeof *ino);
    *type = (uint8_t)record[offsetof(struct cwsys_linux_dirent64, d_type)];
    *name = record + name_at;
    return offset + (long)reclen;
}

/// `openat(2)` of the directory `name` in `dirfd` — never through a symlink, close-on-exec — that does not cross
/// into another mount (`openat2(2)` with `RESOLVE_NO_XDEV`): a mount point fails with `EXDEV`, and an automount
/// point is not triggered. With `path_only`, an `O_PATH` descriptor (see `cwsys_open_directory_path`). Returns the
/// descriptor, or -1 with `errno` set (`ENOSYS` before Linux 5.6).
int cwsys_open_directory_in_mount(int dirfd, const char *name, int path_only);

/// `openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`: a descriptor naming the directory, which
/// stats, opens and unlinks relative to it but cannot list it, and whose open fsnotify does not report. Returns
/// the descriptor, or -1 with `errno` set (`ENOTDIR` for a symlink).
int cwsys_open_directory_path(int dirfd, const char *name);

/// Tries to take a write lock (`write`: `F_WRLCK`, which needs `fd` open for writing) or a read lock (`F_RDLCK`,
/// which needs it open for reading) over the whole of the open file `fd` (`F_OFD_SETLK`, from byte 0 to the end,
/// never blocking): an open file description lock, owned by the descriptor rather than by the process, so closing
/// `fd` releases it and no other descriptor of this process can. A write lock conflicts with any POSIX (`fcntl`,
/// `lockf`, Java's `FileChannel.tryLock`) or OFD lock on the file, read or write; a read lock only with write
/// locks. Returns 0, or -1 with `errno` set (`EAGAIN` or `EACCES`: another holds a conflicting lock).
int cwsys_ofd_try_lock(int fd, int write);

/// The soft and hard `RLIMIT_NOFILE` (`RLIM_INFINITY` as `UINT64_MAX`); with `raise`, the soft one is set to the
/// hard one first. Returns 0, or -1 with `errno` set. (`getrlimit`'s resource type differs with `_GNU_SOURCE`.)
int cwsys_open_files_limit(int raise, uint64_t *soft, uint64_t *hard);

#endif
