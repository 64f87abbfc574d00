// See CWardenShims.h for why each function is here rather than in Swift.
#define _GNU_SOURCE
#include "CWardenShims.h"
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

int cwsys_birth_time(int dirfd, const char *name, int64_t *nanoseconds, uint64_t *ino) {
    struct statx sx;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME | STATX_INO, &sx) != 0) return -1;
    *ino = sx.stx_ino;
    if (!(sx.stx_mask & STATX_BTIME)) return 1;
    *nanoseconds = (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
    return 0;
}

int cwsys_release_free_memory(void) { return malloc_trim(0); }

int cwsys_filesystem_magic(const char *path, uint32_t *magic) {
    struct statfs fs;
    if (statfs(path, &fs) != 0) return -1;
    *magic = (uint32_t)fs.f_type;
    return 0;
}

void cwsys_name_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, sizeof shortened - 1);
    shortened[sizeof shortened - 1] = 0;
    pthread_setname_np(pthread_self(), shortened);
}
