#!/bin/sh
# Installs CacheWarden from this folder (the release tarball, `make dist`), or removes what it installed.
#
#   sudo ./install.sh                      bin, man pages, completions and systemd units under /usr/local
#   sudo ./install.sh --uninstall          removes them again (the same PREFIX and DESTDIR)
#   PREFIX=/opt/cachewarden ./install.sh   another prefix: the units' ExecStart= follows it
#   DESTDIR=/tmp/stage ./install.sh        a staged tree for a package; nothing outside DESTDIR is touched
#
# The config goes to $SYSCONFDIR/cachewarden/cachewarden.conf (default /etc) only when there is none: as shipped it
# watches nothing. --uninstall removes it only when it is still the shipped one. What was installed, and which
# folders were created for it, is listed in PREFIX/share/cachewarden/installed (paths as on the installed system,
# without DESTDIR), which --uninstall follows, so it removes exactly that. The service is neither enabled nor started.
set -eu

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
SYSCONFDIR=${SYSCONFDIR:-/etc}
action=install
for arg in "$@"; do
    case $arg in
        --uninstall) action=uninstall ;;
        --prefix=*) PREFIX=${arg#--prefix=} ;;
        --destdir=*) DESTDIR=${arg#--destdir=} ;;
        --sysconfdir=*) SYSCONFDIR=${arg#--sysconfdir=} ;;
        -h | --help) sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument: $arg (see --help)" >&2; exit 2 ;;
    esac
done
case $PREFIX in /*) ;; *) echo "install.sh: PREFIX must be an absolute path: $PREFIX" >&2; exit 2 ;; esac
case $SYSCONFDIR in /*) ;; *) echo "install.sh: SYSCONFDIR must be an absolute path: $SYSCONFDIR" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")" && pwd)
root=$DESTDIR$PREFIX
conf=$DESTDIR$SYSCONFDIR/cachewarden/cachewarden.conf
manifest=$root/share/cachewarden/installed
# Reload systemd only on the running system (not into a DESTDIR, not in a container or chroot without systemd).
live_systemd() { [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

# source (in this folder)  destination (under PREFIX)  mode
files='bin/cachewarden bin/cachewarden 0755
share/man/man1/cachewarden.1 share/man/man1/cachewarden.1 0644
share/man/man5/cachewarden.conf.5 share/man/man5/cachewarden.conf.5 0644
share/bash-completion/completions/cachewarden share/bash-completion/completions/cachewarden 0644
share/zsh/site-functions/_cachewarden share/zsh/site-functions/_cachewarden 0644
share/fish/vendor_completions.d/cachewarden.fish share/fish/vendor_completions.d/cachewarden.fish 0644
lib/systemd/system/cachewarden.service lib/systemd/system/cachewarden.service 0644
lib/systemd/user/cachewarden.service lib/systemd/user/cachewarden.service 0644'

# Adds a line to the manifest: its kind (f file, c config, d folder) and the path without DESTDIR. DESTDIR itself
# and the folders above it are never listed.
record() {
    path=${2#"$DESTDIR"}
    [ -n "$path" ] && [ "$DESTDIR$path" = "$2" ] || return 0
    echo "$1 $path" >> "$manifest"
}

# Creates a folder and its missing parents, listing each one it creates in the manifest.
make_dir() {
    [ -d "$1" ] && return 0
    make_dir "$(dirname "$1")"
    mkdir -m 0755 "$1"
    record d "$1"
}

install_all() {
    [ -x "$here/bin/cachewarden" ] || { echo "install.sh: no bin/cachewarden next to this script" >&2; exit 1; }
    if [ -f "$manifest" ]; then
        echo "install.sh: already installed under $root ($manifest); run --uninstall first" >&2; exit 1
    fi
    # The manifest's folder first, and each line written as its file or folder appears, so that a half-done
    # install can still be undone.
    pending=""
    d=$root/share/cachewarden
    while [ ! -d "$d" ]; do pending="$d
$pending"; d=$(dirname "$d"); done
    mkdir -p "$root/share/cachewarden"
    : > "$manifest"
    record f "$manifest"
    printf '%s' "$pending" | while IFS= read -r d; do record d "$d"; done
    printf '%s\n' "$files" | while read -r src dest mode; do
        target=$root/$dest
        make_dir "$(dirname "$target")"
        case $dest in
            lib/systemd/*)
                # The units name /usr/local/bin/cachewarden and /etc/cachewarden/cachewarden.conf.
                sed -e "s|/usr/local/bin/cachewarden|$PREFIX/bin/cachewarden|g" \
                    -e "s|/etc/cachewarden/cachewarden.conf|$SYSCONFDIR/cachewarden/cachewarden.conf|g" \
                    "$here/$src" > "$target.tmp" && mv -f "$target.tmp" "$target" ;;
            *) cp "$here/$src" "$target.tmp" && mv -f "$target.tmp" "$target" ;;
        esac
        chmod "$mode" "$target"
        record f "$target"
        echo "  $target"
    done
    if [ -e "$conf" ]; then
        echo "  $conf kept (already there)"
    else
        make_dir "$(dirname "$conf")"
        cp "$here/etc/cachewarden/cachewarden.conf" "$conf"
        chmod 0644 "$conf"
        record c "$conf"
        echo "  $conf (watches nothing until edited)"
    fi
    chmod 0644 "$manifest"
    if live_systemd; then systemctl daemon-reload || true; fi
    echo "install.sh: installed under $root. Next: edit $SYSCONFDIR/cachewarden/cachewarden.conf, check it with"
    echo "  $PREFIX/bin/cachewarden check --config $SYSCONFDIR/cachewarden/cachewarden.conf"
    echo "then: systemctl enable --now cachewarden.service"
}

uninstall_all() {
    [ -f "$manifest" ] || { echo "install.sh: nothing installed under $root (no $manifest)" >&2; exit 1; }
    if live_systemd; then
        systemctl disable --now cachewarden.service >/dev/null 2>&1 || true
        systemctl --global disable cachewarden.service >/dev/null 2>&1 || true
    fi
    # Files first (the manifest among them), then the folders the install created, deepest first, when empty.
    list=$(cat "$manifest")
    printf '%s\n' "$list" | while read -r kind path; do
        path=$DESTDIR$path
        case $kind in
            f) rm -f "$path"; echo "  removed $path" ;;
            c) if cmp -s "$path" "$here/etc/cachewarden/cachewarden.conf"; then
                   rm -f "$path"; echo "  removed $path"
               elif [ -e "$path" ]; then
                   echo "  $path kept (edited)"
               fi ;;
        esac
    done
    printf '%s\n' "$list" | sed -n 's/^d //p' | sort -r |
        while IFS= read -r d; do rmdir "$DESTDIR$d" 2>/dev/null || true; done
    if live_systemd; then systemctl daemon-reload || true; fi
    echo "install.sh: removed from $root"
}

umask 022
if [ "$action" = install ]; then install_all; else uninstall_all; fi
