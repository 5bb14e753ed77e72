#!/bin/sh
# Runs weft-perf (or any command) and judges its result for ctest.
#   run_perf.sh [--rc N] [--out ERE]… [--err ERE]… [--not-out ERE]… [--skip-if ERE]
#               [--ranks N --comm-id HOST:PORT] [--json FILE] -- command args…
# --rc N        expected exit code (default 0)
# --out/--err   extended regexes that must match stdout / stderr (of rank 0 with --ranks)
# --not-out     a regex that must not match stdout
# --skip-if     when the exit code is not --rc and stdout+stderr match, exit 77 (ctest: skipped)
# --ranks N     start N copies at once as ranks of one job (WEFT_RANK/WEFT_NRANKS and
#               NCCL_COMM_ID set), as a launcher would; every copy must exit with --rc
# --json FILE   FILE must be valid JSON with results and no #wrong (checked with cmake -P)
set -u
here=$(cd "$(dirname "$0")" && pwd)
rc_want=0 outs="" errs="" not_outs="" skip_if="" ranks=0 comm_id="" json=""
nl='
'
while [ $# -gt 0 ]; do
  case "$1" in
    --rc) rc_want=$2; shift 2 ;;
    --out) outs="$outs$2$nl"; shift 2 ;;
    --err) errs="$errs$2$nl"; shift 2 ;;
    --not-out) not_outs="$not_outs$2$nl"; shift 2 ;;
    --skip-if) skip_if=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --comm-id) comm_id=$2; shift 2 ;;
    --json) json=$2; rm -f "$json"; shift 2 ;;
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
if [ -n "$json" ]; then
  "${CMAKE_COMMAND:-cmake}" -DFILE="$json" -P "$here/json_check.cmake" || status=1
fi
[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
