#!/usr/bin/env bash
# cachewarden-pipe.sh: run `cachewarden run` and turn its JSON lines into one readable line per trim,
# with a running sum of the bytes freed in each directory; `low_disk`, `error` and `dropped` lines are
# shown too, and `ready`/`status`/`stop` lines as a one-line summary per directory.
#
# Usage:
#   Examples/pipe/cachewarden-pipe.sh --config config/cachewarden.conf
#   Examples/pipe/cachewarden-pipe.sh --dir /var/cache/app/images --quota 500MB --dry-run
#   some-command-printing-json-lines | Examples/pipe/cachewarden-pipe.sh --filter-only
#
# Every argument goes to `cachewarden run` unchanged. The one exception is `--filter-only` as the first
# argument: then no watcher is started and the filter reads JSON lines from stdin (for tests, or to read
# back a saved `.jsonl` file).
#
# Which binary: $CACHEWARDEN if set, else `cachewarden` on PATH, else .build/debug/cachewarden in the
# repository this script lives in (after `swift build`).
#
# Stopping: Ctrl-C sends SIGINT to the whole foreground process group. The watcher prints a `stop` line
# per directory and exits 0; the filter ignores the signal, shows those lines, and ends at end of input;
# this script then exits 0. The same holds for SIGTERM sent to the whole group (`timeout`, systemd).
# A signal sent to this script's PID alone waits until the pipeline ends, so to stop it from
# elsewhere, signal the cachewarden process (or the process group).
#
# Needs bash and jq (1.6 or later).
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)

# The jq program. It reads raw lines (`jq -R -n`) and parses each one itself, so a line that is not JSON
# is shown with a marker instead of stopping jq. (If jq stopped, the watcher would lose its reader.)
# State carried from line to line: .freed = { "<dir>": bytes freed by trims seen so far }.
# Events the filter does not mention (write, evict, overflow, rescan, clear) print nothing.
FILTER=$(cat <<'JQ'
# Plural "s" for a count.
def s($n): if $n == 1 then "" else "s" end;

# "now 479232/1000000 B", or "now 479232 B (no quota)" for a directory without a quota.
def fill: if (.quota // 0) > 0 then "now \(.total)/\(.quota) B" else "now \(.total) B (no quota)" end;

# Extras of a trim line, present only when they apply.
def trim_extras:
    (if .reason != "quota" then ", reason \(.reason)" else "" end)
  + (if .short_by then ", still \(.short_by) B above the \(.target) B target (only protected or undeletable files left)" else "" end)
  + (if .dry_run then " [dry run: nothing deleted]" else "" end);

# One line per event; $sum is the directory's running total of freed bytes after this event.
def show($sum):
  if .event == "trim" then
    "\(.time) \(.dir): trimmed \(.removed) file\(s(.removed)), freed \(.freed) B (running total freed \($sum) B), \(fill)\(trim_extras)"
  elif .event == "low_disk" then
    "\(.time) LOW DISK on \(.mount): \(.free) B free of \(.size) B (threshold \(.threshold) B)"
    + (if (.dirs // []) | length > 0 then ", dirs \(.dirs | join(", "))" else "" end)
    + (if (.bytes_per_s // 0) > 0 then ", filling at \(.bytes_per_s) B/s" else "" end)
    + (if .seconds_to_full != null then ", full in about \(.seconds_to_full | floor) s" else "" end)
  elif .event == "error" then
    "\(.time) ERROR"
    + (if .kind then " [\(.kind)]" else "" end)
    + (if .dir then " \(.dir)" else "" end)
    + (if .file then " \(.file)" else "" end)
    + ": \(.message)"
  elif .event == "dropped" then
    "\(.time) WARNING: the watcher dropped \(.count) event line\(s(.count)) (reader too slow); running totals may be low"
  elif .event == "ready" then
    "\(.time) \(.dir): watching \(.path), \(.files) file\(s(.files)), \(fill)"
  elif .event == "status" or .event == "stop" then
    "\(.time) \(.dir): \(if .event == "stop" then "stopped" else "status" end), \(.files) file\(s(.files)), \(fill), freed \($sum) B since start"
  else
    empty
  end;

foreach (inputs | select(length > 0) | . as $raw | (try fromjson catch {event: "_not_json", raw: $raw})) as $e
  ({freed: {}, out: null};
   if ($e | type) != "object" then
     .out = "(not a JSON object) \($e | tojson)"
   elif $e.event == "_not_json" then
     .out = "(not JSON) \($e.raw)"
   else
     ($e.dir // "?") as $d
     | (if $e.event == "trim" then .freed[$d] += ($e.freed // 0) else . end)
     | (.freed[$d] // 0) as $sum
     | .out = ([$e | show($sum)] | first)
   end;
   .out // empty)
JQ
)

run_filter() {
    # --unbuffered: flush after every line, so each trim shows up as it happens even when piped on.
    jq --unbuffered -n -r -R "$FILTER"
}

if ! command -v jq >/dev/null 2>&1; then
    echo "cachewarden-pipe: jq is needed (e.g. apt-get install jq)" >&2
    exit 127
fi

# Filter-only mode: no watcher, JSON lines on stdin.
if [[ ${1:-} == --filter-only ]]; then
    if (($# > 1)); then
        echo "cachewarden-pipe: --filter-only takes no other arguments" >&2
        exit 2
    fi
    run_filter
    exit
fi

# Find the watcher binary.
if [[ -n ${CACHEWARDEN:-} ]]; then
    cachewarden=$CACHEWARDEN
elif cachewarden=$(command -v cachewarden 2>/dev/null); then
    :
elif [[ -x $repo_root/.build/debug/cachewarden ]]; then
    cachewarden=$repo_root/.build/debug/cachewarden
else
    echo "cachewarden-pipe: no cachewarden binary: set CACHEWARDEN, put cachewarden on PATH, or run \`swift build\` in $repo_root" >&2
    exit 127
fi

# Ctrl-C (SIGINT) and SIGTERM reach the watcher, which prints its `stop` lines and exits 0. This shell
# only notes them: with a trap set, bash waits for the pipeline and then carries on, so the script's exit
# status is the pipeline's (0 after a clean stop, the watcher's status if it failed, e.g. 2 for a bad
# config; `pipefail` makes the watcher's failure count).
trap ':' INT TERM

# The filter runs in a subshell that ignores SIGINT and SIGTERM (jq inherits that), so it outlives the
# watcher for the moment it takes to print the final `stop` lines; it ends when the watcher closes the pipe.
"$cachewarden" run "$@" | {
    trap '' INT TERM
    run_filter
}
