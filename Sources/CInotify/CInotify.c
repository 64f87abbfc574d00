// Thin wrappers over the libinotifytools helpers CacheWarden uses. They exist so that the Swift side does not
// import libinotifytools' header (whose global watch-table API we must not call, see CInotify.h).
#include "CInotify.h"
#include <inotifytools/inotifytools.h>

const char *cinotify_mask_names(uint32_t mask) {
    return inotifytools_event_to_str_sep((int)mask, ',');
}

int cinotify_max_user_watches(void) { return inotifytools_get_max_user_watches(); }

int cinotify_max_user_instances(void) { return inotifytools_get_max_user_instances(); }
