#!/usr/bin/env bash
# Makes an installed copy of the binary the same bytes whichever build made it (make check-repro, issue 31):
#  - .swift_modhash: the Swift compiler writes into each object a 16-byte hash of its LLVM module, which differs
#    between two builds of the same commit (a fresh clone elsewhere; the code, data and debug info are the same).
#    It only lets the compiler skip regenerating an unchanged object; nothing reads it at run time. Zeroed here, in
#    place (the file's layout is unchanged).
#  - the build ID (.note.gnu.build-id), which the linker computed over the whole file, those hashes included:
#    computed again, with the same hash and length, over the file with the modhash zeroed and the ID's bytes zeroed.
#    It stays a hash of the content, so two builds agree on it exactly when their binaries are the same.
# Run by `make install` on the installed copy (the build folder's binary is left as the linker made it, so that
# SwiftPM does not relink it). Needs readelf, dd and sha1sum. Does nothing to a binary without these sections.
#
#   packaging/normalize-binary.sh FILE
set -euo pipefail
bin=${1:?usage: normalize-binary.sh FILE}

# "OFFSET SIZE" of a section, from `readelf -S -W` ("  [26] .swift_modhash PROGBITS addr off size ...").
section() {
    readelf -S -W "$bin" | sed 's/^ *\[ *[0-9]*\] //' | awk -v name="$1" '$1 == name { print $4, $5 }'
}
zero() { dd if=/dev/zero of="$bin" bs=1 seek="$1" count="$2" conv=notrunc status=none; }

read -r off size < <(section .swift_modhash) || true
[ -z "${off:-}" ] || zero $((0x$off)) $((0x$size))

read -r off size < <(section .note.gnu.build-id) || true
[ -n "${off:-}" ] || exit 0
# The note: namesz, descsz, type (4 bytes each), "GNU\0", then the ID (descsz bytes).
desc=$((0x$off + 16))
length=$((0x$size - 16))
zero "$desc" "$length"
if [ "$length" -le 20 ]; then hash=$(sha1sum "$bin"); else hash=$(sha256sum "$bin"); fi
hash=${hash:0:$((length * 2))}
# shellcheck disable=SC2059
printf "$(sed 's/../\\x&/g' <<< "$hash")" | dd of="$bin" bs=1 seek="$desc" conv=notrunc status=none
