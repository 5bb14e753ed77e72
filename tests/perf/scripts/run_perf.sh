#!/bin/sh
# Runs weft-perf (or any command) and judges its result for ctest.
#   run_perf.sh [--rc N] [--out ERE]… [--err ERE]… [--not-out ERE]… [--not-err ERE]…
#               [--skip-if ERE]
#               [--ranks N --comm-id HOST:PORT] [--json FILE] [--vs-json FILE]
#               [--geomean-within F] [--png FILE] [--warmup-calls FILE MODE W N US]
#               -- command args…
# --rc N        expected exit code (default 0)
# --out/--err   extended regexes that must match stdout / stderr (of rank 0 with --ranks)
# --not-out     a regex that must not match stdout
# --not-err     a regex that must not match stderr
# --skip-if     when the exit code is not --rc and stdout+stderr match, exit 77 (ctest: skipped)
# --ranks N     start N copies at once as ranks of one job (WEFT_RANK/WEFT_NRANKS and
#               NCCL_COMM_ID set), as a launcher would; every copy must exit with --rc
# --json FILE   FILE must be valid JSON with results and no #wrong (checked with cmake -P)
# --vs-json FILE  as --json, and FILE holds a --vs run: 2 libraries, as many rows of each,
#               one comparison entry per pair of rows (vs_json_check.cmake)
# --geomean-within F  --vs: stdout has comparison blocks, and every geometric mean of a ratio
#               they print is between 1/F and F (the same library against itself: near 1)
# --png FILE    FILE must exist, start with the PNG signature and be under 200 KB (cairo
#               compresses; the hand-written writer it replaced did not)
# --warmup-calls FILE MODE W N US  FILE is the stand-in library's call trace
#               (FAKE_NCCL_TRACE, removed before the run); MODE turn: under --vs every size's
#               turn starts with >= W untimed calls lasting >= US microseconds, right before its
#               N timed ones; MODE sweep: one warm-up sweep of W calls per size, as nccl-tests
#               (warmup_calls.awk; run with -c 0 and one collective)
set -u
here=$(cd "$(dirname "$0")" && pwd)
rc_want=0 outs="" errs="" not_outs="" not_errs="" skip_if="" ranks=0 comm_id="" json="" vs_json=""
geomean_within="" png="" calls=""
nl='
'
while [ $# -gt 0 ]; do
  case "$1" in
    --rc) rc_want=$2; shift 2 ;;
    --out) outs="$outs$2$nl"; shift 2 ;;
    --err) errs="$errs$2$nl"; shift 2 ;;
    --not-out) not_outs="$not_outs$2$nl"; shift 2 ;;
    --not-err) not_errs="$not_errs$2$nl"; shift 2 ;;
    --skip-if) skip_if=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --comm-id) comm_id=$2; shift 2 ;;
    --json) json=$2; rm -f "$json"; shift 2 ;;
    --vs-json) vs_json=$2; rm -f "$vs_json"; shift 2 ;;
    --geomean-within) geomean_within=$2; shift 2 ;;
    --png) png=$2; rm -f "$png"; shift 2 ;;
    --warmup-calls) calls=$2 calls_mode=$3 calls_w=$4 calls_n=$5 calls_us=$6; rm -f "$calls"
      shift 6 ;;
    --) shift; break ;;
    *) echo "run_perf.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/run_perf.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
status=0
if [ "$ranks" -gt 0 ]; then
  r=$((ranks - 1))
  pids=""
  while [ "$r" -ge 0 ]; do
    WEFT_RANK=$r WEFT_NRANKS=$ranks NCCL_COMM_ID=$comm_id "$@" >"$tmp/out.$r" 2>"$tmp/err.$r" &
    pids="$pids $!:$r"
    r=$((r - 1))
  done
  for pr in $pids; do
    wait "${pr%%:*}"
    rc=$?
    echo "rank ${pr##*:} exited with $rc"
    if [ "$rc" -ne "$rc_want" ]; then status=1; fi
  done
  cp "$tmp/out.0" "$tmp/out"
  cat "$tmp"/err.* >"$tmp/err"
else
  "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  echo "exited with $rc"
  if [ "$rc" -ne "$rc_want" ]; then status=1; fi
fi
echo "----- stdout"; cat "$tmp/out"
echo "----- stderr"; cat "$tmp/err"
echo "-----"
if [ "$status" -ne 0 ] && [ -n "$skip_if" ] &&
  cat "$tmp/out" "$tmp/err" | grep -Eq -- "$skip_if"; then
  echo "SKIP: output matches '$skip_if'"
  exit 77
fi
[ "$status" -eq 0 ] || echo "FAIL: expected exit code $rc_want"
check() { # file regex want(1 match / 0 no match)
  if grep -Eq -- "$2" "$1"; then found=1; else found=0; fi
  if [ "$found" -ne "$3" ]; then
    if [ "$3" -eq 1 ]; then
      echo "FAIL: no match for '$2' in $(basename "$1")"
    else
      echo "FAIL: unexpected match for '$2'"
    fi
    status=1
  fi
}
check_all() { # regexes file want
  printf '%s' "$1" | {
    while IFS= read -r re; do [ -n "$re" ] && check "$2" "$re" "$3"; done
    exit $status
  }
}
check_all "$outs" "$tmp/out" 1 || status=1
check_all "$errs" "$tmp/err" 1 || status=1
check_all "$not_outs" "$tmp/out" 0 || status=1
check_all "$not_errs" "$tmp/err" 0 || status=1
if [ -n "$json" ]; then
  "${CMAKE_COMMAND:-cmake}" -DFILE="$json" -P "$here/json_check.cmake" || status=1
fi
if [ -n "$vs_json" ]; then
  "${CMAKE_COMMAND:-cmake}" -DFILE="$vs_json" -P "$here/json_check.cmake" || status=1
  "${CMAKE_COMMAND:-cmake}" -DFILE="$vs_json" -P "$here/vs_json_check.cmake" || status=1
fi
if [ -n "$geomean_within" ]; then
  # "# A/B <test>, N sizes: busbw geomean X (in-place Y), time geomean Z (in-place W)"
  if ! awk -v f="$geomean_within" '
    /^# A\/B .* geomean / {
      blocks++
      line = $0
      while (match(line, /geomean [0-9.]+|in-place [0-9.]+/)) {
        v = substr(line, RSTART, RLENGTH); sub(/^[a-z-]+ /, "", v); v += 0
        n++
        if (v < 1 / f || v > f) { print "FAIL: ratio " v " outside [1/" f ", " f "]: " $0; bad = 1 }
        line = substr(line, RSTART + RLENGTH)
      }
    }
    END {
      if (blocks == 0 || n == 0) { print "FAIL: no comparison with ratios in the output"; exit 1 }
      print blocks " comparison block(s), " n " ratios within [1/" f ", " f "]"
      exit bad
    }' "$tmp/out"; then
    status=1
  fi
fi
if [ -n "$png" ]; then
  if [ -s "$png" ] && head -c 8 "$png" | od -An -tx1 | tr -d ' \n' | grep -q '^89504e470d0a1a0a$'
  then
    echo "$png: a PNG of $(wc -c < "$png") bytes"
    if [ "$(wc -c < "$png")" -ge 200000 ]; then
      echo "FAIL: $png is 200 KB or more"
      status=1
    fi
  else
    echo "FAIL: $png is missing or not a PNG"
    status=1
  fi
fi
if [ -n "$calls" ]; then
  awk -v mode="$calls_mode" -v w="$calls_w" -v n="$calls_n" -v us="$calls_us" \
    -f "$here/warmup_calls.awk" "$calls" || status=1
fi
[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
