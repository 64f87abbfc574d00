#!/usr/bin/env bash
# Builds the library's DocC catalogue (Sources/CacheWarden/CacheWarden.docc) with the toolchain's own `docc`, from
# the symbol graph of the CacheWarden module alone (its dependencies' graphs would add their own pages and warnings),
# and fails on any DocC warning: a broken symbol link, an undocumented parameter. Output: .build/docs (a static
# site: `docc preview` or any web server). No package plugin is needed, so Package.swift stays dependency-lean.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build/symbol-graphs
rm -rf "$graphs" .build/docs && mkdir -p "$graphs/all" "$graphs/CacheWarden"
swift build --target CacheWarden -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs/all" >&2
cp "$graphs"/all/CacheWarden*.symbols.json "$graphs/CacheWarden/"
log=$(docc convert Sources/CacheWarden/CacheWarden.docc --additional-symbol-graph-dir "$graphs/CacheWarden" \
      --output-path .build/docs --fallback-display-name CacheWarden \
      --fallback-bundle-identifier org.cachewarden.CacheWarden 2>&1)
warnings=$(grep -c '^warning' <<<"$log" || true)
if [ "$warnings" -gt 0 ]; then
    grep -A4 '^warning' <<<"$log" >&2
    echo "docs: $warnings DocC warning(s) in the CacheWarden catalogue" >&2
    exit 1
fi
echo "docs: .build/docs built with no warning ($(find .build/docs -name '*.json' | wc -l) pages)" >&2
