/* --vs PATH: two NCCL-ABI libraries measured in one run, taking turns size by size, so that
 * whatever drifts on the machine (clocks, temperature, other tenants) hits both alike.
 *
 * Each library runs in processes of its own, never both in one process. The two usually share
 * a SONAME (libnccl.so.2), and each brings its own CUDA runtime (stock NCCL links cudart
 * statically). dlmopen(LM_ID_NEWLM) could map the second into a separate link-map namespace,
 * but then one process holds two CUDA runtimes with duplicated global state over one driver
 * context, and glibc gives such namespaces little static TLS; when that breaks, it breaks
 * inside the libraries, where we cannot diagnose it. A process per library is exactly what an
 * application is: one library, one runtime. So the coordinator (the weft-perf process; it
 * loads neither library and never initialises CUDA) forks one group per library before
 * anything touches a GPU. A group loads its library and runs what a plain weft-perf run would
 * (-np rank processes under a hub, or one process driving -g GPUs), with its stdout captured
 * for printing at the end.
 *
 * Turns: a group runs only while it holds the turn; the other waits, blocked in a read (no
 * polling, no GPU work queued). A turn is the group's initialisation, one timing of one size
 * of one test (its warm-up, then out-of-place and in-place, with checking), or its teardown.
 * The coordinator alternates turns in the order A B, B A, A B, … so neither library always
 * runs right after the other. Rows travel to the coordinator as they are measured.
 *
 * Turns per size (--vs-turns K, even; perf.h): each library times every size K times, in K
 * rounds whose order alternates (A B, B A, A B, …), and its row holds the median of its K
 * timings. With one turn per size, a library ran right after its own previous turn at every
 * other size and right after the other library's at the rest, the same library at the same
 * sizes in every run (each test has as many sizes, so its first size always fell to the round
 * A B). Measured on one H200 (-G 5, one rank), that order alone made the library that had the
 * turn before 1.2-1.9x slower at rows whose graphs are empty (a few us timed in all): weft
 * against weft as much as weft against NCCL, and with the libraries swapped the other one
 * looked slower. With both orders at every size, what one order does to a timing hits both
 * libraries alike (docs/perf-notes.md, tenth session). The median, rather than the mean, is
 * what one timing hit by something else on the machine (a microsecond-scale timing moves by
 * 10-30 % on its own) cannot move (eleventh session).
 *
 * Passes (--vs-rep-us US, perf.h): within a turn, each half's timed pass (the -n calls, or -G's
 * launches of the captured graph, and the wait) repeats until US microseconds are timed, from
 * ceil(US / first pass) passes agreed over the processes, at most PERF_VS_REPS_MAX (or
 * PERF_VS_REPS_MAX_MP with several processes); the half's time is the median pass. A pass of
 * microsecond calls, or of graphs that hold nothing, lasts a few microseconds, and one tick in
 * it moved single rows by 10-100 %; passes of US or more are timed once, as before (bench.c,
 * vs_passes).
 *
 * Warm-up: a library that runs right after the other library's turn finds the GPUs' clocks
 * and the caches as the other left them (measured on 2 GPUs: 6-8 us slower per call at small
 * sizes than when it had the previous turn too). So under --vs the warm-up is not nccl-tests'
 * sweep over the sizes once per test: every turn starts with its own, of the size it times
 * (bench.c, vs_warmup): max(-w, PERF_VS_WARMUP_MIN_CALLS) calls, doubled while fewer than
 * PERF_VS_WARMUP_MIN_US microseconds have passed, at most PERF_VS_WARMUP_MAX_CALLS. */
#ifndef WEFT_PERF_VS_H
#define WEFT_PERF_VS_H

#include "bench.h"

enum {
  PERF_VS_WARMUP_MIN_CALLS = 5,   /* untimed calls per turn at least, even with -w 0..4 */
  PERF_VS_WARMUP_MIN_US = 200,    /* and at least this long (tiny sizes: many calls) */
  PERF_VS_WARMUP_MAX_CALLS = 4096 /* but never more calls than this per turn */
};

/* The coordinator: forks both groups (library A = s->o->lib or weft, B = s->o->vs), serves
 * their turns, then prints A's output, B's output and the comparison, and writes --json and
 * --plot. Returns the exit code of the run (the first failing group's code, else 0). */
int perf_vs_run(struct perf_setup* s, int np);

/* In a group's processes: ends this process's part of the current turn and waits for the
 * group's next. Collective over the group's processes (a barrier on the side channel, then
 * the root process asks the coordinator, then a barrier). 0, or -1 when the coordinator is
 * gone. A no-op (0) without --vs. */
int perf_vs_turn(struct perf_proc* p);

/* The root process hands a measured row to the coordinator. A no-op without --vs. */
void perf_vs_row(struct perf_proc* p, const struct perf_result* r);

#endif
