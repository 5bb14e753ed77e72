#!/bin/sh
# One-sided calls across hosts: two hosts in network + UTS namespaces (a veth pair between them,
# host names rmahost-1 and rmahost-2), two host-mode ranks on each, one communicator. Each rank
# runs rma_put_signal's rounds (puts of random pieces into every rank's window, signals, waits,
# checked against the reference the target computes), so puts between the hosts cross the
# socket net and puts within a host take that host's own path.
# Needs root, ip(8) and unshare(1); exits 77 (skip) without them.
# Usage: rma_netns.sh RMA_PUT_SIGNAL_BIN [NET_PLUGIN_SO [RMA_PLUGIN_SO]]: with the net plugin
# (libnccl-net-weft-socket.so) the net between the hosts is that external plugin, loaded as NCCL
# loads one; its library's RMA table then carries the puts between the hosts (NCCL looks for the
# RMA plugin there too). With RMA_PLUGIN_SO (NET_PLUGIN_SO "-": the built-in net)
# NCCL_RMA_PLUGIN names it.
# Either way rank 0's log must say its puts to ranks 2 and 3 go through the RMA plugin and to
# rank 1 through its FIFO (shared memory).
set -u
bin=$1
plugin=${2:-}
rmaplug=${3:-}
[ "$plugin" = - ] && plugin=""
. "$(dirname "$0")/../common/netns.sh"
netns_require
netns_hosts rma wr0 10.78.0

seed=${WEFT_TEST_SEED:-$(date +%s)}
echo "seed $seed (WEFT_TEST_SEED); 4 ranks on 2 hosts${plugin:+, net plugin $plugin}\
${rmaplug:+, RMA plugin $rmaplug}"
extra=""
[ -n "$plugin" ] && extra="NCCL_NET_PLUGIN=$plugin NCCL_NET=weft-socket"
[ -n "$rmaplug" ] && extra="$extra NCCL_RMA_PLUGIN=$rmaplug"
n=4
for r in 0 1 2 3; do
  h=$((r / 2 + 1)) ns=$nsa
  [ $h = 2 ] && ns=$nsb
  ip netns exec $ns unshare --uts sh -c "hostname rmahost-$h && exec env $extra \
    NCCL_COMM_ID=10.78.0.1:29565 NCCL_SOCKET_IFNAME=wr0 WEFT_TEST_SEED=$seed \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL NCCL_BUFFSIZE=262144 \
    WEFT_INIT_TIMEOUT_MS=20000 timeout 90 '$bin' --rank $r $n" >"$dir/rank$r.log" 2>&1 &
  eval "pid$r=\$!"
done
failed=0
for r in 0 1 2 3; do
  eval "wait \$pid$r"; rc=$?
  if [ $rc != 0 ]; then
    echo "FAIL rank $r (exit $rc):"; tail -30 "$dir/rank$r.log" | sed 's/^/  /'; failed=1
  else
    grep -E "rounds of puts|NET/.* selected" "$dir/rank$r.log" | sed 's/^/  /'
  fi
done
# The job really spanned two hosts, and rank 0's one-sided connections took the net to the other
# host and shared memory within its own.
expect() { # PATTERN WHAT
  if ! grep -qE "$1" "$dir/rank0.log"; then echo "FAIL rank 0: $2 (no log line '$1')"; failed=1; fi
}
if [ $failed = 0 ]; then
  expect "4 ranks on 2 node\(s\)" "not 2 hosts"
  expect "one-sided .* to rank 1 via SHM" "rank 1 (same host) not over shared memory"
  expect "one-sided .* to rank 2 via [A-Za-z]" "no one-sided connection to rank 2"
  if [ -n "$plugin" ]; then
    expect "one-sided .* to rank 2 via weft-socket" "the plugin not used"
  else
    expect "one-sided .* to rank 2 via Socket" "rank 2 not over weft's built-in socket net"
  fi
  if [ -n "$plugin$rmaplug" ]; then
    for p in 2 3; do
      expect "one-sided puts to rank $p go through RMA plugin" "rank $p not through the RMA plugin"
    done
    expect "one-sided puts to rank 1 go through its FIFO" "rank 1 (same host) not on its FIFO"
  elif grep -qE "one-sided puts to rank [0-9]+ go through RMA plugin" "$dir/rank0.log"; then
    echo "FAIL rank 0: an RMA plugin was used where none was named or in the net library"
    failed=1
  fi
  if grep -qE "one-sided .* to rank [23] via SHM" "$dir/rank0.log"; then
    echo "FAIL rank 0: a rank on the other host reached through shared memory"; failed=1
  fi
  grep -E "tuning: 4 ranks|one-sided .* to rank|RMA/Plugin: loaded" "$dir/rank0.log" |
    sed 's/^/  /'
fi
[ $failed = 0 ] && echo "one-sided calls across two hosts passed"
exit $failed
