#!/usr/bin/env python3
"""The RAS service's cost: the same weft-perf run with NCCL_RAS_ENABLE=1 and =0, alternated run
by run (on, off, on, off, ...), then per size and placement the median time of each setting and
the median of the per-pair ratios on/off. Host mode unless WEFT_DEVICE says otherwise.

usage: ras_cost.py [-r PAIRS] [--perf PATH] [--port P] -- WEFT-PERF-ARGS
  -r PAIRS    on/off pairs to run (default 7)
  --perf      the weft-perf binary (default: build/bin/weft-perf beside this checkout)
  --port      NCCL_RAS_ADDR's port for the runs (default 39111, on 127.0.0.1)
example (docs/perf-notes.md):
  ras_cost.py -r 9 -- -np 8 all_reduce -b 8 -e 8 -n 2000 -w 200 -c 0
  ras_cost.py -r 7 -- -np 8 all_reduce -b 64M -e 64M -n 5 -w 2 -c 0
exit status: 0, or 2 on a usage error or a failed run."""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main(argv):
    pairs, port = 7, 39111
    perf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin",
                        "weft-perf")
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "-r":
            pairs = int(argv[i + 1])
        elif argv[i] == "--perf":
            perf = argv[i + 1]
        elif argv[i] == "--port":
            port = int(argv[i + 1])
        else:
            print(__doc__, file=sys.stderr)
            return 2
        i += 2
    args = argv[i + 1:]
    if not args or pairs < 1:
        print(__doc__, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="ras_cost.")
    times = {}  # (size, placement, setting) -> [us per run]
    ratios = {}  # (size, placement) -> [on/off per pair]
    for p in range(pairs):
        got = {}
        for on in (1, 0):
            out = os.path.join(tmp, "run%d-%d.json" % (p, on))
            env = dict(os.environ, NCCL_RAS_ENABLE=str(on),
                       NCCL_RAS_ADDR="127.0.0.1:%d" % port)
            env.setdefault("WEFT_DEVICE", "host")
            r = subprocess.run([perf] + args + ["-J", out], env=env, stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                print("ras_cost: run %d (RAS %s) exited %d" % (p, "on" if on else "off",
                                                                r.returncode), file=sys.stderr)
                return 2
            with open(out) as f:
                for row in json.load(f)["results"]:
                    for half in ("out_of_place", "in_place"):
                        h = row.get(half)
                        if h and h.get("time_us") is not None:
                            key = (row["size"], half)
                            got[key + (on,)] = h["time_us"]
                            times.setdefault(key + (on,), []).append(h["time_us"])
        for key in {(k[0], k[1]) for k in got}:
            if (key + (1,)) in got and (key + (0,)) in got and got[key + (0,)] > 0:
                ratios.setdefault(key, []).append(got[key + (1,)] / got[key + (0,)])
        print("pair %d of %d done" % (p + 1, pairs), file=sys.stderr, flush=True)
    print("%12s %-12s %5s %12s %12s %10s %16s" %
          ("size", "placement", "pairs", "on us (med)", "off us (med)", "on/off", "ratio min-max"))
    for key in sorted(ratios):
        on, off, rs = times[key + (1,)], times[key + (0,)], ratios[key]
        print("%12d %-12s %5d %12.1f %12.1f %10.3f %7.2f-%-7.2f" %
              (key[0], key[1], len(rs), statistics.median(on), statistics.median(off),
               statistics.median(rs), min(rs), max(rs)))
        print("%12s %-12s       on:  %s" % ("", "", " ".join("%.0f" % t for t in on)))
        print("%12s %-12s       off: %s" % ("", "", " ".join("%.0f" % t for t in off)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
