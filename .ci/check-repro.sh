#!/usr/bin/env bash
# Fails unless the commit builds to the same bytes in two folders (issue 31): `make dist deb rpm` here and in a fresh
# clone of HEAD under another path (of another length, so that a leaked path shows), then cmp of the tarball, the
# stripped binary in it, the .deb and the .rpm. On a difference it says where: the tarball's or package's members,
# and the binary's ELF sections. Prints each build's time. Needs a clean work tree (it checks the commit, not edits).
#
#   .ci/check-repro.sh            (make check-repro; KEEP=1 keeps the clone)
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "check-repro: the work tree has uncommitted changes; commit them first (the clone builds HEAD)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cachewarden-repro.XXXXXX")
other=$work/a-second-checkout-elsewhere
# SwiftPM leaves lock files named after the clone's scratch folder in the temporary folder.
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf --one-file-system "$work"; rm -f "${TMPDIR:-/tmp}/$(tr / _ <<< "$other")"_*' EXIT
git init --quiet "$other"
git -C "$other" fetch --quiet --no-tags "$here" HEAD
git -C "$other" checkout --quiet --detach FETCH_HEAD

build() {
    local t=$SECONDS
    make -C "$1" --no-print-directory dist deb rpm > "$work/$2.log" 2>&1 ||
        { tail -n 30 "$work/$2.log" >&2; echo "check-repro: make dist deb rpm failed in $1" >&2; exit 1; }
    echo "check-repro: make dist deb rpm in $1: $((SECONDS - t)) s" >&2
}
build "$here" here
build "$other" clone

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/CacheWarden/API/CacheWardenVersion.swift)
tarball=dist/cachewarden-$version-linux-$(uname -m).tar.gz
deb=cachewarden_${version}_$(dpkg --print-architecture).deb
rpm=cachewarden-$version-1.$(uname -m).rpm
failed=0
for f in "$tarball" dist/SHA256SUMS "$deb" "$rpm"; do
    if cmp -s "$here/$f" "$other/$f"; then
        echo "check-repro: same: $f ($(stat -c %s "$here/$f") bytes, sha256 $(sha256sum "$here/$f" | cut -c1-16)...)"
    else
        echo "check-repro: DIFFERENT: $f" >&2
        failed=1
    fi
done

# Where they differ: the members, then the binary's sections.
mkdir -p "$work/x/here" "$work/x/clone"
tar -xzf "$here/$tarball" -C "$work/x/here"
tar -xzf "$other/$tarball" -C "$work/x/clone"
tar -tvzf "$here/$tarball" > "$work/x/here.list"
tar -tvzf "$other/$tarball" > "$work/x/clone.list"
diff "$work/x/here.list" "$work/x/clone.list" >&2 || failed=1
bin=$(cd "$work/x/here" && echo */bin/cachewarden)
if cmp -s "$work/x/here/$bin" "$work/x/clone/$bin"; then
    echo "check-repro: same: the stripped binary ($(stat -c %s "$work/x/here/$bin") bytes, build ID $(readelf -n "$work/x/here/$bin" | sed -n 's/.*Build ID: //p'))"
else
    failed=1
    for s in $(readelf -S -W "$work/x/here/$bin" | sed -n 's/^ *\[ *[0-9]*\] \([^ ]*\) .*/\1/p'); do
        objcopy --dump-section "$s=$work/s1" "$work/x/here/$bin" "$work/o1" 2>/dev/null || continue
        objcopy --dump-section "$s=$work/s2" "$work/x/clone/$bin" "$work/o2" 2>/dev/null || continue
        cmp -s "$work/s1" "$work/s2" || echo "check-repro: the binary's section $s differs" >&2
    done
fi
(cd "$work/x/here" && find . -type f | sort) | while read -r f; do
    cmp -s "$work/x/here/$f" "$work/x/clone/$f" || echo "check-repro: tarball member differs: $f" >&2
done
if ! cmp -s "$here/$deb" "$other/$deb"; then
    diff <(dpkg-deb -c "$here/$deb"; dpkg-deb -f "$here/$deb") <(dpkg-deb -c "$other/$deb"; dpkg-deb -f "$other/$deb") >&2 || true
fi
if ! cmp -s "$here/$rpm" "$other/$rpm"; then
    diff <(rpm -qp --qf '%{BUILDTIME} %{BUILDHOST}\n' "$here/$rpm"; rpm -qlvp "$here/$rpm") \
         <(rpm -qp --qf '%{BUILDTIME} %{BUILDHOST}\n' "$other/$rpm"; rpm -qlvp "$other/$rpm") >&2 || true
fi

[ "$failed" -eq 0 ] || { echo "check-repro: FAILED: the two builds differ (KEEP=1 keeps them in $work)" >&2; exit 1; }
echo "check-repro: byte-identical in $here and $other"
