// CFanotify — the thin C shim under the fanotify backend (Sources/CacheWarden/Backends/Fanotify).
//
// Why this module exists (each item is something Swift cannot express well):
//  * <sys/fanotify.h> is not part of Swift's Glibc module: `fanotify_init(2)`, `fanotify_mark(2)` and the FAN_*
//    constants are re-exported here.
//  * An event is a `struct fanotify_event_metadata` followed by variable-length info records, each ending in a
//    `struct file_handle` (a flexible array) and a name: they are decoded here, one event at a time, into a
//    fixed-size view (`cfan_next_event`).
//  * `name_to_handle_at(2)` is a GNU function taking a `struct file_handle` with a flexible array, and the key a
//    directory is reported by joins it with `statfs(2)`'s `f_fsid` (`cfan_directory_key`; the fsid comes from
//    `Syscall.fileSystem(of:)`).
//
// Every symbol here is prefixed `cfan_` / `CFAN_`.
#ifndef CFANOTIFY_H
#define CFANOTIFY_H

#include <stdint.h>

// ---- Event bits (the macros Swift does not import) ----
extern const uint64_t CFAN_MODIFY, CFAN_ATTRIB, CFAN_CLOSE_WRITE, CFAN_CLOSE_NOWRITE, CFAN_OPEN, CFAN_CREATE,
    CFAN_DELETE, CFAN_DELETE_SELF, CFAN_MOVE_SELF, CFAN_MOVED_FROM, CFAN_MOVED_TO, CFAN_RENAME, CFAN_Q_OVERFLOW,
    CFAN_ONDIR;

/// The longest key a directory can have: fsid (8 bytes), handle type (4) and MAX_HANDLE_SZ (128) handle bytes.
#define CFAN_KEY_MAX 140

/// A notification group reporting directory file handles with names (`FAN_REPORT_DFID_NAME`), non-blocking,
/// close-on-exec; with `unlimited`, its queue has no bound (`FAN_UNLIMITED_QUEUE`, which needs CAP_SYS_ADMIN).
/// Returns the descriptor, or -1 with errno set (EINVAL on a kernel older than 5.9, EPERM without the capability).
int cfan_init(int unlimited);

/// Marks the whole filesystem holding the open directory `dirfd` (`FAN_MARK_ADD | FAN_MARK_FILESYSTEM`) for
/// `mask`; a second call for the same filesystem adds bits to the same mark. Returns 0, or -1 with errno set
/// (EXDEV: a btrfs subvolume or another object whose fsid differs from its filesystem's; ENODEV: no fsid;
/// EOPNOTSUPP: no file handles).
int cfan_mark_filesystem(int fan, int dirfd, uint64_t mask);

/// Writes the key fanotify reports the open directory `dirfd` by — `fsid` (its filesystem's `f_fsid`), the
/// handle type and the handle bytes — into `key` (`CFAN_KEY_MAX` bytes). Returns its length, or -1 with errno set.
int cfan_directory_key(int dirfd, uint64_t fsid, uint8_t *key);

/// One decoded event. `key` and `name` point into the caller's read buffer (valid until the next read): the
/// directory and the entry's name (`name_len` 0 for an event without one; "." for an event on the directory
/// itself); for `FAN_RENAME`, `key`/`name` are the old place and `key2`/`name2` the new one.
typedef struct {
    uint64_t mask;
    uint32_t key_len, name_len, key2_len, name2_len;
    uint8_t key[CFAN_KEY_MAX];
    uint8_t key2[CFAN_KEY_MAX];
    const uint8_t *name;
    const uint8_t *name2;
} cfan_event;

/// Decodes the event at `offset` of `buf` (holding `len` bytes from one `read(2)`) into `out`. Returns the offset
/// of the next event, or -1 when no complete, well-formed event starts at `offset`.
long cfan_next_event(const uint8_t *buf, long len, long offset, cfan_event *out);

#endif
