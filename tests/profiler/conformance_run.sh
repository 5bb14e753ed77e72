#!/bin/sh
# weft-conformance profiler: a good plugin passes every test; a plugin whose stopEvent crashes
# and one that leaks per event are flagged (exit 1) with the reason.
#   conformance_run.sh WEFT_CONFORMANCE GOOD.so GOOD2.so CRASHING.so LEAKING.so
set -u
conf=$1 crash=$4 leak=$5
for good in "$2" "$3"; do
  out=$("$conf" profiler "$good" 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 0 ] || { echo "FAILED: $good should pass (rc $rc)"; exit 1; }
  echo "$out" | grep -q "^PASS profiler_nested_event_trees_in_nccl_order" ||
    { echo "FAILED: no PASS line for $good"; exit 1; }
done
out=$("$conf" profiler "$crash" --filter 'profiler_nested*' 2>&1); rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAILED: a crashing stopEvent was not flagged (rc $rc)"; exit 1; }
echo "$out" | grep -q "FAIL profiler_nested_event_trees_in_nccl_order.*SIGSEGV" ||
  { echo "FAILED: the crash is not named"; exit 1; }
out=$("$conf" profiler "$leak" --filter 'profiler_memory*' 2>&1); rc=$?
echo "$out"
[ $rc -eq 1 ] || { echo "FAILED: a leaking plugin was not flagged (rc $rc)"; exit 1; }
echo "$out" | grep -q "FAIL profiler_memory_stays_bounded_over_many_events.*grew by" ||
  { echo "FAILED: the leak is not named"; exit 1; }
echo "conformance_run: good plugin passes, crash and leak flagged"
