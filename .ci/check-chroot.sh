#!/usr/bin/env bash
# The release tarball on a bare Debian 12 (issue 31), in a chroot made by `debootstrap --variant=minbase bookworm`
# from Debian's archive, which has no libinotifytools0 and no Swift:
#  1. the tarball's bin/cachewarden, copied alone into the chroot, runs: ldd finds every library it needs, and
#     `run --dir --quota 1MB` on a tagged folder of 2 MB trims the eight oldest files at start (down to trim_to,
#     half the quota), then trims again, oldest first, when two more files push the folder over its quota;
#     SIGTERM stops it with status 0;
#  2. the tarball's install.sh installs under /usr/local (the binary runs from there, the units point at it, the
#     config is in /etc/cachewarden and registers nothing), and --uninstall leaves the chroot's files as they were.
# Each run works on a copy of the debootstrap tree, cached in CACHE (made by the first run: 10-40 s, 206 MB), with
# /proc mounted in a mount namespace of its own, so nothing stays mounted. Needs root, debootstrap and unshare.
# Prints the time of each part.
#
#   .ci/check-chroot.sh TARBALL [CACHE]     (make check-chroot; CACHE: .build-install/chroot)
#   DEBIAN_MIRROR=http://mirror/debian .ci/check-chroot.sh ...
set -euo pipefail
tarball=$(realpath "${1:?usage: check-chroot.sh TARBALL [CACHE]}")
cache=${2:-.build-install/chroot}
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "check-chroot: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-chroot: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
mkdir -p "$cache"
cache=$(realpath "$cache")

base=$cache/$suite
if [ ! -e "$cache/$suite.complete" ]; then
    t=$SECONDS
    rm -rf --one-file-system "$base"
    if ! debootstrap --variant=minbase "$suite" "$base" "$mirror" > "$cache/debootstrap.log" 2>&1; then
        tail -n 20 "$cache/debootstrap.log" >&2
        echo "check-chroot: debootstrap $suite from $mirror failed (log: $cache/debootstrap.log)" >&2
        exit 1
    fi
    touch "$cache/$suite.complete"
    echo "check-chroot: debootstrap --variant=minbase $suite: $((SECONDS - t)) s ($(du -sm "$base" | cut -f1) MB)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cachewarden-chroot.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
t=$SECONDS
cp -a "$base" "$work/root"
root=$work/root
mkdir -p "$work/x"
tar -xzf "$tarball" -C "$work/x"
dist=$(cd "$work/x" && echo cachewarden-*)
# A command in the chroot, with a clean environment and its own /proc (the watcher reads the mount table).
in_chroot() {
    unshare --mount --propagation private --fork --mount-proc="$root/proc" \
        chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"
}

failed=0
fail() { echo "check-chroot: FAILED: $*" >&2; failed=1; }
libc=$(in_chroot dpkg-query -W -f='${Version}' libc6)
if in_chroot dpkg-query -W libinotifytools0 >/dev/null 2>&1 || [ -n "$(find "$root/usr/lib" -name 'libinotifytools*' -print -quit)" ]; then
    fail "the chroot has libinotifytools: the check would prove nothing"
fi
echo "check-chroot: Debian $(cat "$root/etc/debian_version") chroot, libc6 $libc, no libinotifytools0"

