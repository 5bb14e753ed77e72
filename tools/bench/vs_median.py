#!/usr/bin/env python3
"""Per-size medians over repeated `weft-perf --vs` runs.

One `--vs` run takes turns size by size, but a single turn of a microsecond-scale call moves by
10-30 % from run to run. Give this the JSON files (-J) of several runs made with the same
arguments; it prints, per collective, size and placement, the median time of A and of B over
the runs, the median of the per-run ratios A/B, and the worst median ratio, so a bar such as
"A <= 1.05 x B at every size" is read from medians, not from single turns.

usage: vs_median.py [--bar 1.05] RUN.json [RUN.json ...]
exit status: 0, or 1 when --bar is given and some median ratio exceeds it.
"""
import json
import statistics
import sys


def main(argv):
    bar = None
    files = []
    i = 0
    while i < len(argv):
        if argv[i] == "--bar":
            bar = float(argv[i + 1])
            i += 2
            continue
        files.append(argv[i])
        i += 1
    if not files:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    cells = {}
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        for row in doc.get("comparison", []):
            for half in ("out_of_place", "in_place"):
                h = row.get(half)
                if not h or h.get("time_us_a") is None or h.get("time_us_b") is None:
                    continue
                key = (row["collective"], row["size"], half)
                cells.setdefault(key, []).append((h["time_us_a"], h["time_us_b"]))
    if not cells:
        print("vs_median: no comparison rows in the files (were they written by --vs -J?)",
              file=sys.stderr)
        return 2
    worst = {}
    print("%-16s %12s %-12s %5s %10s %10s %8s %8s" %
          ("collective", "size", "placement", "runs", "A us", "B us", "A/B", "max"))
    for key in sorted(cells):
        pts = cells[key]
        a = statistics.median(p[0] for p in pts)
        b = statistics.median(p[1] for p in pts)
        ratios = [p[0] / p[1] for p in pts if p[1] > 0]
        r = statistics.median(ratios) if ratios else float("nan")
        print("%-16s %12d %-12s %5d %10.3f %10.3f %8.3f %8.3f" %
              (key[0], key[1], key[2], len(pts), a, b, r, max(ratios) if ratios else r))
        wk = (key[0], key[2])
        if wk not in worst or r > worst[wk][0]:
            worst[wk] = (r, key[1])
    print()
    over = 0
    for (coll, half), (r, size) in sorted(worst.items()):
        flag = ""
        if bar is not None and r > bar:
            flag = "  > %.2f" % bar
            over += 1
        print("worst median A/B, %s %s: %.3f at %d bytes%s" % (coll, half, r, size, flag))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
