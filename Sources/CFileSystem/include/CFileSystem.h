// CFileSystem — the thin C shim under CacheWarden's filesystem layer.
//
// Why this module exists (each item is something Swift cannot express well):
//  * `statx(2)`: Swift's Glibc module cannot name `struct statx` (the type's name clashes with the function's),
//    so the birth time, which only statx reports, is read here (`cwfs_birth_time`).
//
// Every symbol here is prefixed `cwfs_`.
#ifndef CFILESYSTEM_H
#define CFILESYSTEM_H

#include <stdint.h>

/// Birth time of `name` (relative to `dirfd`, a final symlink not followed) in nanoseconds since 1970.
/// Returns 0 on success, 1 when the filesystem records no birth time, -1 with `errno` set on failure.
int cwfs_birth_time(int dirfd, const char *name, int64_t *nanoseconds);

#endif
