#!/usr/bin/env bash
# Fails when the installed binary links ICU (issue 19): `import Foundation` anywhere in the library or the CLI (or a
# dependency that imports it) brings FoundationInternationalization and ICU's ~30 MB data table into the static
# binary built by `make build`; FoundationEssentials does not. Prints the binary's size, unstripped and stripped.
#
#   .ci/check-lean.sh [BINARY]      (default: .build-install/release/cachewarden, what `make build` writes)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build-install/release/cachewarden}
[ -x "$bin" ] || { echo "check-lean: no binary at $bin (run make build first)" >&2; exit 2; }

stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
strip -o "$stripped" "$bin"
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MB (%d bytes)", b / 1e6, b }'; }
echo "check-lean: $bin: $(mb "$bin"), stripped $(mb "$stripped")"

# ICU's C API (collation, break iteration, case mapping, normalization, calendars), Foundation's ICU module, and
# ICU's data table (icudt<version>_dat, also found by strings in a stripped binary).
pattern='_FoundationICU|FoundationInternationalization|(^|[^A-Za-z0-9])(ucol|ubrk|ucal|udat|unum|uloc|unorm2|ures)_[A-Za-z]|u_strToUpper|icudt[0-9]+'
found=$( { nm "$bin" 2>/dev/null || true; } | grep -E -m 5 "$pattern" || true)
if [ -z "$found" ]; then
    found=$(strings -n 6 "$bin" | grep -E -m 5 'icudt[0-9]+' || true)
fi
if [ -n "$found" ]; then
    echo "check-lean: FAILED: $bin links ICU (Foundation or FoundationInternationalization is imported somewhere):" >&2
    echo "$found" | sed 's/^/  /' >&2
    echo "check-lean: import FoundationEssentials (or nothing) instead; see issue 19." >&2
    exit 1
fi
echo "check-lean: no ICU"
