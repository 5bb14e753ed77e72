#!/usr/bin/env python3
"""The trace plugin's Prometheus files (WEFT_METRICS_DIR) after prof_tree's 'trace' case:
one file per rank, each parsed by prometheus_client's text parser when it is installed
(Debian: python3-prometheus-client) and always by the strict parser below (the exposition
format's line grammar), holding what run_ops did: AllReduce x2, Broadcast, Reduce, AllGather,
ReduceScatter x1, of COUNT float32 (AllGather and ReduceScatter: COUNT x nranks), with
consistent derived gauges.
  check_metrics.py DIR NRANKS [COUNT]"""
import glob, math, re, sys

d, nranks = sys.argv[1], int(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
fails = []


def check(c, what):
    print(("ok   " if c else "FAIL ") + what)
    if not c:
        fails.append(what)


NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(?:\{(%s(?:,%s)*)?\})? (\S+)(?: -?\d+)?$" % (NAME, LABEL, LABEL))


def strict_parse(text):
    """{(name, frozenset(labels)): value}; raises ValueError on a line outside the grammar."""
    out, types = {}, {}
    for i, ln in enumerate(text.split("\n")):
        if ln == "":
            continue
        if ln.startswith("# HELP ") or ln.startswith("# TYPE "):
            parts = ln.split(" ", 3)
            if len(parts) < 4 or not re.match("^%s$" % NAME, parts[2]):
                raise ValueError("line %d: bad comment: %r" % (i + 1, ln))
            if parts[1] == "TYPE":
                if parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ValueError("line %d: bad type %r" % (i + 1, parts[3]))
                types[parts[2]] = parts[3]
            continue
        if ln.startswith("#"):
            continue
        m = SAMPLE.match(ln)
        if not m:
            raise ValueError("line %d: not a sample: %r" % (i + 1, ln))
        name, labels, val = m.group(1), m.group(2) or "", m.group(3)
        if name not in types:
            raise ValueError("line %d: %s has no TYPE line before it" % (i + 1, name))
        v = float(val)
        if math.isnan(v) or v < 0:
            raise ValueError("line %d: value %r" % (i + 1, val))
        lab = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels))
        key = (name, lab)
        if key in out:
            raise ValueError("line %d: duplicate sample" % (i + 1))
        out[key] = v
    if not text.endswith("\n"):
        raise ValueError("no final newline")
    return out


files = sorted(glob.glob(d + "/weft-*.prom"))
check(len(files) == nranks, "%d metrics files (want %d)" % (len(files), nranks))
check(not glob.glob(d + "/*.tmp"), "no temporary file left")
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    text_string_to_metric_families = None
    print("prometheus_client is not installed: the strict parser only")
ranks = set()
for f in files:
    text = open(f).read()
    if text_string_to_metric_families:
        try:
            fams = list(text_string_to_metric_families(text))
            check(len(fams) >= 6, "%s: prometheus_client parses %d families" % (f, len(fams)))
        except Exception as e:
            check(False, "%s: prometheus_client parses: %s" % (f, e))
    try:
        s = strict_parse(text)
    except ValueError as e:
        check(False, "%s: strict parse: %s" % (f, e))
        continue
    by = {}
    for (name, lab), v in s.items():
        l = dict(lab)
        ranks.add(int(l["rank"]))
        check(l["nranks"] == str(nranks), "nranks label")
        by[(name, l["collective"], int(l["size_le_bytes"]))] = v
    want = {"AllReduce": (2, count * 4), "Broadcast": (1, count * 4), "Reduce": (1, count * 4),
            "AllGather": (1, count * 4 * nranks), "ReduceScatter": (1, count * 4 * nranks)}
    for coll, (n, b) in want.items():
        bucket = 1
        while bucket < b:
            bucket *= 2
        c = by.get(("weft_collective_total", coll, bucket))
        check(c == n, "%s %s: %s finished in bucket %d (want %d)" % (f[-12:], coll, c, bucket, n))
        tb = by.get(("weft_collective_bytes_total", coll, bucket))
        check(tb == n * b, "%s bytes %s (want %d)" % (coll, tb, n * b))
        secs = by.get(("weft_collective_seconds_total", coll, bucket), 0)
        alg = by.get(("weft_collective_algbw_bytes_per_second", coll, bucket), -1)
        bus = by.get(("weft_collective_busbw_bytes_per_second", coll, bucket), -1)
        fac = {"AllReduce": 2.0 * (nranks - 1) / nranks, "AllGather": (nranks - 1) / nranks,
               "ReduceScatter": (nranks - 1) / nranks}.get(coll, 1.0)
        if secs > 0:
            check(abs(alg - tb / secs) <= 1e-6 * alg + 1 and abs(bus - alg * fac) <= 1e-6 * bus + 1,
                  "%s algbw = bytes/seconds, busbw = algbw x %.3f" % (coll, fac))
check(ranks == set(range(nranks)), "every rank has its file: %s" % sorted(ranks))
sys.exit(1 if fails else 0)
