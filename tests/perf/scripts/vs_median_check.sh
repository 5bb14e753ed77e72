#!/bin/sh
# tools/bench/vs_median.py on runs whose numbers are known: three --vs JSON files of one
# collective, two sizes. At 8 B the per-run ratios A/B are 1.0, 1.2, 2.0 (median 1.2, B's median
# time 10); at 1 KiB 0.5, 0.9, 1.0 (median 0.9). --bar 1.1 flags 8 B and exits 1; --bar 1.3
# passes with exit 0. Then tools/bench/vs_repeat.sh with -s 0 runs the given weft-perf command
# 3 times and ends with vs_median's summary.
#   vs_median_check.sh TOOLS_BENCH_DIR WEFT_PERF FAKE_LIB
set -u
bench=$1 perf=$2 fake=$3
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/vs_median_check.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run=0
for pair in "10 10 4 8" "12 10 9 10" "20 10 10 10"; do
  set -- $pair
  run=$((run + 1))
  cat >"$dir/run$run.json" <<JSON
{"comparison": [
 {"collective": "all_reduce", "size": 8,
  "out_of_place": {"time_us_a": $1, "time_us_b": $2}, "in_place": {"time_us_a": $1, "time_us_b": $2}},
 {"collective": "all_reduce", "size": 1024,
  "out_of_place": {"time_us_a": $3, "time_us_b": $4}, "in_place": null}
]}
JSON
done
out=$(python3 "$bench/vs_median.py" --bar 1.1 "$dir"/run*.json); rc=$?
echo "$out"
[ "$rc" = 1 ] || fail "--bar 1.1: exit $rc, want 1"
echo "$out" | grep -Eq '^all_reduce +8 out_of_place +3 +12\.000 +10\.000 +1\.200 +2\.000$' ||
  fail "8 B out of place: want medians 12 / 10, ratio 1.2, max 2.0"
echo "$out" | grep -Eq '^all_reduce +1024 out_of_place +3 +9\.000 +10\.000 +0\.900 +1\.000$' ||
  fail "1 KiB: want medians 9 / 10, ratio 0.9, max 1.0"
echo "$out" | grep -q '1024 in_place' && fail "an in-place half that is null became a row"
echo "$out" | grep -Eq '^worst median A/B, all_reduce out_of_place: 1\.200 at 8 bytes  > 1\.10$' ||
  fail "the worst out-of-place median is not 1.2 at 8 B, flagged"
python3 "$bench/vs_median.py" --bar 1.3 "$dir"/run*.json >/dev/null || fail "--bar 1.3: exit $?, want 0"

out=$(WEFT_PERF=$perf sh "$bench/vs_repeat.sh" -s 0 -o "$dir/rep" --bar 1e9 -- \
  all_reduce -np 1 -b 8 -e 64 -f 8 -n 2 -w 1 -c 0 --lib "$fake" --vs "$fake" -T 60); rc=$?
echo "$out"
[ "$rc" = 0 ] || fail "vs_repeat.sh: exit $rc"
echo "$out" | grep -Eq '^# 3 runs in [0-9]+ s' || fail "vs_repeat.sh -s 0: want 3 runs"
[ "$(ls "$dir/rep"/run*.json | wc -l)" = 3 ] || fail "vs_repeat.sh: want 3 JSON files"
echo "$out" | grep -Eq '^all_reduce +64 out_of_place +3 ' || fail "vs_repeat.sh: no 64 B row over 3 runs"
WEFT_PERF=$perf sh "$bench/vs_repeat.sh" -- all_reduce -np 1 >/dev/null 2>&1
[ $? = 2 ] || fail "vs_repeat.sh without --vs: want exit 2"
echo "vs_median and vs_repeat: medians, bar and runs as expected"
