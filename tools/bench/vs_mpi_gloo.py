#!/usr/bin/env python3
"""weft's host mode beside Open MPI (mpi4py) and PyTorch's Gloo (torch.distributed).

Runs the sizes weft-perf runs through mpi4py and through torch.distributed's gloo backend, and
prints nccl-tests' table for each, column for column as weft-perf prints it (size, count, type,
redop, root, then time/algbw/busbw/#wrong out of place and in place; busbw as nccl-tests
defines it: algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather and reduce_scatter, x 1
for broadcast and reduce; the time is the mean over ranks of the mean over iterations). Before
timing a size, one call on known data is checked (#wrong counts the wrong elements). Not a
dependency of weft: it needs python3 with numpy, and mpi4py and/or torch where they are
installed; a library that is missing is reported and skipped.

Modes:
  mpi      run under mpirun: one process per rank
             mpirun -np 16 --bind-to core python3 tools/bench/vs_mpi_gloo.py mpi all_reduce \\
                 -b 64K -e 64M -f 8 -n 10 -w 3
  gloo     spawns -np processes itself (TCP store on 127.0.0.1), rank i pinned to the i-th CPU
           this process may run on (so `taskset -c 0-15` gives rank i core i, as mpirun's
           --bind-to core does)
             taskset -c 0-15 python3 tools/bench/vs_mpi_gloo.py gloo -np 16 all_reduce ...
  compare  runs weft-perf (under taskset), MPI (mpirun --bind-to core) and Gloo (taskset, pinned)
           on the same sizes, prints the three tables and one line per size with each
           library's out-of-place busbw and weft's ratio to MPI and to Gloo
             python3 tools/bench/vs_mpi_gloo.py compare -np 16 --weft build/bin/weft-perf \\
                 all_reduce -b 64K -e 64M -f 8 -n 10 -w 3

Options (nccl-tests' meaning): -b/-e/-f sizes (K, M, G suffixes; -f is a factor), -n timed
iterations, -w warm-up iterations, -d float|double|int32, -o sum|max|min|prod (all_reduce,
reduce_scatter, reduce), -r root (broadcast, reduce). The collective is all_reduce, all_gather,
reduce_scatter, broadcast or reduce.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

COLLS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
DTYPES = {"float": ("float32", 4), "double": ("float64", 8), "int32": ("int32", 4)}


def parse_size(s):
    m = re.fullmatch(r"(\d+)([KMG]?)", s.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError("size like 64K, 8M, 1G: %r" % s)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def sizes(a):
    s, out = a.minbytes, []
    while s <= a.maxbytes:
        out.append(s)
        s = s * a.stepfactor if a.stepfactor > 1 else s + 1
    return out


def counts(coll, size, elt, n):
    """(send count, recv count, count column, algbw bytes) as weft-perf/nccl-tests count them."""
    count = size // elt
    if coll in ("all_gather", "reduce_scatter"):
        unit = 1 if elt >= 16 else 16 // elt
        part = count // n
        part -= part % unit
        if coll == "all_gather":
            return part, part * n, part, part * n * elt
        return part * n, part, part, part * n * elt
    return count, count, count, count * elt


def bus_factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    if coll in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def fmt(v, width):
    for f in ("%*.2f", "%*.1f", "%*.0f"):
        s = f % (width, v)
        if len(s) <= width:
            return s
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, v)


def header(label, a, n):
    print("# %s: %s, %d ranks, sizes %d .. %d, %d warm-up and %d timed iterations"
          % (label, a.coll, n, a.minbytes, a.maxbytes, a.warmup_iters, a.iters))
    print("#")
    print("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
          "          " % ("", "", "", "", ""))
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s " % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong"))
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s " % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
        "(GB/s)", ""))
    sys.stdout.flush()


def row(a, n, size, count, halves):
    """halves: [(seconds, wrong) out of place, (seconds, wrong) in place]."""
    op = a.op if a.coll in ("all_reduce", "reduce_scatter", "reduce") else "none"
    root = a.root if a.coll in ("broadcast", "reduce") else -1
    line = "%12d  %12d  %8s  %6s  %6d" % (size, count, a.dtype, op, root)
    for sec, wrong in halves:
        algbw = size / 1e9 / sec if sec > 0 else 0.0
        line += "  %7s  %6s  %6s  %6d" % (fmt(sec * 1e6, 7), fmt(algbw, 6),
                                           fmt(algbw * bus_factor(a.coll, n), 6), wrong)
    print(line)
    sys.stdout.flush()


def expected(np, a, n, rank, recv_count):
    """What rank should hold after one call on inputs x_r[i] = r + 1 + (i % 7)."""
    dt = DTYPES[a.dtype][0]
    i = np.arange(recv_count) % 7
    red = {"sum": lambda v: sum(v), "prod": lambda v: np.prod(np.stack(v), axis=0),
           "max": lambda v: np.max(np.stack(v), axis=0),
           "min": lambda v: np.min(np.stack(v), axis=0)}[a.op]
    if a.coll == "all_reduce" or (a.coll == "reduce" and rank == a.root):
        return red([r + 1 + i for r in range(n)]).astype(dt)
    if a.coll == "reduce_scatter":
        j = (np.arange(recv_count) + rank * recv_count) % 7
        return red([r + 1 + j for r in range(n)]).astype(dt)
    if a.coll == "all_gather":
        per = recv_count // n
        return np.concatenate([r + 1 + np.arange(per) % 7 for r in range(n)]).astype(dt)
    if a.coll == "broadcast":
        return (a.root + 1 + i).astype(dt)
    return None  # reduce at a non-root: nothing to check


def run_sizes(a, n, rank, np, make_call, mean_over_ranks, barrier):
    """make_call(send, recv, inplace) -> a function doing one collective."""
    dt, elt = DTYPES[a.dtype]
    if rank == 0:
        header(a.label, a, n)
    for size in sizes(a):
        sc, rc, count, nbytes = counts(a.coll, size, elt, n)
        halves = []
        for inplace in (0, 1):
            send = (rank + 1 + np.arange(sc) % 7).astype(dt)
            recv = np.zeros(rc, dtype=dt)
            if inplace and a.coll == "all_gather":
                recv[rank * sc:(rank + 1) * sc] = send
            if inplace and a.coll == "reduce_scatter":
                recv = send.copy()
            call = make_call(send, recv, inplace)
            call()
            out = call.result() if hasattr(call, "result") else recv
            want = expected(np, a, n, rank, rc)
            wrong = 0 if want is None else int(np.count_nonzero(out[:len(want)] != want))
            for _ in range(a.warmup_iters):
                call()
            barrier()
            t0 = time.perf_counter()
            for _ in range(a.iters):
                call()
            sec = (time.perf_counter() - t0) / max(a.iters, 1)
            halves.append((mean_over_ranks(sec), int(round(mean_over_ranks(wrong) * n))))
        if rank == 0:
            row(a, n, nbytes, count, halves)


# ---- MPI ----------------------------------------------------------------------------------

def main_mpi(a):
    try:
        import numpy as np
        from mpi4py import MPI
    except ImportError as e:
        print("# MPI: not run (%s)" % e)
        return 0
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    op = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}[a.op]
    lib = MPI.Get_library_version().splitlines()[0].strip()
    a.label = "MPI (%s, mpi4py %s)" % (lib, __import__("mpi4py").__version__)

    class Call:
        def __init__(self, send, recv, inplace):
            self.s, self.r, self.ip = send, recv, inplace

        def __call__(self):
            s, r, ip, c = self.s, self.r, self.ip, a.coll
            if c == "all_reduce":
                comm.Allreduce(MPI.IN_PLACE, s, op=op) if ip else comm.Allreduce(s, r, op=op)
            elif c == "all_gather":
                comm.Allgather(MPI.IN_PLACE, r) if ip else comm.Allgather(s, r)
            elif c == "reduce_scatter":
                comm.Reduce_scatter_block(MPI.IN_PLACE, r, op=op) if ip else \
                    comm.Reduce_scatter_block(s, r, op=op)
            elif c == "broadcast":
                if not ip and rank == a.root:
                    r[:] = s
                comm.Bcast(r, root=a.root)
            else:
                if ip and rank == a.root:
                    comm.Reduce(MPI.IN_PLACE, s, op=op, root=a.root)
                else:
                    comm.Reduce(s, r, op=op, root=a.root)

        def result(self):
            c = a.coll
            if self.ip and (c == "all_reduce" or (c == "reduce" and rank == a.root)):
                return self.s
            return self.r

    def make_call(send, recv, inplace):
        if a.coll == "broadcast":  # the root's data is in its buffer
            if rank == a.root:
                recv[:] = send
            return Call(recv, recv, 1) if inplace else Call(send, recv, 0)
        return Call(send, recv, inplace)

    run_sizes(a, n, rank, np, make_call, lambda v: comm.allreduce(v) / n, comm.Barrier)
    return 0


# ---- Gloo ---------------------------------------------------------------------------------

def gloo_rank(rank, a, port, cpu):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    import numpy as np
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    n = a.nprocs
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=n)
    a.label = "Gloo (torch %s, torch.distributed gloo)" % torch.__version__
    op = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX,
          "min": dist.ReduceOp.MIN}[a.op]

    def make_call(send, recv, inplace):
        s, r = torch.from_numpy(send), torch.from_numpy(recv)
        c = a.coll
        if c == "all_reduce":  # gloo reduces in place: out of place copies first
            if inplace:
                return lambda: dist.all_reduce(s, op=op)
            return lambda: (r.copy_(s), dist.all_reduce(r, op=op))
        if c == "all_gather":
            src = r[rank * s.numel():(rank + 1) * s.numel()] if inplace else s
            parts = list(r.chunk(n))

            def ag():  # all_gather_into_tensor where this gloo has it, else into views of r
                try:
                    dist.all_gather_into_tensor(r, src)
                except (RuntimeError, AttributeError):
                    dist.all_gather(parts, src.clone() if inplace else src)
            return ag
        if c == "reduce_scatter":  # gloo has no in-place form: both read a full buffer
            src = r if inplace else s
            out = torch.zeros(src.numel() // n, dtype=src.dtype)

            class RS:
                def __call__(self):
                    dist.reduce_scatter_tensor(out, src, op=op)

                def result(self):
                    return out.numpy()
            return RS()
        if c == "broadcast":
            if rank == a.root:
                r.copy_(s)
            return lambda: dist.broadcast(r, src=a.root)
        if inplace:
            return lambda: dist.reduce(s, dst=a.root, op=op)

        class Red:
            def __call__(self):
                r.copy_(s)
                dist.reduce(r, dst=a.root, op=op)

            def result(self):
                return r.numpy()
        return Red()

    def wrapped(send, recv, inplace):
        call = make_call(send, recv, inplace)
        if hasattr(call, "result"):
            return call
        if inplace and a.coll in ("all_reduce", "reduce"):
            class W:
                def __call__(self):
                    call()

                def result(self):
                    return send
            return W()
        return call

    def mean(v):
        t = torch.tensor([float(v)], dtype=torch.float64)
        dist.all_reduce(t)
        return t.item() / n

    try:
        run_sizes(a, n, rank, np, wrapped, mean, dist.barrier)
    except RuntimeError as e:  # a collective this gloo lacks (older reduce_scatter)
        if rank == 0:
            print("# Gloo: %s not run: %s" % (a.coll, str(e).splitlines()[0]))
    dist.destroy_process_group()


def main_gloo(a):
    try:
        import numpy  # noqa: F401
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            raise ImportError("torch.distributed without gloo")
    except ImportError as e:
        print("# Gloo: not run (%s)" % e)
        return 0
    import multiprocessing as mp
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cpus = sorted(os.sched_getaffinity(0))
    pin = a.pin and len(cpus) >= a.nprocs
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=gloo_rank, args=(r, a, port, cpus[r] if pin else None))
             for r in range(a.nprocs)]
    for p in procs:
        p.start()
    rc = 0
    for p in procs:
        p.join()
        rc = rc or p.exitcode
    return rc


# ---- compare ------------------------------------------------------------------------------

def busbw_rows(text):
    """size -> out-of-place busbw, from a weft-perf / this script's table."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 13 and not line.startswith("#") and f[0].isdigit():
            try:
                out[int(f[0])] = float(f[7])
            except ValueError:
                pass
    return out


