#!/bin/sh
# Two hosts in network + UTS namespaces (a veth pair between them, host names ibnode-1 and
# ibnode-2) run one communicator under a policy file:
#   lab      the hosts match one cluster by host name and NIC: init passes, each rank has the
#            cluster's settings (NCCL_SOCKET_IFNAME applied before bootstrap) and opens the net
#            plugin library the file names
#   nodes    the cluster depends on the node count: chosen after the rank exchange
#   split    the file sends the hosts to different clusters: both ranks fail, naming both
# Needs root, ip(8) and unshare(1); exits 77 (skip) without them.
# Usage: policy_netns.sh RANK_BIN NET_PLUGIN_SO (the external socket plugin, libnccl-net-weft-socket.so)
set -u
bin=$1
plugin=$2
. "$(dirname "$0")/../common/netns.sh"
netns_require
netns_hosts pol wp0 10.77.0

failed=0
# run CASE POLICY EXPECT ENV_OR_ERR: one rank per namespace, both must pass their checks.
run() {
  name=$1 policy=$2 expect=$3 want=$4
  echo "== $name"
  for r in 0 1; do
    ns=$nsa; [ $r = 1 ] && ns=$nsb
    ip netns exec $ns unshare --uts sh -c "hostname ibnode-$((r + 1)) && exec env \
      WEFT_POLICY='$policy' NCCL_COMM_ID=10.77.0.1:29555 POLTEST_EXPECT='$expect' \
      POLTEST_ENV=\"\$0\" POLTEST_ERR=\"\$0\" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET \
      WEFT_INIT_TIMEOUT_MS=20000 timeout 60 '$bin' $r 2" "$want" >"$dir/$name.$r.log" 2>&1 &
    eval "pid$r=\$!"
  done
  wait $pid0; rc0=$?
  wait $pid1; rc1=$?
  for r in 0 1; do
    eval "rc=\$rc$r"
    if [ "$rc" != 0 ]; then
      echo "FAIL $name rank $r (exit $rc):"; sed 's/^/  /' "$dir/$name.$r.log"; failed=1
    else
      grep -E "init (passed|failed)|policy|NET/.* selected" "$dir/$name.$r.log" | sed 's/^/  /'
    fi
  done
}
expect_log() { # CASE RANK PATTERN: the INFO lines say what happened
  if ! grep -q "$3" "$dir/$1.$2.log"; then echo "FAIL $1 rank $2: no log line '$3'"; failed=1; fi
}

cat >"$dir/lab.yaml" <<YAML
version: 1
clusters:
  - name: elsewhere
    match: {hostname: "login-*"}
  - name: lab
    match: {hostname: "ibnode-*", nic: "wp*"}
    net: {plugin: "$plugin", name: weft-socket}
    settings: {NCCL_SOCKET_IFNAME: wp0, NCCL_ALGO: Ring}
YAML
run lab "$dir/lab.yaml" ok "NCCL_NET=weft-socket;NCCL_NET_PLUGIN=$plugin;NCCL_SOCKET_IFNAME=wp0;NCCL_ALGO=Ring"
expect_log lab 0 "cluster 'lab' (line 5) matched: hostname 'ibnode-1' matches 'ibnode-\*'; NIC 'wp0' matches 'wp\*'"
expect_log lab 1 "cluster 'lab' (line 5) matched: hostname 'ibnode-2' matches"
expect_log lab 1 "policy: all 2 ranks agree: lab"
# Where init opens the net (the data path), the file's choice is the one that was opened.
for r in 0 1; do
  if grep -q "NET/.* selected" "$dir/lab.$r.log"; then
    expect_log lab $r "NET/weft-socket plugin $plugin (v[0-9]*) selected"
  else
    echo "  (rank $r opened no net at init: the choice is checked through the environment)"
  fi
done

cat >"$dir/nodes.yaml" <<'YAML'
version: 1
clusters:
  - {name: one-host, match: {nodes: 1}, settings: {NCCL_ALGO: Tree}}
  - {name: multi-host, match: {nodes: {min: 2}}, settings: {NCCL_ALGO: Ring}}
YAML
run nodes "$dir/nodes.yaml" ok "NCCL_ALGO=Ring"
expect_log nodes 0 "choice waits for the rank exchange"
expect_log nodes 0 "cluster 'multi-host' (line 4) matched: nodes 2 is >= 2"

cat >"$dir/split.yaml" <<'YAML'
version: 1
clusters:
  - {name: rack-a, match: {hostname: ibnode-1}, net: {name: Socket}}
  - {name: rack-b, match: {hostname: ibnode-2}, net: {name: Socket}}
YAML
run split "$dir/split.yaml" mismatch \
  "policy mismatch|rank 0 (ibnode-1) chose cluster 'rack-a'|rank 1 (ibnode-2) chose cluster 'rack-b'"

[ $failed = 0 ] && echo "policy two-host test passed"
exit $failed
