#!/usr/bin/env bash
# Build NCCL's own device-API examples the way a user does — outside this repository, against
# NVIDIA's headers (the nvidia-nccl-cu13 wheel's include/) — and run them on weft's
# libnccl.so.2. A GPU-machine check (issue 39), not a ctest entry.
#
#   tools/devapi-examples/run.sh NCCL_SRC NVIDIA_INCLUDE WEFT_LIBDIR [WORKDIR]
#
#   NCCL_SRC        a checkout of NVIDIA/nccl, or its bare git directory (docs/examples is
#                   taken with `git archive`)
#   NVIDIA_INCLUDE  the directory holding NVIDIA's nccl.h and nccl_device/ (a wheel's
#                   nvidia/nccl/include)
#   WEFT_LIBDIR     the directory holding weft's libnccl.so.2 (build/lib)
#   WORKDIR         where the examples are unpacked and built (default: a fresh mktemp -d)
#
# NTHREADS (the examples' own variable: ranks, one thread and one GPU each) defaults to the
# number of GPUs. Each example passes when it prints its success line; the script exits 0 only
# when every one does, and prints one line per example.
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
src=$1 inc=$2 lib=$3 work=${4:-$(mktemp -d)}
nvcc=${NVCC:-nvcc}
arch=${CUDA_ARCH:-sm_90}
[ -f "$inc/nccl.h" ] && [ -d "$inc/nccl_device" ] || { echo "no nccl.h + nccl_device/ in $inc"; exit 2; }
[ -e "$lib/libnccl.so.2" ] || { echo "no libnccl.so.2 in $lib"; exit 2; }

mkdir -p "$work"
if [ -d "$src/docs/examples" ]; then
  cp -r "$src/docs/examples" "$work/"
else
  git -C "$src" archive HEAD docs/examples | tar -x -C "$work"
  mv "$work/docs/examples" "$work/examples"
fi
ex=$work/examples

fail=0
# 02_alltoall_gin: the proxy GIN type (issue 48); on one GPU it runs one rank, whose puts to
# itself still travel through the proxy and the built-in socket net (staged).
for e in 06_device_api/01_allreduce_lsa 07_kernel_fusion/01_rmsnorm_lsa 06_device_api/02_alltoall_gin; do
  dir=$ex/$e/c
  name=$(basename "$e")
  log=$work/$name.log
  # As the examples' Makefile does, without its repository-relative includes: the example,
  # the examples' common utilities, the group's own include/ (07_kernel_fusion's rmsnorm
  # helpers), NVIDIA's headers; linked against weft's library.
  group=$ex/$(dirname "$e")
  if ! "$nvcc" -std=c++17 -arch="$arch" -I"$inc" -I"$ex/common/include" -I"$group/include" \
      "$dir/main.cu" "$ex/common/src/utils.cc" -L"$lib" -lnccl -lpthread \
      -Xlinker -rpath="$lib" -o "$work/$name" >"$log" 2>&1; then
    echo "FAIL $e: does not build against $inc (see $log)"
    fail=1
    continue
  fi
  # The binary must load weft's library, not another libnccl.so.2 on the loader path.
  if ! LD_LIBRARY_PATH="$lib" ldd "$work/$name" | grep -q "$lib/libnccl.so.2"; then
    echo "FAIL $e: does not load $lib/libnccl.so.2"
    fail=1
    continue
  fi
  if LD_LIBRARY_PATH="$lib" NCCL_NVLS_ENABLE=0 timeout 120 "$work/$name" >>"$log" 2>&1 &&
      grep -qE "Result verification: PASSED|SUCCESS: Example completed|AlltoAll result: PASSED" "$log" &&
      ! grep -qE "FAILED|ERROR" "$log"; then
    echo "PASS $e"
  else
    echo "FAIL $e (see $log):"
    tail -5 "$log" | sed 's/^/    /'
    fail=1
  fi
done
exit $fail
