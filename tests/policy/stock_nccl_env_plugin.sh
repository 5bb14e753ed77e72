#!/bin/sh
# Stock NCCL (the libnccl.so.2 PyTorch ships, 2.28.7 or later) started with
# NCCL_ENV_PLUGIN=libnccl-env-weft.so and a policy file: one process, a 1-rank communicator
# through torch.distributed (nccl backend), one AllReduce checked against the input. Passes when
# NCCL's INFO log shows that it loaded weft's env plugin, that the net plugin it loaded is the one
# the policy names, and that NCCL_BUFFSIZE came from the policy. Exit 77 (skip) without python3,
# torch, a GPU or an NCCL that has env plugins.
#
# Usage: stock_nccl_env_plugin.sh [ENV_PLUGIN.so [NET_PLUGIN.so [LOG]]]
#   defaults: build/lib/libnccl-env-weft.so and build/lib/libnccl-net-weft-socket.so; LOG: a
#   temporary file, printed when the check fails.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
env_plugin=${1:-$here/build/lib/libnccl-env-weft.so}
net_plugin=${2:-$here/build/lib/libnccl-net-weft-socket.so}
log=${3:-$(mktemp /tmp/weft-stock-nccl-XXXXXX.log)}
for f in "$env_plugin" "$net_plugin"; do
  if [ ! -f "$f" ]; then echo "stock_nccl_env_plugin: no plugin at '$f'" >&2; exit 1; fi
done
env_plugin=$(cd "$(dirname "$env_plugin")" && pwd)/$(basename "$env_plugin")
net_plugin=$(cd "$(dirname "$net_plugin")" && pwd)/$(basename "$net_plugin")
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3"; exit 77; }

dir=$(mktemp -d /tmp/weft-stock-nccl-XXXXXX)
trap 'rm -rf "$dir"' EXIT
host=$(hostname)
buffsize=8388608
# This host's cluster names the net plugin and a setting; the defaults set another value, so a
# cluster that did not match would show in the log.
cat > "$dir/policy.yaml" <<EOF
version: 1
clusters:
  - name: stock-nccl-check
    description: weft's env plugin inside stock NCCL
    match: {hostname: "$host"}
    net: {plugin: "$net_plugin"}
    settings: {NCCL_BUFFSIZE: $buffsize}
defaults:
  settings: {NCCL_BUFFSIZE: 2097152}
EOF
chmod 644 "$dir/policy.yaml"

cat > "$dir/run.py" <<'EOF'
import os, socket, sys
try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("skip: python3 has no torch"); sys.exit(77)
if not torch.cuda.is_available():
    print("skip: no usable GPU"); sys.exit(77)
v = torch.cuda.nccl.version()
print("torch %s, its NCCL %s" % (torch.__version__, ".".join(map(str, v))))
if tuple(v) < (2, 28, 7):
    print("skip: NCCL %s predates env plugins (2.28.7)" % (v,)); sys.exit(77)
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)
g = torch.Generator().manual_seed(19)
x = torch.randn(1 << 20, generator=g)
y = x.clone().cuda()
dist.all_reduce(y)
torch.cuda.synchronize()
ok = torch.equal(y.cpu(), x)
dist.destroy_process_group()
print("allreduce of 1 rank %s" % ("matches its input" if ok else "DIFFERS from its input"))
sys.exit(0 if ok else 1)
EOF

NCCL_ENV_PLUGIN=$env_plugin WEFT_POLICY=$dir/policy.yaml NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=INIT,ENV,NET \
  python3 "$dir/run.py" > "$log" 2>&1
rc=$?
if [ $rc -eq 77 ]; then grep skip "$log"; exit 77; fi

fail=0
need() { # need WHAT PATTERN: the log has a line matching PATTERN (fixed string)
  line=$(grep -F -m1 -- "$2" "$log")
  if [ -n "$line" ]; then echo "ok   $1: $line"; else echo "FAIL $1: no line with '$2'"; fail=1; fi
}
need "NCCL loaded weft's env plugin" "ENV/Plugin: Using weft-policy"
need "the plugin matched this host" "cluster 'stock-nccl-check'"
need "NCCL took its net plugin from the policy" "NCCL_NET_PLUGIN set by environment to $net_plugin"
need "NCCL loaded that net plugin" "NET/Plugin: Loaded net plugin weft-socket"
need "NCCL took a setting from the policy" "NCCL_BUFFSIZE set by environment to $buffsize"
need "the collective ran" "allreduce of 1 rank matches its input"
if [ $rc -ne 0 ] || [ $fail -ne 0 ]; then
  echo "stock_nccl_env_plugin: FAILED (python exit $rc); the log ($log):"
  cat "$log"
  exit 1
fi
echo "stock_nccl_env_plugin: passed (log: $log)"
