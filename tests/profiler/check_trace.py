#!/usr/bin/env python3
"""Check the trace plugin's files of a prof_tree trace run (trace_run.sh): one file per rank,
each valid JSON with every collective and send/recv of the run (functions, sequence numbers,
counts, roots), KernelCh events under them, no unfinished events, and the merged file holding
them all; with NET (socket, ib, ofi), also the net transfers that plugin reported, on the
net tracks of their channels, with their bytes.  check_trace.py DIR NRANKS MERGED [NET]"""
import glob
import json
import sys

d, nranks, merged = sys.argv[1], int(sys.argv[2]), sys.argv[3]
net = sys.argv[4] if len(sys.argv) > 4 else None
WANT = [("AllReduce", 0, None), ("AllReduce", 1, None), ("Broadcast", 0, 1), ("Reduce", 0, 0),
        ("AllGather", 0, None), ("ReduceScatter", 0, None)]
N = 4096


def fail(msg):
    print("check_trace:", msg, file=sys.stderr)
    sys.exit(1)


files = sorted(glob.glob(d + "/weft-trace-*.json"))
if len(files) != nranks:
    fail(f"{len(files)} trace files in {d}, want {nranks}: {files}")
ranks = set()
for path in files:
    doc = json.load(open(path))
    rank = doc["otherData"]["rank"]
    ranks.add(rank)
    evs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    colls = sorted((e for e in evs if e["cat"] == "Coll"), key=lambda e: e["ts"])
    got = [(e["name"], e["args"]["seq"], e["args"]["root"]) for e in colls]
    if len(got) != len(WANT):
        fail(f"{path}: {len(got)} collectives {got}, want {len(WANT)}")
    for (name, seq, root), (wn, ws, wr) in zip(got, WANT):
        if name != wn or seq != ws or (wr is not None and root != wr):
            fail(f"{path}: collective {name} seq {seq} root {root}, want {wn} seq {ws} root {wr}")
    for e in colls:
        if e["args"]["count"] != N or e["args"]["datatype"] != "ncclFloat32":
            fail(f"{path}: bad arguments {e['args']}")
        if e["pid"] != rank:
            fail(f"{path}: event on process {e['pid']}, want the rank {rank}")
    p2p = [e for e in evs if e["cat"] == "P2p"]
    if sorted(e["name"] for e in p2p) != [f"Recv {rank ^ 1}", f"Send {rank ^ 1}"]:
        fail(f"{path}: send/recv events {[e['name'] for e in p2p]}")
    kch = [e for e in evs if e["cat"] == "KernelCh"]
    if len(kch) < len(WANT) + 2:
        fail(f"{path}: {len(kch)} KernelCh events, want at least one per operation")
    for e in kch:
        if e["tid"] != 100 + e["args"]["channel"]:
            fail(f"{path}: KernelCh of channel {e['args']['channel']} on track {e['tid']}")
    if any(e["args"].get("unfinished") for e in evs):
        fail(f"{path}: unfinished events after a clean run")
    for kind in ("GroupApi", "CollApi", "P2pApi", "KernelLaunch", "Group"):
        if not any(e["cat"] == kind for e in evs):
            fail(f"{path}: no {kind} event")
    if net:
        xfers = [e for e in evs if e["cat"] == "NetPlugin"]
        steps = [e for e in evs if e["cat"] == "ProxyStep"]
        if not xfers or not steps:
            fail(f"{path}: {len(xfers)} net transfers, {len(steps)} proxy steps over the net")
        for e in xfers:
            a = e["args"]
            if a["plugin"] != net or e["tid"] < 300 or not e["name"].startswith(net):
                fail(f"{path}: net transfer {e['name']} on track {e['tid']}: {a}")
        for send in (0, 1):
            moved = sum(e["args"]["bytes"] for e in xfers if e["args"]["send"] == send)
            if moved <= 0:
                fail(f"{path}: no bytes in the net transfers with send={send}")
if ranks != set(range(nranks)):
    fail(f"ranks {sorted(ranks)}, want 0..{nranks - 1}")
m = json.load(open(merged))
mc = [e for e in m["traceEvents"] if e.get("cat") == "Coll"]
if len(mc) != nranks * len(WANT) or {e["pid"] for e in mc} != set(range(nranks)):
    fail(f"merged file: {len(mc)} collectives on processes {sorted({e['pid'] for e in mc})}")
if min(e["ts"] for e in m["traceEvents"] if "ts" in e) != 0:
    fail("merged file does not start at 0")
print(f"check_trace: {nranks} ranks, {len(WANT)} collectives and 2 send/recv each: OK")
