// See CWardenShims.h for why each function is here rather than in Swift.
#define _GNU_SOURCE
#include "CWardenShims.h"
#include <dirent.h>
#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

int cwsys_birth_time(int dirfd, const char *name, int64_t *nanoseconds, uint64_t *ino) {
    struct statx sx;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME | STATX_INO, &sx) != 0) return -1;
    *ino = sx.stx_ino;
    if (!(sx.stx_mask & STATX_BTIME)) return 1;
    *nanoseconds = (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
    return 0;
}

int cwsys_mount_id(int dirfd, const char *name, uint64_t *id) {
    int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (name[0] == 0 ? AT_EMPTY_PATH : 0);
    struct statx sx;
    if (statx(dirfd, name, flags, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) {
        *id = sx.stx_mnt_id;
        return 0;
    }
    // Before Linux 5.8: name_to_handle_at(2) reports the same mount ID (since 2.6.39), where the filesystem
    // gives file handles.
    union {
        struct file_handle handle;
        char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    } buffer;
    buffer.handle.handle_bytes = MAX_HANDLE_SZ;
    int mount = 0;
    if (name_to_handle_at(dirfd, name, &buffer.handle, &mount, flags & (AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) != 0) return -1;
    *id = (uint64_t)mount;
    return 0;
}

int cwsys_rename_noreplace(int fromdir, const char *from, int todir, const char *to) {
    return renameat2(fromdir, from, todir, to, RENAME_NOREPLACE);
}

int cwsys_open_root(const char *path) {
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

int cwsys_release_free_memory(void) { return malloc_trim(0); }

int cwsys_filesystem_magic(const char *path, uint32_t *magic) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    *magic = (uint32_t)fs.f_type;
    return 0;
}

int cwsys_descriptor_filesystem(int fd, uint32_t *magic, uint64_t *fsid) {
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return -1;
    *magic = (uint32_t)fs.f_type;
    memcpy(fsid, &fs.f_fsid, sizeof *fsid);
    return 0;
}

void cwsys_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, sizeof shortened - 1);
    shortened[sizeof shortened - 1] = 0;
    pthread_setname_np(pthread_self(), shortened);
}

int cwsys_memfd(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int cwsys_seal(int fd) { return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL); }

int cwsys_send_descriptor(int sock, const void *address, uint32_t length, int fd) {
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {
        .msg_name = (void *)address,
        .msg_namelen = length,
        .msg_control = &control,
        .msg_controllen = sizeof control.space,
    };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

int cwsys_usable_processors(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    return CPU_COUNT(&set);
}

static int cwsys_drop_segments(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    long *advised = data;
    // The first object is the program itself (empty name); its libraries follow.
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W)) continue;
        // Only the pages wholly inside the segment: a page it shares with a writable neighbour is left alone.
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr + page - 1) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz) & ~(page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) { *advised = -1; return 1; }
        *advised += (long)(end - start);
    }
    return 1;
}

long cwsys_drop_clean_program_pages(void) {
    long advised = 0;
    dl_iterate_phdr(cwsys_drop_segments, &advised);
    return advised;
}

int cwsys_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int cwsys_epoll_add(int epfd, int fd) {
    struct epoll_event event = { .events = EPOLLIN, .data = { .fd = fd } };
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
}

int cwsys_epoll_remove(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

// The header's `struct cwsys_linux_dirent64` is the kernel's record: glibc's `struct dirent64` (the same record, as
// getdents64(2) returns it on Linux) must agree field by field.
_Static_assert(offsetof(struct dirent64, d_ino) == offsetof(struct cwsys_linux_dirent64, d_ino), "d_ino");
_Static_assert(offsetof(struct dirent64, d_off) == offsetof(struct cwsys_linux_dirent64, d_off), "d_off");
_Static_assert(offsetof(struct dirent64, d_reclen) == offsetof(struct cwsys_linux_dirent64, d_reclen), "d_reclen");
_Static_assert(offsetof(struct dirent64, d_type) == offsetof(struct cwsys_linux_dirent64, d_type), "d_type");
_Static_assert(offsetof(struct dirent64, d_name) == offsetof(struct cwsys_linux_dirent64, d_name), "d_name");
_Static_assert(sizeof(((struct dirent64 *)0)->d_ino) == sizeof(uint64_t), "d_ino size");
_Static_assert(sizeof(((struct dirent64 *)0)->d_reclen) == sizeof(unsigned short), "d_reclen size");

long cwsys_read_directory(int fd, void *buffer, size_t length) {
    return (long)getdents64(fd, buffer, length);
}

int cwsys_open_directory_in_mount(int dirfd, const char *name, int path_only) {
    struct open_how how = {
        .flags = (path_only ? O_PATH : O_RDONLY) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
}

int cwsys_open_directory_path(int dirfd, const char *name) {
    return openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int cwsys_ofd_try_lock(int fd, int write) {
    struct flock lock = { .l_type = write ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0, .l_pid = 0 };
    return fcntl(fd, F_OFD_SETLK, &lock);
}

int cwsys_open_files_limit(int raise, uint64_t *soft, uint64_t *hard) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (raise && limit.rlim_cur < limit.rlim_max) {
        struct rlimit raised = { .rlim_cur = limit.rlim_max, .rlim_max = limit.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &raised) != 0) return -1;
        limit = raised;
    }
    *soft = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
    *hard = limit.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_max;
    return 0;
}
