# Sourced by the tests that run "hosts" in network namespaces (root only).
#   netns_require: exits 77 (skip) unless this is root with ip, unshare, hostname and timeout.
#   netns_pair A B IF NET: namespaces A and B joined by a veth pair named IF at both ends, with
#     NET.1/24 in A and NET.2/24 in B, lo and IF up. Exits 77 when namespaces cannot be made
#     (a container without the right), 1 on any later failure. The caller deletes A and B.
#   netns_hosts TAG IF NET: the usual set-up of one test: namespaces nsa and nsb (named after
#     TAG and this shell's pid) paired as netns_pair does, a scratch directory dir
#     (/tmp/weft-TAG-XXXXXX), and traps that delete all three at exit and exit 1 on INT/TERM.
netns_require() {
  if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root for network namespaces"; exit 77; fi
  for t in ip unshare hostname timeout; do
    command -v $t >/dev/null 2>&1 || { echo "SKIP: needs $t"; exit 77; }
  done
}

netns_pair() {
  if ! ip netns add "$1" 2>/dev/null || ! ip netns add "$2" 2>/dev/null; then
    echo "SKIP: cannot create network namespaces"; exit 77
  fi
  ip link add "$3" netns "$1" type veth peer name "$3" netns "$2" || exit 1
  ip -n "$1" addr add "$4.1/24" dev "$3" && ip -n "$2" addr add "$4.2/24" dev "$3" || exit 1
  for ns in "$1" "$2"; do ip -n "$ns" link set lo up && ip -n "$ns" link set "$3" up || exit 1; done
}

netns_hosts() {
  nsa=weft$1$$a
  nsb=weft$1$$b
  dir=$(mktemp -d "/tmp/weft-$1-XXXXXX")
  trap 'ip netns del $nsa 2>/dev/null; ip netns del $nsb 2>/dev/null; rm -rf "$dir"' EXIT
  trap 'exit 1' INT TERM
  netns_pair "$nsa" "$nsb" "$2" "$3"
}
