#!/usr/bin/env bash
# Keeps the README a user's page and the docs' links whole: fails (exit 1, one line) when README.md is over
# 15,360 bytes, or when a relative link in README.md or docs/*.md names a file or folder that does not exist.
# Links are inline Markdown links, [text](target), outside fenced code blocks; URLs with a scheme (https:, mailto:)
# and links to an anchor in the same page are not checked; a target's #anchor is ignored.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=15360
size=$(wc -c < README.md)
if [ "$size" -gt "$limit" ]; then
    echo "check-readme: README.md is $size bytes, over the $limit-byte limit; move details to docs/" >&2
    exit 1
fi

for file in README.md docs/*.md; do
    [ -e "$file" ] || continue
    dir=$(dirname "$file")
    # One target per line as "LINE TARGET", skipping fenced code blocks and inline code spans.
    while read -r line target; do
        case "$target" in
            ''|'#'*|*://*|mailto:*) continue ;;
        esac
        path=${target%%#*}
        path=${path%% *}        # [text](path "title")
        if [ ! -e "$dir/$path" ]; then
            echo "check-readme: $file:$line: broken link to $target ($dir/$path does not exist)" >&2
            exit 1
        fi
    done < <(awk '
        /^[[:space:]]*(```|~~~)/ { fenced = !fenced; next }
        fenced { next }
        {
            text = $0
            gsub(/`[^`]*`/, "", text)
            while (match(text, /\]\([^)]*\)/)) {
                print FNR, substr(text, RSTART + 2, RLENGTH - 3)
                text = substr(text, RSTART + RLENGTH)
            }
        }' "$file")
done
