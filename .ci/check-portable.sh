#!/usr/bin/env bash
# Fails when the installed binary would not run on glibc 2.34 (issue 31: RHEL/Alma/Rocky 9, Amazon Linux 2023,
# Ubuntu 22.04 with its 2.35) or needs a library besides the C library's own:
#  - a symbol version above GLIBC_2.34, or a GLIBC_ABI_* one (GLIBC_ABI_DT_RELR: DT_RELR relocations, which a loader
#    older than 2.36 refuses), or a DT_RELR tag, read from the version needs (`readelf -V`) and the dynamic section;
#  - a DT_NEEDED library other than libc, libm, libgcc_s and the loader (libinotifytools.so.0 in particular: it is
#    linked in from its archive, see the Makefile), or an undefined inotifytools_* symbol (`objdump -T`).
# Prints what the binary needs: the highest glibc version and the symbols that ask for it, and the libraries.
# Ubuntu 22.04 and RHEL 9 cannot be run here; this check is what says the binary runs there.
#
#   .ci/check-portable.sh [BINARY] [FLOOR]    (default: .build-install/release/cachewarden, 2.34)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build-install/release/cachewarden}
floor=${2:-2.34}
[ -x "$bin" ] || { echo "check-portable: no binary at $bin (run make build first)" >&2; exit 2; }

failed=0
fail() { echo "check-portable: FAILED: $*" >&2; failed=1; }

# Version needs: "Name: GLIBC_2.34  Flags: none  Version: 5" under "File: libc.so.6".
versions=$(readelf -V -W "$bin" | sed -n 's/.*Name: \(GLIBC_[^ ]*\).*/\1/p' | sort -u)
numbered=$(echo "$versions" | sed -n 's/^GLIBC_\([0-9][0-9.]*\)$/\1/p' | sort -V)
highest=$(echo "$numbered" | tail -n 1)
above=$(echo "$numbered" | awk -v floor="$floor" '{ print floor; print $0 }' | sort -V -u |
        awk -v floor="$floor" 'seen { print } $0 == floor { seen = 1 }')
other=$(echo "$versions" | grep -v -E '^GLIBC_[0-9][0-9.]*$' || true)
# Which imported symbols ask for the highest version (objdump -T: "... (GLIBC_2.34) pthread_create").
symbols=$(objdump -T "$bin" | awk -v v="(GLIBC_$highest)" '$0 ~ /\*UND\*/ && index($0, v) { print $NF }' | sort -u)
count=$(echo "$symbols" | grep -c . || true)
shown=$(echo "$symbols" | head -n 6 | tr '\n' ' ')
[ "$count" -le 6 ] || shown="$shown..."
echo "check-portable: $bin needs glibc $highest at most (GLIBC_$highest by $count imported symbols: ${shown% })"
for v in $above; do
    fail "needs GLIBC_$v, above the floor $floor: $(objdump -T "$bin" | awk -v v="(GLIBC_$v)" 'index($0, v) { print $NF }' | sort -u | tr '\n' ' ')"
done
for v in $other; do fail "needs $v (GLIBC_ABI_DT_RELR comes with -z pack-relative-relocs: glibc >= 2.36 only)"; done
if readelf -d -W "$bin" | grep -q -E '\((RELR|RELRSZ|RELRENT)\)'; then
    fail "has DT_RELR relocations (-z pack-relative-relocs): a loader older than glibc 2.36 ignores them"
fi

needed=$(readelf -d -W "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "check-portable: NEEDED: $(echo $needed)"
for lib in $needed; do
    case $lib in
        libc.so.6 | libm.so.6 | libgcc_s.so.1 | ld-linux-*.so.* | ld-linux.so.*) ;;
        libinotifytools*) fail "links $lib dynamically: the build must link libinotifytools.a (packaging/link)" ;;
        *) fail "needs $lib, which a machine with only the C library lacks" ;;
    esac
done
imported=$(objdump -T "$bin" | awk '/\*UND\*/ && $NF ~ /^inotifytools_/ { print $NF }' | sort -u)
[ -z "$imported" ] || fail "imports from libinotifytools: $(echo $imported)"
# Informational: the library's code is in the binary (only while it has its symbol table).
if linked=$(nm "$bin" 2>/dev/null | grep -c ' [Tt] inotifytools_'); then
    echo "check-portable: libinotifytools linked in ($linked functions)"
fi

[ "$failed" -eq 0 ] || exit 1
echo "check-portable: runs on glibc $floor or later, needs no library but the C library's"
