#!/usr/bin/env bash
# Installs what CacheWarden needs on a Debian machine that has the Swift toolchain:
#  - libinotifytools0-dev (linked by the C shim);
#  - for tests and the benchmark: inotify-tools (an independent witness and a peer), jq and python3 (JSON checked by
#    real parsers), strace (a report makes no inotify or unlink call), and the real cache clients the profiles are
#    tested against: ccache, golang-go, nginx, python3-pip (and uv, from PyPI: see the end);
#  - prometheus (promtool) and prometheus-node-exporter, for the metrics tests and monitoring/'s rules and dashboard
#    (PyYAML, from PyPI like uv below, reads the rule files for those tests);
#  - make (`make install`, tested) and systemd (`systemd-analyze verify` of the unit file);
#  - lintian (`make deb`'s package is checked by it, in InstallTests), rpm and rpmlint (`make rpm` and its check),
#    debootstrap (`make check-chroot`: the release tarball in a bare Debian 12);
#  - bindfs (it brings fusermount): the polling backend is tested on a real FUSE mount (BindfsMountTests);
#  - python3-seccomp (libseccomp's binding for Debian's /usr/bin/python3): NoOpenat2Tests run the daemon under a
#    real seccomp filter that refuses openat2, as before Linux 5.6 or in an older container profile;
#  - zsh and fish (the completion scripts are run by the real shells) and groff (the manual pages are formatted
#    with warnings on).
# Runs `apt-get update` only when something is missing (a fresh machine has no package lists).
set -euo pipefail
need=()
for pkg in libinotifytools0-dev inotify-tools jq python3 python3-pip strace ccache golang-go nginx prometheus \
           prometheus-node-exporter make systemd lintian rpm rpmlint debootstrap bindfs python3-seccomp zsh fish \
           groff-base; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${need[*]}" >&2
    $sudo apt-get update -qq
    # Packaged services (nginx, prometheus, the exporter) must not start: the tests run their own on loopback.
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
    $sudo rm -f /usr/sbin/policy-rc.d
fi
# uv (from PyPI, as its users install it): `cachewarden discover` is tested on a cache the real uv made. The tests
# find it with `python3 -c 'import uv; print(uv.find_uv_bin())'`.
if ! python3 -c 'import uv' 2>/dev/null; then
    echo "installing: uv (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check 'uv>=0.4' >&2
fi
# PyYAML: AlertRuleTests and DashboardTests read monitoring/'s rule files with `python3 -c 'import yaml'`.
if ! python3 -c 'import yaml' 2>/dev/null; then
    echo "installing: PyYAML (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check 'pyyaml>=5.1' >&2
fi
# huggingface_hub: HubProfileTests read a local stand-in for the hub with the real library, as tested: 2.4 (its
# reader imports huggingface_hub.errors.LocalEntryNotFoundError, which 0.24 and older do not have; the stand-in
# answers the endpoints 2.4 calls). An older one installed is upgraded.
if ! python3 -c 'import huggingface_hub as h, sys; sys.exit(tuple(int(x) for x in h.__version__.split(".")[:2]) < (2, 4))' 2>/dev/null; then
    echo "installing: huggingface_hub >= 2.4 (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check 'huggingface_hub>=2.4' >&2
fi
