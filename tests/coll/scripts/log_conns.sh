#!/bin/sh
# The log algorithms connect lazily and boundedly: forced on n host ranks (one channel), each
# rank makes at most 2*ceil(log2 n) + 2 connections (peers at distance 2^k each way, plus the
# fold partner), exactly 2*log2(n) for RecDoubling on a power of two; NCCL_DEBUG_SUBSYS=INIT
# counts them with their FIFO bytes, and TUNING names the algorithm that ran.
# Usage: log_conns.sh COLL_MATRIX
set -eu
bin=$1
check() { # ranks algo collective expected-max [exact]
  n=$1 algo=$2 coll=$3 max=$4 exact=${5:-}
  op=sum
  case $coll in AllGather|Broadcast) op=none ;; esac
  out=$(WEFT_DEVICE=host NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_MAX_NCHANNELS=1 \
    WEFT_COLL_CASE="$n/shm/$algo/Simple/$coll/float32/$op/7/outofplace/root0" "$bin" 2>&1) ||
    { echo "$out" | tail -20; exit 1; }
  echo "$out" | grep -q "1 passed, 0 failed" || { echo "$out" | tail -20; exit 1; }
  want=$algo
  [ "$algo" = Bruck ] && want="PAT(Bruck)"
  [ "$algo" = RecHalving ] && want="PAT(RecHalving)"
  echo "$out" | grep -q "runs $want/" || { echo "$n $algo: no 'runs $want' line"; exit 1; }
  for r in $(seq 0 $((n - 1))); do
    c=$(echo "$out" | grep -c "rank $r: connected coll" || true)
    echo "$out" | grep "rank $r: connected coll" | tail -1 | grep -q "KiB of FIFOs" ||
      { echo "$n $algo rank $r: no FIFO count"; exit 1; }
    if [ "$c" -gt "$max" ] || { [ -n "$exact" ] && [ "$c" -ne "$exact" ]; }; then
      echo "$n ranks $algo $coll: rank $r made $c connections (max $max${exact:+, want $exact})"
      exit 1
    fi
  done
  echo "$n ranks $algo $coll: ok"
}
check 8 RecDoubling AllReduce 6 6
check 6 RecDoubling AllReduce 6
check 5 Rabenseifner AllReduce 6
check 7 Bruck AllGather 6
check 9 RecHalving ReduceScatter 8
check 6 Binomial Broadcast 6
