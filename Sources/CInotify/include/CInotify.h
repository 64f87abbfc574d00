// CInotify — the thin C shim under CacheWarden's event source.
//
// Why this module exists (each item is something Swift cannot express well):
//  * `struct inotify_event` ends in a flexible array member (`char name[]`) that Swift does not import,
//    so records are decoded here, one at a time, into a fixed-size view (`cinotify_next_event`).
//  * Composite mask macros (`IN_ALL_EVENTS`, `IN_CLOSE`, `IN_MOVE`) and the `IN_NONBLOCK`/`IN_CLOEXEC` flags
//    are not imported as Swift constants; they are re-exported below as typed constants.
//  * libinotifytools (Debian's libinotifytools0-dev) is linked for the helpers that are safe to share:
//    readable mask names for debug output and the kernel's inotify limits for error messages.
//
// Only the inotify backend (Sources/CacheWarden/Backends/Inotify) imports this module.
//
// What is deliberately NOT used from libinotifytools: its watch management and read loop. It hides the
// inotify descriptor in a file-static variable, keeps process-global tables (so two watchers in one process
// would share state) and never drops a watch on `IN_IGNORED`, so it cannot feed a Dispatch read source or
// keep exact per-directory state. CacheWarden owns its descriptor and read loop in Swift instead.
//
// Every symbol here is prefixed `cinotify_` / `CINOTIFY_`.
#ifndef CINOTIFY_H
#define CINOTIFY_H

#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>

// ---- Mask and flag constants (the macros Swift does not import) ----
static const uint32_t CINOTIFY_IN_ACCESS = IN_ACCESS;
static const uint32_t CINOTIFY_IN_MODIFY = IN_MODIFY;
static const uint32_t CINOTIFY_IN_ATTRIB = IN_ATTRIB;
static const uint32_t CINOTIFY_IN_CLOSE_WRITE = IN_CLOSE_WRITE;
static const uint32_t CINOTIFY_IN_CLOSE_NOWRITE = IN_CLOSE_NOWRITE;
static const uint32_t CINOTIFY_IN_OPEN = IN_OPEN;
static const uint32_t CINOTIFY_IN_MOVED_FROM = IN_MOVED_FROM;
static const uint32_t CINOTIFY_IN_MOVED_TO = IN_MOVED_TO;
static const uint32_t CINOTIFY_IN_CREATE = IN_CREATE;
static const uint32_t CINOTIFY_IN_DELETE = IN_DELETE;
static const uint32_t CINOTIFY_IN_DELETE_SELF = IN_DELETE_SELF;
static const uint32_t CINOTIFY_IN_MOVE_SELF = IN_MOVE_SELF;
static const uint32_t CINOTIFY_IN_UNMOUNT = IN_UNMOUNT;
static const uint32_t CINOTIFY_IN_Q_OVERFLOW = IN_Q_OVERFLOW;
static const uint32_t CINOTIFY_IN_IGNORED = IN_IGNORED;
static const uint32_t CINOTIFY_IN_ONLYDIR = IN_ONLYDIR;
static const uint32_t CINOTIFY_IN_DONT_FOLLOW = IN_DONT_FOLLOW;
static const uint32_t CINOTIFY_IN_EXCL_UNLINK = IN_EXCL_UNLINK;
static const uint32_t CINOTIFY_IN_ISDIR = IN_ISDIR;
static const uint32_t CINOTIFY_IN_ALL_EVENTS = IN_ALL_EVENTS;
static const int32_t CINOTIFY_IN_NONBLOCK = IN_NONBLOCK;
static const int32_t CINOTIFY_IN_CLOEXEC = IN_CLOEXEC;
/// Size of the fixed part of one record; a read buffer must hold at least this plus NAME_MAX + 1.
static const long CINOTIFY_EVENT_HEADER_SIZE = (long)sizeof(struct inotify_event);

/// One decoded `struct inotify_event`. `name` points into the caller's read buffer (valid until the next read);
/// `name_len` is the name's length without its NUL padding (0 for events about the watched directory itself).
typedef struct {
    int32_t wd;
    uint32_t mask;
    uint32_t cookie;
    uint32_t name_len;
    const uint8_t *name;
} cinotify_event;

/// Decodes the record at `offset` of `buf` (holding `len` bytes from one `read(2)`) into `out`.
/// Returns the offset of the next record, or -1 when no complete record starts at `offset`.
static inline long cinotify_next_event(const uint8_t *buf, long len, long offset, cinotify_event *out) {
    if (offset < 0 || offset + CINOTIFY_EVENT_HEADER_SIZE > len) return -1;
    struct inotify_event header;
    memcpy(&header, buf + offset, sizeof header); // the buffer is not guaranteed to be aligned
    long next = offset + CINOTIFY_EVENT_HEADER_SIZE + (long)header.len;
    if (next > len) return -1;
    out->wd = header.wd;
    out->mask = header.mask;
    out->cookie = header.cookie;
    out->name = buf + offset + CINOTIFY_EVENT_HEADER_SIZE;
    out->name_len = header.len ? (uint32_t)strnlen((const char *)out->name, header.len) : 0;
    return next;
}

/// Comma-separated names of the bits in `mask` ("CREATE,ISDIR"), from libinotifytools, for debug output.
/// Returns a static buffer overwritten by the next call: call it from one thread (the watcher's queue) only.
const char *cinotify_mask_names(uint32_t mask);

/// The kernel's `fs.inotify.max_user_watches`, read by libinotifytools (-1 when unreadable).
int cinotify_max_user_watches(void);

/// The kernel's `fs.inotify.max_user_instances`, read by libinotifytools (-1 when unreadable).
int cinotify_max_user_instances(void);

#endif
