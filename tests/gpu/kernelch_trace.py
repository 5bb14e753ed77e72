#!/usr/bin/env python3
"""KernelCh events of a weft-perf run through weft's trace plugin: every collective's channels
have a KernelCh each (sum of the Coll events' nChannels), none unfinished, each with the
duration the executor timed (timer_ns: the GPU's %globaltimer in device mode, the worker's
clock in host mode) between 0 and 10 s.
  kernelch_trace.py WEFT_PERF TRACE_PLUGIN OUTDIR device|host"""
import glob
import json
import os
import shutil
import subprocess
import sys

perf, plugin, out, mode = sys.argv[1:5]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
env = dict(os.environ, WEFT_TRACE_DIR=out, NCCL_PROFILER_PLUGIN=plugin, WEFT_DEVICE=mode,
           NCCL_NVLS_ENABLE="0")
ranks = ["-np", "1", "-g", "2"] if mode == "device" else ["-np", "2"]  # device: 2 share the GPU
cmd = [perf, "all_reduce", "reduce_scatter", *ranks, "-b", "4K", "-e", "4M", "-f", "32",
       "-n", "3", "-w", "1", "-c", "1"]
run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                     timeout=240)
print(run.stdout[-3000:])
if run.returncode != 0:
    if "no CUDA device is usable" in run.stdout or "not available" in run.stdout:
        sys.exit(77)
    sys.exit(f"kernelch_trace: {' '.join(cmd)} exited {run.returncode}")
files = sorted(glob.glob(out + "/weft-trace-*.json"))
if len(files) != 2:
    sys.exit(f"kernelch_trace: {len(files)} trace files in {out}, want 2")
for path in files:
    events = json.load(open(path))["traceEvents"]
    colls = [e for e in events if e.get("cat") == "Coll"]
    kch = [e for e in events if e.get("cat") == "KernelCh"]
    want = sum(e["args"]["nChannels"] for e in colls)
    if not colls or len(kch) != want:
        sys.exit(f"kernelch_trace: {path}: {len(colls)} collectives with {want} channels in all, "
                 f"{len(kch)} KernelCh events")
    for e in kch:
        a = e["args"]
        if a.get("unfinished") or not 0 < a.get("timer_ns", 0) < 10_000_000_000:
            sys.exit(f"kernelch_trace: {path}: KernelCh without a timed duration: {e}")
    print(f"{os.path.basename(path)}: {len(colls)} collectives, {len(kch)} KernelCh, "
          f"timer_ns {min(e['args']['timer_ns'] for e in kch)}.."
          f"{max(e['args']['timer_ns'] for e in kch)}")
print("kernelch_trace: ok")