def common_args(a):
    return [a.coll, "-b", str(a.minbytes), "-e", str(a.maxbytes), "-f", str(a.stepfactor),
            "-n", str(a.iters), "-w", str(a.warmup_iters), "-d", a.dtype, "-o", a.op,
            "-r", str(a.root)]


def main_compare(a):
    n, me = a.nprocs, os.path.abspath(__file__)
    cores = "0-%d" % (n - 1)
    runs = []
    env = dict(os.environ, WEFT_DEVICE="host")
    if a.weft:
        runs.append(("weft", ["taskset", "-c", cores, a.weft, "-np", str(n), "-c", "1"]
                     + common_args(a)))
    if shutil.which("mpirun"):
        runs.append(("MPI", ["mpirun", "-np", str(n), "--bind-to", "core", sys.executable, me,
                             "mpi"] + common_args(a)))
    else:
        print("# MPI: not run (no mpirun on PATH)")
    runs.append(("Gloo", ["taskset", "-c", cores, sys.executable, me, "gloo", "-np", str(n)]
                 + common_args(a)))
    got = {}
    for name, cmd in runs:
        print("# %s: %s" % (name, " ".join(cmd)))
        sys.stdout.flush()
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        print(p.stdout)
        got[name] = busbw_rows(p.stdout) if p.returncode == 0 else {}
        if p.returncode != 0:
            print("# %s exited with %d" % (name, p.returncode))
    names = [r[0] for r in runs]
    print("# %s float %s, %d ranks: out-of-place busbw (GB/s)" % (a.coll, a.op, n))
    print("# %10s  " % "size" + "  ".join("%8s" % x for x in names)
          + ("  %9s  %9s" % ("weft/MPI", "weft/Gloo") if "weft" in names else ""))
    for size in sorted(set().union(*[set(v) for v in got.values()]) if got else []):
        vals = [got[x].get(size) for x in names]
        line = "  %10d  " % size + "  ".join("%8s" % ("-" if v is None else fmt(v, 8))
                                             for v in vals)
        if "weft" in names:
            w = got["weft"].get(size)
            for other in ("MPI", "Gloo"):
                o = got.get(other, {}).get(size)
                line += "  %9s" % (fmt(w / o, 9) if w and o else "-")
        print(line)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("mode", choices=("mpi", "gloo", "compare"))
    p.add_argument("coll", nargs="?", default="all_reduce", choices=COLLS)
    p.add_argument("-np", dest="nprocs", type=int, default=2)
    p.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("64K"))
    p.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"))
    p.add_argument("-f", "--stepfactor", type=int, default=8)
    p.add_argument("-n", "--iters", type=int, default=10)
    p.add_argument("-w", "--warmup_iters", type=int, default=3)
    p.add_argument("-d", "--dtype", default="float", choices=sorted(DTYPES))
    p.add_argument("-o", "--op", default="sum", choices=("sum", "prod", "max", "min"))
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="gloo: do not pin rank i to the i-th allowed CPU")
    p.add_argument("--weft", help="compare: the weft-perf binary (build/bin/weft-perf)")
    a = p.parse_intermixed_args()
    if a.nprocs < 1 or a.minbytes < 1 or a.maxbytes < a.minbytes or a.iters < 1:
        p.error("need -np >= 1, 1 <= -b <= -e and -n >= 1")
    if a.root >= max(a.nprocs, 1) and a.mode != "mpi":
        p.error("-r %d: beyond -np %d" % (a.root, a.nprocs))
    return {"mpi": main_mpi, "gloo": main_gloo, "compare": main_compare}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
