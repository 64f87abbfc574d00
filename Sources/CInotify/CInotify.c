// Thin wrappers over the libinotifytools helpers CacheWarden uses. They exist so that the Swift side does not
// import libinotifytools' header (whose global watch-table API we must not call, see CInotify.h).
#include "CInotify.h"
#include <inotifytools/inotifytools.h>
#include <fcntl.h>
#include <sys/stat.h>

const char *cinotify_mask_names(uint32_t mask) {
    return inotifytools_event_to_str_sep((int)mask, ',');
}

int cinotify_max_user_watches(void) { return inotifytools_get_max_user_watches(); }

int cinotify_max_queued_events(void) { return inotifytools_get_max_queued_events(); }

int cinotify_max_user_instances(void) { return inotifytools_get_max_user_instances(); }

int cinotify_birth_time(int dirfd, const char *path, int64_t *nanoseconds) {
    struct statx sx;
    if (statx(dirfd, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0) return -1;
    if (!(sx.stx_mask & STATX_BTIME)) return 1;
    *nanoseconds = (int64_t)sx.stx_btime.tv_sec * 1000000000 + sx.stx_btime.tv_nsec;
    return 0;
}
