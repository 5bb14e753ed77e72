#!/bin/sh
# Repeats one `weft-perf --vs` comparison for a while and reads the bar from the medians.
#   vs_repeat.sh [-s SECONDS] [-o DIR] [--bar R] -- WEFT-PERF-ARGS…
# Runs `weft-perf WEFT-PERF-ARGS -J DIR/runN.json` until SECONDS (default 120) have passed, at
# least 3 times; WEFT-PERF-ARGS must hold --vs. Then vs_median.py over the runs: per collective,
# size and placement the median time of A and B and of the per-run ratio A/B, and the worst
# median per collective; exits 1 when one is above --bar (default 1.05). A single run's rows
# of microsecond calls move by 10-30 %, so a bar is read over runs (docs/perf.md). WEFT_PERF
# names the binary (default: build/bin/weft-perf beside this checkout).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
perf=${WEFT_PERF:-$here/../../build/bin/weft-perf}
secs=120 dir="" bar=1.05
while [ $# -gt 0 ]; do
  case "$1" in
    -s) secs=$2; shift 2 ;;
    -o) dir=$2; shift 2 ;;
    --bar) bar=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "vs_repeat.sh: unknown option '$1' (put weft-perf's arguments after --)" >&2; exit 2 ;;
  esac
done
case " $* " in
  *" --vs "*) ;;
  *) echo "vs_repeat.sh: the weft-perf arguments need --vs PATH" >&2; exit 2 ;;
esac
[ -x "$perf" ] || { echo "vs_repeat.sh: no weft-perf at $perf (set WEFT_PERF)" >&2; exit 2; }
[ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/vs_repeat.XXXXXX")
mkdir -p "$dir"
start=$(date +%s) n=0
while [ "$n" -lt 3 ] || [ $(($(date +%s) - start)) -lt "$secs" ]; do
  n=$((n + 1))
  if ! "$perf" "$@" -J "$dir/run$n.json" >"$dir/run$n.txt" 2>&1; then
    echo "vs_repeat.sh: run $n failed; its output: $dir/run$n.txt" >&2
    tail -5 "$dir/run$n.txt" >&2
    exit 1
  fi
done
echo "# $n runs in $(($(date +%s) - start)) s, JSON in $dir"
exec python3 "$here/vs_median.py" --bar "$bar" "$dir"/run*.json
