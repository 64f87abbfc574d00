// See CFanotify.h for why each function is here rather than in Swift.
#define _GNU_SOURCE
#include "CFanotify.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/fanotify.h>

#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200   // Linux 6.5: a handle for identification, as fanotify reports it
#endif
#ifndef FAN_RENAME
#define FAN_RENAME 0x10000000
#define FAN_EVENT_INFO_TYPE_OLD_DFID_NAME 10
#define FAN_EVENT_INFO_TYPE_NEW_DFID_NAME 12
#endif

const uint64_t CFAN_MODIFY = FAN_MODIFY, CFAN_ATTRIB = FAN_ATTRIB, CFAN_CLOSE_WRITE = FAN_CLOSE_WRITE,
    CFAN_CLOSE_NOWRITE = FAN_CLOSE_NOWRITE, CFAN_OPEN = FAN_OPEN, CFAN_CREATE = FAN_CREATE, CFAN_DELETE = FAN_DELETE,
    CFAN_DELETE_SELF = FAN_DELETE_SELF, CFAN_MOVE_SELF = FAN_MOVE_SELF, CFAN_MOVED_FROM = FAN_MOVED_FROM, CFAN_MOVED_TO = FAN_MOVED_TO, CFAN_RENAME = FAN_RENAME, CFAN_Q_OVERFLOW = FAN_Q_OVERFLOW,
    CFAN_ONDIR = FAN_ONDIR;

int cfan_init(int unlimited) {
    return fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_NONBLOCK | FAN_CLOEXEC
                             | (unlimited ? FAN_UNLIMITED_QUEUE : 0),
                         O_RDONLY | O_LARGEFILE | O_CLOEXEC);
}

int cfan_mark_filesystem(int fan, int dirfd, uint64_t mask) {
    return fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask, dirfd, NULL);
}

int cfan_directory_key(int dirfd, uint64_t fsid, uint8_t *key) {
    struct { struct file_handle h; unsigned char bytes[MAX_HANDLE_SZ]; } handle;
    handle.h.handle_bytes = MAX_HANDLE_SZ;
    int mount_id;
    if (name_to_handle_at(dirfd, "", &handle.h, &mount_id, AT_EMPTY_PATH | AT_HANDLE_FID) != 0) {
        if (errno != EINVAL) return -1;
        // Before Linux 6.5 (no AT_HANDLE_FID): the exportable handle, which is what fanotify reports there.
        handle.h.handle_bytes = MAX_HANDLE_SZ;
        if (name_to_handle_at(dirfd, "", &handle.h, &mount_id, AT_EMPTY_PATH) != 0) return -1;
    }
    memcpy(key, &fsid, 8);
    memcpy(key + 8, &handle.h.handle_type, 4);
    memcpy(key + 12, handle.h.f_handle, handle.h.handle_bytes);
    return 12 + (int)handle.h.handle_bytes;
}

/// One info record holding a directory fid and a name: its key into `key`, its name into `name`/`name_len`.
static int cfan_read_dfid_name(const uint8_t *record, uint32_t record_len, uint8_t *key, uint32_t *key_len,
                               const uint8_t **name, uint32_t *name_len) {
    // struct fanotify_event_info_fid: header (4), fsid (8), then struct file_handle (4 + 4 + bytes), then the name.
    if (record_len < 4 + 8 + 8) return -1;
    uint32_t handle_bytes;
    memcpy(&handle_bytes, record + 12, 4);
    if (handle_bytes > MAX_HANDLE_SZ || 20 + handle_bytes > record_len) return -1;
    memcpy(key, record + 4, 8);                      // fsid
    memcpy(key + 8, record + 16, 4);                 // handle type
    memcpy(key + 12, record + 20, handle_bytes);     // handle
    *key_len = 12 + handle_bytes;
    *name = record + 20 + handle_bytes;
    *name_len = (uint32_t)strnlen((const char *)*name, record_len - 20 - handle_bytes);
    return 0;
}

long cfan_next_event(const uint8_t *buf, long len, long offset, cfan_event *out) {
    struct fanotify_event_metadata meta;
    if (offset < 0 || offset + (long)sizeof meta > len) return -1;
    memcpy(&meta, buf + offset, sizeof meta);   // the buffer is not guaranteed to be aligned
    long next = offset + (long)meta.event_len;
    if (meta.vers != FANOTIFY_METADATA_VERSION || meta.event_len < sizeof meta || next > len
        || meta.metadata_len < sizeof meta || meta.metadata_len > meta.event_len) return -1;
    out->mask = meta.mask;
    out->key_len = out->name_len = out->key2_len = out->name2_len = 0;
    out->name = out->name2 = NULL;
    long at = offset + meta.metadata_len;
    while (at + 4 <= next) {
        uint8_t type = buf[at];
        uint16_t record_len;
        memcpy(&record_len, buf + at + 2, 2);
        if (record_len < 4 || at + record_len > next) return -1;
        if (type == FAN_EVENT_INFO_TYPE_DFID_NAME || type == FAN_EVENT_INFO_TYPE_DFID
            || type == FAN_EVENT_INFO_TYPE_OLD_DFID_NAME) {
            if (cfan_read_dfid_name(buf + at, record_len, out->key, &out->key_len, &out->name, &out->name_len)) return -1;
        } else if (type == FAN_EVENT_INFO_TYPE_NEW_DFID_NAME) {
            if (cfan_read_dfid_name(buf + at, record_len, out->key2, &out->key2_len, &out->name2, &out->name2_len)) return -1;
        }
        at += record_len;
    }
    return next;
}