# 1. The binary alone.
mkdir -p "$root/opt/alone"
cp "$work/x/$dist/bin/cachewarden" "$root/opt/alone/cachewarden"
ldd=$(in_chroot ldd /opt/alone/cachewarden) || fail "ldd: $ldd"
echo "$ldd" | grep -q 'not found' && fail "a library is missing: $ldd"
echo "check-chroot: ldd: $(echo "$ldd" | awk '{ print $1 }' | tr '\n' ' ')"
version=$(in_chroot /opt/alone/cachewarden --version) || fail "--version: $version"
cat > "$root/check-trim.sh" <<'EOF'
set -euo pipefail
bin=$1 d=/var/cache/cw-check out=/tmp/cw-run.out
mkdir -p "$d"
printf 'Signature: 8a477f597d28d172789f06886806bc55\n# CacheWarden check-chroot\n' > "$d/CACHEDIR.TAG"
now=$(date +%s)
for i in 0 1 2 3 4 5 6 7 8 9; do head -c 204800 /dev/zero > "$d/f$i"; touch -d "@$((now - 1000 + i))" "$d/f$i"; done
"$bin" run --dir "$d" --quota 1MB > "$out" 2> /tmp/cw-run.err &
pid=$!
# Waits (10 s at most) until the output has $2 lines matching $1.
wait_for() {
    local deadline=$((SECONDS + 10))
    until [ "$(grep -c -- "$1" "$out" || true)" -ge "$2" ]; do
        kill -0 "$pid" 2>/dev/null || { echo "run exited before its $2th $1:"; cat "$out" /tmp/cw-run.err; exit 1; }
        [ "$SECONDS" -lt "$deadline" ] || { echo "no $2th $1 within 10 s:"; cat "$out" /tmp/cw-run.err; exit 1; }
        sleep 0.05
    done
}
left() { (cd "$d" && ls | tr '\n' ' '); }
wait_for '"event":"trim"' 1
[ "$(left)" = "CACHEDIR.TAG f8 f9 " ] || { echo "after the first trim: $(left)"; cat "$out"; exit 1; }
# Two newer files of 300 KB: the second takes the folder over its 1 MB quota; the trim takes f8, f9 and h0.
head -c 307200 /dev/zero > "$d/h0"
head -c 307200 /dev/zero > "$d/h1"
wait_for '"event":"trim"' 2
[ "$(left)" = "CACHEDIR.TAG h1 " ] || { echo "after the second trim: $(left)"; cat "$out"; exit 1; }
kill -TERM "$pid"
status=0; wait "$pid" || status=$?
[ "$status" -eq 0 ] && grep -q '"event":"stop"' "$out" || { echo "SIGTERM: status $status"; cat "$out" /tmp/cw-run.err; exit 1; }
grep '"event":"trim"' "$out" | sed 's/"time":"[^"]*",//'
rm -rf "$d" "$out" /tmp/cw-run.err
EOF
if trims=$(in_chroot /bin/bash /check-trim.sh /opt/alone/cachewarden 2>&1); then
    echo "check-chroot: the binary alone ($version) trimmed, oldest first:"
    echo "$trims" | sed 's/^/  /'
else
    fail "the quota trim: $trims"
fi
rm -rf "$root/opt/alone" "$root/check-trim.sh"
rmdir "$root/opt" 2>/dev/null || true

# 2. install.sh and --uninstall: the chroot's files before and after (but /proc and /tmp) are the same.
snapshot() { (cd "$root" && find . -path ./proc -prune -o -path ./tmp -prune -o -print | LC_ALL=C sort); }
snapshot > "$work/before"
cp -a "$work/x/$dist" "$root/tmp/$dist"
if log=$(in_chroot /bin/sh -c "cd /tmp/$dist && ./install.sh" 2>&1); then
    for f in bin/cachewarden share/man/man1/cachewarden.1 share/man/man5/cachewarden.conf.5 \
             share/bash-completion/completions/cachewarden share/zsh/site-functions/_cachewarden \
             share/fish/vendor_completions.d/cachewarden.fish lib/systemd/system/cachewarden.service \
             lib/systemd/user/cachewarden.service; do
        [ -f "$root/usr/local/$f" ] || fail "install.sh did not install /usr/local/$f"
    done
    grep -q '^ExecStart=/usr/local/bin/cachewarden run --config /etc/cachewarden/cachewarden.conf$' \
        "$root/usr/local/lib/systemd/system/cachewarden.service" || fail "the system unit's ExecStart="
    installed=$(in_chroot cachewarden --version 2>&1) || fail "/usr/local/bin/cachewarden --version: $installed"
    check=0; out=$(in_chroot cachewarden check --config /etc/cachewarden/cachewarden.conf 2>&1) || check=$?
    # As shipped the config registers nothing, which check refuses (status 2).
    [ "$check" -eq 2 ] && echo "$out" | grep -q 'no directory registered' || fail "check of the shipped config: $check $out"
    echo "check-chroot: install.sh installed $(grep -c '^f ' "$root/usr/local/share/cachewarden/installed") files and the config; cachewarden --version: $installed"
else
    fail "install.sh: $log"
fi
if log=$(in_chroot /bin/sh -c "cd /tmp/$dist && ./install.sh --uninstall" 2>&1); then
    rm -rf "$root/tmp/$dist"
    if ! snapshot | diff "$work/before" - > "$work/diff"; then
        fail "install.sh --uninstall left the chroot changed: $(cat "$work/diff")"
    else
        echo "check-chroot: install.sh --uninstall left the chroot as it was ($(wc -l < "$work/before") paths compared)"
    fi
else
    fail "install.sh --uninstall: $log"
fi

echo "check-chroot: checks took $((SECONDS - t)) s"
[ "$failed" -eq 0 ] || exit 1
echo "check-chroot: the tarball works on Debian $suite without libinotifytools0"
