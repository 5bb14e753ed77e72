#!/usr/bin/env bash
# gpu_expect_log.sh [--expect ERE]... -- COMMAND [ARG]...
#
# Runs COMMAND with its stdout and stderr together (passed through as they come) and exits
# with its status, except that a COMMAND that exited 0 fails (1) when some ERE (grep -E)
# matched no line of that output. For the gpu entries that must show weft logging something
# (NCCL_DEBUG=INFO), e.g. "is zero copy" for windows: ctest's PASS_REGULAR_EXPRESSION would
# ignore the exit code, so a run that failed after printing the line would pass. A skip (77)
# and any failure keep their status; FAIL_REGULAR_EXPRESSION still sees the whole output.
set -u
expects=()
while [ $# -gt 0 ]; do
  case "$1" in
    --expect) [ $# -ge 2 ] || { echo "gpu_expect_log: --expect needs a pattern" >&2; exit 2; }
              expects+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "gpu_expect_log: usage: gpu_expect_log.sh [--expect ERE]... -- COMMAND..." >&2
       exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "gpu_expect_log: no command" >&2; exit 2; }
log=$(mktemp "${TMPDIR:-/tmp}/gpu_expect_log.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"
for e in ${expects[@]+"${expects[@]}"}; do
  if ! grep -Eq -- "$e" "$log"; then
    echo "gpu_expect_log: FAILED: the command passed but no line of its output matches '$e'"
    exit 1
  fi
done
exit 0
