#!/bin/sh
# Four hosts of eight ranks in network + UTS namespaces (host names weft-hier-0..3, each its own
# network stack on a veth to a bridge in a fifth namespace), host-major ranks, weft-perf as each
# rank (WEFT_RANK/WEFT_NRANKS): the default small AllReduce runs RecDoubling hierarchically (a
# binomial reduce within each host over shared memory, recursive doubling among the four leaders
# over the net, a broadcast within each host), every result checked by weft-perf on random data
# (--seed: the seed printed below), in place and out of place, every op, 8 B to 64 KiB; then
# the same forced flat (WEFT_LOG_HIER=0) and on 3 hosts of 5 ranks with NCCL_ALGO=RecDoubling
# (neither count a power of two: the leaders fold).
# Needs root, ip(8) and unshare(1); exits 77 (skip) without them.
# Usage: log_hier_netns.sh WEFT_PERF
set -u
perf=$1
. "$(dirname "$0")/../../common/netns.sh"
netns_require
seed=${WEFT_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
seed=$((seed % 1000000 + 1))
echo "log_hier_netns: seed $seed (WEFT_TEST_SEED)"
tag=wh$$
sw=${tag}s
dir=$(mktemp -d /tmp/weft-hier-netns-XXXXXX)
cleanup() {
  for h in 0 1 2 3; do ip netns del ${tag}$h 2>/dev/null; done
  ip netns del $sw 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add $sw 2>/dev/null || { echo "SKIP: cannot create network namespaces"; exit 77; }
ip -n $sw link add br0 type bridge && ip -n $sw link set br0 up && ip -n $sw link set lo up ||
  exit 1
for h in 0 1 2 3; do
  ns=${tag}$h
  ip netns add $ns || exit 1
  ip link add h$h netns $ns type veth peer name p$h netns $sw || exit 1
  ip -n $sw link set p$h master br0 && ip -n $sw link set p$h up || exit 1
  ip -n $ns addr add 10.79.0.$((h + 1))/24 dev h$h || exit 1
  ip -n $ns link set lo up && ip -n $ns link set h$h up || exit 1
done

failed=0
port=29570
# run NAME HOSTS PER_HOST ENV...: one weft-perf rank per process, host-major.
run() {
  name=$1 H=$2 P=$3
  shift 3
  n=$((H * P)) pids="" port=$((port + 1))
  echo "== $name: $H hosts x $P ranks $*"
  for h in $(seq 0 $((H - 1))); do
    for i in $(seq 0 $((P - 1))); do
      r=$((h * P + i))
      ip netns exec ${tag}$h unshare --uts sh -c "hostname weft-hier-$h && exec env \
        WEFT_DEVICE=host WEFT_RANK=$r WEFT_NRANKS=$n NCCL_COMM_ID=10.79.0.1:$port \
        NCCL_SOCKET_IFNAME=h$h NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING $* \
        timeout 150 '$perf' all_reduce -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -o all --seed $seed" \
        >"$dir/$name.$r.log" 2>&1 &
      pids="$pids $!"
    done
  done
  r=0
  for p in $pids; do
    if ! wait "$p"; then
      echo "FAIL $name: rank $r exited with an error:"; grep -v "NCCL INFO" "$dir/$name.$r.log" |
        tail -20 | sed 's/^/  /'
      failed=1
    fi
    r=$((r + 1))
  done
  if ! grep -q "Out of bounds values : 0 OK" "$dir/$name.0.log"; then
    echo "FAIL $name: weft-perf found wrong results:"; grep -v "NCCL INFO" "$dir/$name.0.log" |
      tail -30 | sed 's/^/  /'
    failed=1
  fi
  grep -E "^ +8 +2 +float" "$dir/$name.0.log" | head -1 | sed 's/^/  8 B sum: /'
}
# expect NAME PATTERN / expect_not NAME PATTERN: rank 0's INFO lines say what ran.
expect() {
  grep -q "$2" "$dir/$1.0.log" || { echo "FAIL $1: rank 0 has no log line '$2'"; failed=1; }
}
expect_not() {
  ! grep -q "$2" "$dir/$1.0.log" || { echo "FAIL $1: rank 0 logged '$2'"; failed=1; }
}
run hier 4 8
expect hier "4 hosts of 8 ranks, host-major: RecDoubling runs hierarchically"
expect hier "AllReduce seq [0-9]* runs RecDoubling/"
run flat 4 8 WEFT_LOG_HIER=0 NCCL_ALGO=RecDoubling
expect_not flat "hierarchically"
expect flat "AllReduce seq [0-9]* runs RecDoubling/"
run fold 3 5 NCCL_ALGO=RecDoubling
expect fold "3 hosts of 5 ranks, host-major: RecDoubling runs hierarchically"
[ $failed = 0 ] && echo "log_hier_netns: passed"
exit $failed
