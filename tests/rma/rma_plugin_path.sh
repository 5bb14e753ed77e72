#!/bin/sh
# One-sided calls through an RMA plugin on one host: rma_put_signal's forked ranks with shared
# memory off (NCCL_SHM_DISABLE=1, "net"), so every peer's one-sided FIFO would go over the net
# and, with NCCL_RMA_PLUGIN set, every peer goes through the plugin instead. The run's reference
# check must pass, and every rank must log, for every peer, that its puts go through the plugin.
# Usage: rma_plugin_path.sh RMA_PUT_SIGNAL_BIN NRANKS RMA_PLUGIN_SO [broken]
#   broken: the plugin delivers signals before their data (tests/plugins/broken/onesided_wrap.c,
#   BREAK_SIGNAL_FIRST), the binary rma_big_put: the run must fail, and the failure must be the
#   reference check's (a byte that differs), not a pass and not some other error. Under
#   ThreadSanitizer the early signal is a data race, which TSan reports (and halts on) before the
#   check can: there the failure must be that report, the rank's read of the window
#   (rma_big_put.c) against the plugin's write of the put's data (rma_socket_apply), and no
#   other report (a thread leak, a race elsewhere).
#   fault: NRANKS is rma_faults' mode (killed: a wait on rank 2, midput: puts into it, when it
#   dies; stopped: puts into it when it stops): it must pass, with rank 0's puts to rank 2 going
#   through the plugin.
set -u
bin=$1
n=$2
plugin=$3
mode=${4:-good}
log=$(mktemp /tmp/weft-rma-plugin-XXXXXX)
trap 'rm -f "$log"' EXIT
NCCL_RMA_PLUGIN=$plugin NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_SOCKET_IFNAME=lo \
  timeout 100 "$bin" "$n" net >"$log" 2>&1
rc=$?
grep -E "^seed|RMA/Plugin: loaded|matched the reference|, expected|RMA plugin .*returned" "$log" |
  head -20 | sed 's/^/  /'
via=$(grep -cE "one-sided puts to rank [0-9]+ go through RMA plugin" "$log")
if [ "$mode" = fault ]; then
  if [ $rc != 0 ]; then echo "FAIL: exit $rc"; tail -30 "$log" | sed 's/^/  /'; exit 1; fi
  if ! grep -qE "rank 0: one-sided puts to rank 2 go through RMA plugin" "$log"; then
    echo "FAIL: rank 0's puts to rank 2 did not go through the RMA plugin"; exit 1
  fi
  grep -E "no more can|cannot go on|returned ncclRemoteError|timed out|^rank 0: (wait|put)" "$log" |
    head -4 | sed 's/^/  /'
  echo "rank 2 (gone: $n) failed rank 0's call through the RMA plugin in time"; exit 0
fi
want=$((n * (n - 1)))
if [ "$mode" = broken ]; then
  if [ $rc = 0 ]; then
    echo "FAIL: the plugin that signals before its data passed the reference check"; exit 1
  fi
  if [ "$via" != "$want" ]; then
    echo "FAIL: $via of $want peer lines say the plugin was used: the failure proves nothing"
    tail -20 "$log" | sed 's/^/  /'; exit 1
  fi
  if grep -q "WARNING: ThreadSanitizer" "$log"; then
    # Each report, from its WARNING to its SUMMARY: "ok" when it is the expected race.
    verdicts=$(awk '/WARNING: ThreadSanitizer/ { r = $0; inr = 1; next }
      inr { r = r "\n" $0 }
      inr && /SUMMARY: ThreadSanitizer/ {
        print (r ~ /WARNING: ThreadSanitizer: data race/ && r ~ /rank_main .*rma_big_put\.c/ &&
               r ~ /rma_socket_apply/) ? "ok" : "other"
        inr = 0 }' "$log")
    if [ -n "$verdicts" ] && ! printf '%s\n' "$verdicts" | grep -qv '^ok$'; then
      echo "the early signal was caught by ThreadSanitizer: the plugin wrote the put's data" \
        "into the window the rank was reading after its signal (exit $rc)"; exit 0
    fi
    echo "FAIL: a ThreadSanitizer report other than the early signal's race"
    grep -A12 "WARNING: ThreadSanitizer" "$log" | head -60 | sed 's/^/  /'; exit 1
  fi
  if grep -qE "is -?[0-9]+, expected -?[0-9]+" "$log"; then
    echo "the early signal was caught by the reference check (exit $rc)"; exit 0
  fi
  echo "FAIL: the run failed (exit $rc) without the reference check catching the data"
  tail -20 "$log" | sed 's/^/  /'; exit 1
fi
if [ $rc != 0 ]; then echo "FAIL: exit $rc"; tail -30 "$log" | sed 's/^/  /'; exit 1; fi
if [ "$via" != "$want" ]; then
  echo "FAIL: $via of $want (rank, peer) pairs went through the RMA plugin"
  grep -E "one-sided" "$log" | sed 's/^/  /'; exit 1
fi
echo "all $want (rank, peer) pairs went through the RMA plugin; the reference check passed"
