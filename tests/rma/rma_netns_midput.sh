#!/bin/sh
# A put across hosts to a peer that dies while it streams: two hosts in network + UTS
# namespaces, ranks 0 and 1 on the first, rank 2 on the second (rma_faults' midput: rank 0 puts
# 8 MiB at a time into rank 2's window; rank 2 dies by SIGKILL once the first put arrived). No
# process of the other host can be watched from here: the put must fail through the connection
# to rank 2, within seconds (rma_faults checks < 8 s, WEFT_TIMEOUT_MS being 60 s), with
# ncclRemoteError and an error naming rank 0 and rank 2.
# Needs root, ip(8) and unshare(1); exits 77 (skip) without them.
# Usage: rma_netns_midput.sh RMA_FAULTS_BIN [RMA_PLUGIN_SO]: with the RMA plugin (NCCL_RMA_PLUGIN)
# the puts to rank 2 go through it, else through the one-sided FIFO over weft's built-in net.
set -u
bin=$1
rmaplug=${2:-}
. "$(dirname "$0")/../common/netns.sh"
netns_require
netns_hosts rmk wk0 10.79.0

echo "3 ranks on 2 hosts, rank 2 dies mid-put${rmaplug:+; RMA plugin $rmaplug}"
extra=""
[ -n "$rmaplug" ] && extra="NCCL_RMA_PLUGIN=$rmaplug"
for r in 0 1 2; do
  h=1 ns=$nsa
  [ $r = 2 ] && h=2 ns=$nsb
  ip netns exec $ns unshare --uts sh -c "hostname rmkhost-$h && exec env $extra \
    NCCL_COMM_ID=10.79.0.1:29566 NCCL_SOCKET_IFNAME=wk0 NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,NET WEFT_INIT_TIMEOUT_MS=20000 timeout 60 '$bin' --rank $r 3 midput" \
    >"$dir/rank$r.log" 2>&1 &
  eval "pid$r=\$!"
done
failed=0
for r in 0 1 2; do
  eval "wait \$pid$r"; rc=$?
  want=0
  [ $r = 2 ] && want=137 # killed by SIGKILL on purpose (timeout(1) reports 128 + 9)
  if [ $rc != $want ]; then
    echo "FAIL rank $r (exit $rc, expected $want):"; tail -30 "$dir/rank$r.log" | sed 's/^/  /'
    failed=1
  fi
done
expect() { # PATTERN WHAT
  if ! grep -qE "$1" "$dir/rank0.log"; then echo "FAIL rank 0: $2 (no log line '$1')"; failed=1; fi
}
if [ $failed = 0 ]; then
  expect "3 ranks on 2 node\(s\)" "not 2 hosts"
  expect "one-sided .* to rank 2 via Socket" "rank 2 not reached over the net"
  if [ -n "$rmaplug" ]; then
    expect "one-sided puts to rank 2 go through RMA plugin" "rank 2 not through the RMA plugin"
  fi
  grep -E "^rank 0: put" "$dir/rank0.log" | sed 's/^/  /'
fi
[ $failed = 0 ] && echo "the put to a peer that died on the other host failed promptly"
exit $failed
