/* The measurement, as nccl-tests does it: for each size, out-of-place then in-place; each is
 * `warmup` untimed calls (done once per size before the sweep), a barrier, `iters` calls (each
 * of `agg` operations grouped) timed on the host clock until the streams are idle, then
 * `check` verification calls on fresh data. The per-call time is combined across processes
 * as -a says (default: the mean, as nccl-tests) and algbw/busbw follow colls.c. With -G N the
 * `iters` calls are captured in a CUDA graph per stream instead, and the graphs launched N
 * times are timed (nccl-tests' -G). Under --vs every size is a turn (vs.h) and the warm-up
 * runs at the start of each turn, for that size, instead of once per test (vs_warmup). */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "vs.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The test being measured: one collective, type, op and root. */
struct test {
  const struct perf_coll* coll;
  const struct perf_type* type;
  const struct perf_op* op;
  int root; /* -1 for collectives without a root */
  size_t size;
  struct perf_counts counts;
};

static int rank_of(const struct perf_proc* p, int i) { return p->proc * p->nlocal + i; }

static int nccl_fail(struct perf_proc* p, int i, ncclResult_t res, const char* call,
                     const struct test* t) {
  char what[256], msg[1400];
  snprintf(what, sizeof what, "%s(count %zu, %s%s%s)", call, t->counts.paramcount, t->type->name,
           t->coll->has_op ? ", " : "", t->coll->has_op ? t->op->name : "");
  perf_nccl_describe(p->lib, res, p->comms[i], what, msg, sizeof msg);
  perf_rank_error(p, "%s", msg);
  p->failed = 1;
  return -1;
}

/* Issues the collective of local rank i (no waiting). */
static ncclResult_t issue(struct perf_proc* p, int i, const struct test* t, int in_place,
                          const char** call) {
  const struct perf_nccl* L = p->lib;
  int rank = rank_of(p, i), n = p->nranks;
  size_t es = t->type->size, count = t->counts.paramcount;
  char* recv = p->recv[i];
  const void* sbuf = in_place ? recv + t->counts.send_inplace_off * (size_t)rank * es : p->send[i];
  void* rbuf = recv + (in_place ? t->counts.recv_inplace_off * (size_t)rank * es : 0);
  ncclDataType_t dt = t->type->nccl;
  ncclRedOp_t op = p->ops[i];
  ncclComm_t comm = p->comms[i];
  cudaStream_t st = p->streams[i];
  ncclResult_t res;
  switch (t->coll->id) {
    case PERF_ALL_REDUCE:
      *call = "ncclAllReduce";
      return L->AllReduce(sbuf, rbuf, count, dt, op, comm, st);
    case PERF_ALL_GATHER:
      *call = "ncclAllGather";
      return L->AllGather(sbuf, rbuf, count, dt, comm, st);
    case PERF_REDUCE_SCATTER:
      *call = "ncclReduceScatter";
      return L->ReduceScatter(sbuf, rbuf, count, dt, op, comm, st);
    case PERF_BROADCAST:
      *call = "ncclBroadcast";
      return L->Broadcast(sbuf, rbuf, count, dt, t->root, comm, st);
    case PERF_REDUCE:
      *call = "ncclReduce";
      return L->Reduce(sbuf, rbuf, count, dt, op, t->root, comm, st);
    case PERF_SENDRECV:
      *call = "ncclGroupStart";
      if ((res = L->GroupStart()) != ncclSuccess) return res;
      *call = "ncclSend";
      res = L->Send(sbuf, count, dt, (rank + 1) % n, comm, st);
      if (res == ncclSuccess) {
        *call = "ncclRecv";
        res = L->Recv(rbuf, count, dt, (rank - 1 + n) % n, comm, st);
      }
      {
        ncclResult_t end = L->GroupEnd();
        if (res == ncclSuccess && end != ncclSuccess) *call = "ncclGroupEnd", res = end;
      }
      return res;
    case PERF_ALLTOALL: *call = "ncclAlltoAll"; return L->AlltoAll(sbuf, rbuf, count, dt, comm, st);
    default: *call = "?"; return ncclInternalError;
  }
}

/* One iteration: `agg` operations on every local rank, grouped when there is more than one. */
static int start_ops(struct perf_proc* p, const struct test* t, int in_place, int agg) {
  int grouped = agg > 1 || p->nlocal > 1;
  const char* call = "ncclGroupStart";
  ncclResult_t res = grouped ? p->lib->GroupStart() : ncclSuccess;
  int fail_i = 0;
  for (int a = 0; a < agg && res == ncclSuccess; a++)
    for (int i = 0; i < p->nlocal && res == ncclSuccess; i++) {
      res = issue(p, i, t, in_place, &call);
      fail_i = i;
    }
  if (grouped) {
    ncclResult_t end = p->lib->GroupEnd();
    if (res == ncclSuccess && end != ncclSuccess) res = end, call = "ncclGroupEnd";
  }
  return res == ncclSuccess ? 0 : nccl_fail(p, fail_i, res, call, t);
}

static void graph_release(struct perf_proc* p) {
  for (int i = 0; p->graphs && i < p->nlocal; i++) {
    if (p->graphs[i]) p->be->graph_destroy(p->graphs[i]);
    p->graphs[i] = NULL;
  }
}

static int sync_all(struct perf_proc* p) {
  for (int i = 0; i < p->nlocal; i++) {
    if (p->be->stream_sync(p->streams[i])) {
      perf_rank_error(p, "waiting for the stream: %s", p->be->error());
      p->failed = 1;
      return -1;
    }
  }
  return 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

static void check_args(const struct perf_proc* p, const struct test* t, int i, int in_place,
                       int rep, struct perf_check* c) {
  c->coll = t->coll->id;
  c->type = t->type;
  c->op = t->op;
  c->root = t->root;
  c->rank = rank_of(p, i);
  c->nranks = p->nranks;
  c->counts = t->counts;
  uint64_t h = p->o->seed;
  h = mix(h, (uint64_t)t->coll->id);
  h = mix(h, (uint64_t)t->type->nccl);
  h = mix(h, (uint64_t)t->op->kind);
  h = mix(h, (uint64_t)(t->root + 1));
  h = mix(h, (uint64_t)t->size);
  h = mix(h, (uint64_t)in_place);
  c->seed = mix(h, (uint64_t)rep);
}

/* Bytes of the receive buffer an operation touches. */
static size_t recv_region(const struct test* t, int rank, int in_place) {
  const struct perf_counts* k = &t->counts;
  size_t n = k->recvcount;
  if (in_place) {
    size_t in_end = k->send_inplace_off * (size_t)rank + k->sendcount;
    size_t out_end = k->recv_inplace_off * (size_t)rank + k->recvcount;
    n = in_end > out_end ? in_end : out_end;
  }
  return n * t->type->size;
}

/* Threads for filling and verifying: this process's share of the cores (the other local rank
 * processes check at the same time). */
static int check_threads(const struct perf_proc* p) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  int local = p->s->local_proc >= 0 ? 1 : p->nprocs; /* under a launcher: unknown, assume 1 */
  n = n > 0 ? n / local : 1;
  return n > 1 ? (int)n : 1;
}

/* Fresh input (and a poisoned output) for every local rank. */
static int prepare(struct perf_proc* p, const struct test* t, int in_place, int rep) {
  size_t es = t->type->size;
  for (int i = 0; i < p->nlocal; i++) {
    struct perf_check c;
    check_args(p, t, i, in_place, rep, &c);
    char* hsend = p->be->is_host ? p->send[i] : p->stage_send;
    char* hrecv = p->be->is_host ? p->recv[i] : p->stage_recv;
    size_t region = recv_region(t, c.rank, in_place);
    perf_check_poison(hrecv, region);
    int input_is_output = in_place && t->coll->id == PERF_BROADCAST && c.rank != t->root;
    if (!input_is_output)
      perf_check_fill_par(
          &c, in_place ? hrecv + t->counts.send_inplace_off * (size_t)c.rank * es : hsend,
          check_threads(p));
    if (!p->be->is_host &&
        ((!in_place && p->be->upload(p->send[i], hsend, t->counts.sendcount * es)) ||
         p->be->upload(p->recv[i], hrecv, region))) {
      perf_rank_error(p, "copying test data to the device: %s", p->be->error());
      p->failed = 1;
      return -1;
    }
  }
  return 0;
}

/* Wrong elements over the local ranks, or -1 when reading back failed. */
static int64_t verify(struct perf_proc* p, const struct test* t, int in_place, int rep) {
  int64_t wrong = 0;
  size_t es = t->type->size;
  for (int i = 0; i < p->nlocal; i++) {
    struct perf_check c;
    check_args(p, t, i, in_place, rep, &c);
    char* hrecv = p->recv[i];
    if (!p->be->is_host) {
      hrecv = p->stage_recv;
      if (p->be->download(hrecv, p->recv[i], recv_region(t, c.rank, in_place))) {
        perf_rank_error(p, "copying results from the device: %s", p->be->error());
        p->failed = 1;
        return -1;
      }
    }
    const char* out = hrecv + (in_place ? t->counts.recv_inplace_off * (size_t)c.rank * es : 0);
    wrong += (int64_t)perf_check_verify_par(&c, out, check_threads(p));
  }
  return wrong;
}

/* -G: the `iters` iterations captured on every local stream, one executable graph each. */
static int graph_capture(struct perf_proc* p, const struct test* t, int in_place) {
  for (int i = 0; i < p->nlocal; i++)
    if (p->be->set_device(p->devs[i]) || p->be->graph_begin(p->streams[i])) {
      perf_rank_error(p, "-G: starting the capture: %s", p->be->error());
      return p->failed = 1, -1;
    }
  int rc = 0;
  for (int it = 0; it < p->o->iters && rc == 0; it++)
    rc = start_ops(p, t, in_place, p->o->agg_iters);
  /* End every capture, also after a failed call, so no stream stays in capture mode. */
  for (int i = 0; i < p->nlocal; i++) {
    char nodes[256] = "";
    if (p->be->set_device(p->devs[i]) ||
        p->be->graph_end(p->streams[i], &p->graphs[i], p->o->graph_nodes ? nodes : NULL,
                         sizeof nodes)) {
      if (rc == 0) perf_rank_error(p, "-G: ending the capture: %s", p->be->error());
      p->graphs[i] = NULL;
      rc = -1;
    } else if (p->o->graph_nodes && rc == 0) {
      fprintf(stderr, "# graph: %s rank %d, %s %zu B %s, %d x %d calls: %s\n", p->lib->path,
              rank_of(p, i), t->coll->name, t->size, in_place ? "in place" : "out of place",
              p->o->iters, p->o->agg_iters, nodes);
    }
  }
  if (rc) graph_release(p);
  return rc ? (p->failed = 1, -1) : 0;
}

static int graph_replay(struct perf_proc* p) {
  for (int l = 0; l < p->o->graph_launches; l++)
    for (int i = 0; i < p->nlocal; i++)
      if (p->be->graph_launch(p->graphs[i], p->streams[i])) {
        perf_rank_error(p, "-G: launching the graph: %s", p->be->error());
        return p->failed = 1, -1;
      }
  return 0;
}

/* --vs: the warm-up at the start of every turn, of the size about to be timed (out-of-place,
 * one operation per call, as nccl-tests' warm-up). The other library has just had the GPUs
 * (and the CPU caches) for a whole turn, and measured on 2 GPUs the first calls after that
 * read 6-8 us slower at small sizes; so each turn warms up again, right before its timing:
 * max(-w, PERF_VS_WARMUP_MIN_CALLS) calls, then, while fewer than PERF_VS_WARMUP_MIN_US
 * microseconds have passed since the first, as many calls again as done so far (doubling),
 * up to PERF_VS_WARMUP_MAX_CALLS in all. Every process must issue the same calls, so after
 * each round the processes agree on the elapsed time (the least any of them saw). Returns
 * the calls made, or -1 when a call failed. */
static int vs_warmup(struct perf_proc* p, const struct test* t) {
  int n = p->o->warmup > PERF_VS_WARMUP_MIN_CALLS ? p->o->warmup : PERF_VS_WARMUP_MIN_CALLS;
  int done = 0;
  double t0 = now_s();
  for (;;) {
    for (int w = 0; w < n; w++)
      if (start_ops(p, t, 0, 1)) return -1;
    if (sync_all(p)) return -1;
    done += n;
    double elapsed = now_s() - t0;
    if (p->ch->allreduce(p->ch, &elapsed, 1, PERF_CHAN_MIN)) return p->failed = 1, -1;
    if (elapsed * 1e6 >= PERF_VS_WARMUP_MIN_US || done >= PERF_VS_WARMUP_MAX_CALLS) break;
    n = done < PERF_VS_WARMUP_MAX_CALLS - done ? done : PERF_VS_WARMUP_MAX_CALLS - done;
  }
  return done;
}

/* One timed pass: the `iters` calls (each of `agg` operations), or the captured graphs launched
 * -G times, then the wait until the streams are idle. Sets *sec to the pass's host time. */
static int timed_pass(struct perf_proc* p, const struct test* t, int in_place, double* sec) {
  const struct perf_opts* o = p->o;
  double t0 = now_s();
  int rc = 0;
  if (o->graph_launches > 0) {
    rc = graph_replay(p);
  } else {
    for (int it = 0; it < o->iters && rc == 0; it++) {
      rc = start_ops(p, t, in_place, o->agg_iters);
      if (rc == 0 && o->blocking && (sync_all(p) || perf_chan_barrier(p->ch)))
        rc = -1, p->failed = 1;
    }
  }
  if (rc == 0) rc = sync_all(p);
  *sec = now_s() - t0;
  return rc;
}

/* --vs --vs-rep-us: how many passes this half times, from the first pass's time (the longest
 * any process saw, so every process issues the same calls): enough for US microseconds in
 * all, at least 1, at most perf_vs_passes_max. */
static int vs_passes(struct perf_proc* p, double first_sec, int* passes) {
  *passes = 1;
  if (p->s->vs_fd < 0 || p->o->vs_rep_us <= 0) return 0;
  if (p->ch->allreduce(p->ch, &first_sec, 1, PERF_CHAN_MAX)) return p->failed = 1, -1;
  double want = p->o->vs_rep_us * 1e-6 / (first_sec > 1e-9 ? first_sec : 1e-9);
  int most = perf_vs_passes_max(p->nprocs);
  *passes = want >= most ? most : want <= 1 ? 1 : (int)ceil(want);
  return 0;
}

/* nccl-tests' BenchTime: one half of a row. Under --vs the out-of-place half starts with the
 * turn's warm-up (vs_warmup), after the test data is in place and before the barrier, and the
 * timed pass repeats as --vs-rep-us says (vs_passes); the half's time is the median pass. */
static int bench_time(struct perf_proc* p, const struct test* t, int in_place,
                      struct perf_half_row* h) {
  const struct perf_opts* o = p->o;
  if (o->check && prepare(p, t, in_place, 0)) return -1;
  if (p->s->vs_fd >= 0 && !in_place && vs_warmup(p, t) < 0) return -1;
  if (perf_chan_barrier(p->ch)) return p->failed = 1, -1;
  int rc = 0;
  if (o->graph_launches > 0) {
    rc = graph_capture(p, t, in_place);
    if (rc == 0 && perf_chan_barrier(p->ch)) rc = -1, p->failed = 1;
  }
  double secs[PERF_VS_REPS_MAX]; /* 32 KiB */
  int passes = 1;
  for (int pass = 0; rc == 0 && pass < passes; pass++) {
    if (pass > 0 && p->nprocs > 1 && perf_chan_barrier(p->ch)) {
      rc = -1, p->failed = 1;
      break;
    }
    rc = timed_pass(p, t, in_place, &secs[pass]);
    if (rc == 0 && pass == 0) rc = vs_passes(p, secs[0], &passes);
  }
  graph_release(p); /* after the wait: nothing of the graphs is in flight */
  if (rc) return -1;
  double sec = perf_median(secs, passes) / ((double)o->iters * o->agg_iters);
  if (o->graph_launches > 0) sec /= o->graph_launches;

  /* -a: 0 rank 0's time, 1 mean, 2 min, 3 max over processes. */
  double v = o->average == 0 ? (p->proc == 0 ? sec : 0) : sec;
  enum perf_chan_op cop = o->average == 2   ? PERF_CHAN_MIN
                          : o->average == 3 ? PERF_CHAN_MAX
                                            : PERF_CHAN_SUM;
  if (p->ch->allreduce(p->ch, &v, 1, cop)) return p->failed = 1, -1;
  if (o->average == 1) v /= p->nprocs;
  sec = v;
  h->time_us = sec * 1e6;
  perf_coll_bw(t->coll->id, t->counts.paramcount, t->type->size, sec, p->nranks, &h->algbw,
               &h->busbw);

  h->reported = o->check > 0 && (!in_place || t->coll->check_inplace);
  h->wrong = 0;
  if (!h->reported) return 0;
  for (int rep = 1; rep <= o->check; rep++) {
    if (prepare(p, t, in_place, rep)) return -1;
    if (start_ops(p, t, in_place, 1) || sync_all(p)) return -1;
    int64_t w = verify(p, t, in_place, rep);
    if (w < 0) return -1;
    double wd = (double)w;
    if (p->ch->allreduce(p->ch, &wd, 1, PERF_CHAN_SUM)) return p->failed = 1, -1;
    h->wrong = (int64_t)wd;
    if (h->wrong) break;
  }
  return 0;
}

static void set_counts(struct perf_proc* p, struct test* t, size_t size) {
  t->size = size;
  perf_coll_counts(t->coll->id, size / t->type->size, t->type->size, p->nranks, &t->counts);
}

/* The operator handles of this test on every local communicator (mulsum: created). */
static int ops_create(struct perf_proc* p, struct test* t) {
  for (int i = 0; i < p->nlocal; i++) {
    p->ops[i] = t->op->nccl;
    if (!t->coll->has_op || t->coll->op_label_only || t->op->kind != PERF_OP_MULSUM) continue;
    uint64_t scalar;
    perf_check_premul_scalar(t->type, rank_of(p, i), &scalar);
    ncclResult_t res = p->lib->RedOpCreatePreMulSum(&p->ops[i], &scalar, t->type->nccl,
                                                    ncclScalarHostImmediate, p->comms[i]);
    if (res != ncclSuccess) {
      if (!p->lib->has_premulsum) {
        perf_rank_error(p, "mulsum needs ncclRedOpCreatePreMulSum, which %s lacks", p->lib->path);
        p->failed = 1;
        return -1;
      }
      return nccl_fail(p, i, res, "ncclRedOpCreatePreMulSum", t);
    }
  }
  return 0;
}

static void ops_destroy(struct perf_proc* p, const struct test* t) {
  if (t->op->kind != PERF_OP_MULSUM || !t->coll->has_op || t->coll->op_label_only) return;
  for (int i = 0; i < p->nlocal; i++) p->lib->RedOpDestroy(p->ops[i], p->comms[i]);
}

static void note_allreduce(struct perf_proc* p, const struct test* t, double busbw) {
  if (t->coll->id != PERF_ALL_REDUCE) return;
  int fs = t->type->nccl == ncclFloat32 && t->op->kind == PERF_OP_SUM;
  struct perf_ar_best* b = &p->ar;
  /* Prefer float sum (the issue's bar); among equals the largest size. */
  if (b->have && (b->is_float_sum > fs || (b->is_float_sum == fs && b->size > t->size))) return;
  *b = (struct perf_ar_best){1, fs, t->size, t->type->name, t->op->name, busbw};
}

/* A finished row: the table and JSON (rank 0's process), --plot's list, the --vs coordinator. */
static void emit_row(struct perf_proc* p, const struct test* t, struct perf_row* row) {
  if (!p->is_root_proc) return;
  perf_table_row(stdout, row);
  row->lib = p->s->lib_label;
  perf_json_row(p->json, row);
  struct perf_result r = {
      .lib = p->s->vs_lib,
      .coll = (int)t->coll->id,
      .type = (int)(t->type - perf_types),
      .op = t->coll->has_op ? (int)(t->op - perf_ops) : -1,
      .root = row->root,
      .size = row->size,
      .count = row->count,
      .oop = row->oop,
      .ip = row->ip,
  };
  if (p->o->plot && p->s->vs_fd < 0) perf_results_add(&p->results, &r);
  perf_vs_row(p, &r);
}

/* The row's half from the turns of one size (--vs, vs.h): perf_half_median, with the
 * bandwidths of its time. */
static void half_median(const struct test* t, int nranks, struct perf_half_row* turns, int n,
                        struct perf_half_row* out) {
  if (n == 1) { /* no --vs: nccl-tests' row as timed */
    *out = turns[0];
    return;
  }
  perf_half_median(turns, n, out);
  perf_coll_bw(t->coll->id, t->counts.paramcount, t->type->size, out->time_us * 1e-6, nranks,
               &out->algbw, &out->busbw);
}

/* nccl-tests' TimeTest: warm-up over the sizes, then one row per size. Under --vs every size
 * is --vs-turns turns (vs.h), each starting with its own warm-up instead (bench_time, vs_warmup);
 * the sweep over the sizes is left out there, as it would run a turn before the sizes. */
static int time_test(struct perf_proc* p, struct test* t, double* bw_sum, int* bw_count,
                     int* errors) {
  const struct perf_opts* o = p->o;
  int vs = p->s->vs_fd >= 0;
  if (ops_create(p, t)) return -1;
  int rc = 0;
  for (size_t size = o->minbytes; !vs && o->warmup > 0; size = perf_size_next(o, size)) {
    set_counts(p, t, size);
    for (int w = 0; w < o->warmup && rc == 0; w++) rc = start_ops(p, t, 0, 1);
    if (rc == 0) rc = sync_all(p);
    if (rc || !perf_size_next(o, size)) break;
  }
  int explain = o->explain && p->is_root_proc;
  if (explain) {
    char label[64];
    snprintf(label, sizeof label, "%s %s%s%s", t->coll->name, t->type->name,
             t->coll->has_op && !t->coll->op_label_only ? " " : "",
             t->coll->has_op && !t->coll->op_label_only ? t->op->name : "");
    perf_explain_begin(&p->explain, label);
  }
  for (size_t size = o->minbytes; rc == 0; size = perf_size_next(o, size)) {
    if (perf_vs_turn(p)) {
      rc = -1;
      p->failed = 1;
      break;
    }
    set_counts(p, t, size);
    struct perf_row row = {
        .coll = t->coll->name,
        .size = t->counts.sendcount > t->counts.recvcount ? t->counts.sendcount * t->type->size
                                                          : t->counts.recvcount * t->type->size,
        .count = t->counts.paramcount,
        .type = t->type->name,
        .op = t->coll->has_op ? t->op->name : "none",
        .root = t->coll->has_root ? t->root : -1,
    };
    /* --vs: the size's turns (vs.h); the row holds their median. */
    struct perf_half_row oops[PERF_VS_TURNS_MAX], ips[PERF_VS_TURNS_MAX];
    int turns = vs ? o->vs_turns : 1;
    for (int turn = 0; rc == 0 && turn < turns; turn++) {
      if (turn > 0 && perf_vs_turn(p)) {
        rc = -1;
        p->failed = 1;
        break;
      }
      rc = bench_time(p, t, 0, &oops[turn]);
      if (rc == 0) rc = bench_time(p, t, 1, &ips[turn]);
    }
    if (rc == 0) {
      half_median(t, p->nranks, oops, turns, &row.oop);
      half_median(t, p->nranks, ips, turns, &row.ip);
    }
    if (rc) break;
    *bw_sum += row.oop.busbw + row.ip.busbw;
    *bw_count += 2;
    *errors += (row.oop.reported && row.oop.wrong) + (row.ip.reported && row.ip.wrong);
    note_allreduce(p, t, row.oop.busbw);
    emit_row(p, t, &row);
    if (explain)
      perf_explain_add(&p->explain, p->lib, p->comms[0], t->coll->id, row.size,
                       t->counts.paramcount, t->type->nccl, row.oop.time_us);
    if (!perf_size_next(o, size)) break;
  }
  if (explain && rc == 0) perf_explain_print(stdout, &p->explain, p->lib, p->nranks);
  ops_destroy(p, t);
  return rc;
}

static void coll_header(const struct perf_proc* p, const struct perf_coll* coll) {
  const struct perf_opts* o = p->o;
  printf("# Collective test starting: %s\n", coll->title);
  printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
      "iters: %d agg iters: %d validation: %d graph: %d unalign: 0\n",
      o->nthreads, p->nlocal, o->minbytes, o->maxbytes,
      o->stepfactor > 1 ? o->stepfactor : o->stepbytes, o->stepfactor > 1 ? "factor" : "bytes",
      o->warmup, o->iters, o->agg_iters, o->check, o->graph_launches);
  if (o->blocking) printf("# Blocking Enabled: wait and barrier after each iteration\n");
  if (p->s->vs_fd >= 0) {
    printf("# --vs: every size is a turn and starts with its own warm-up: max(-w, %d) calls, "
           "doubled until %d us have passed (at most %d); %d turns per size (rounds A B, "
           "B A, …), the row is their median; ",
           PERF_VS_WARMUP_MIN_CALLS, PERF_VS_WARMUP_MIN_US, PERF_VS_WARMUP_MAX_CALLS,
           o->vs_turns);
    if (o->vs_rep_us > 0)
      printf("each turn's timing is the median of passes repeated until %d us are timed "
             "(at most %d)\n",
             o->vs_rep_us, perf_vs_passes_max(p->nprocs));
    else
      printf("each turn's timing is one pass (--vs-rep-us 0)\n");
  }
  perf_table_columns(stdout);
  fflush(stdout);
}

int perf_bench_coll(struct perf_proc* p, const struct perf_coll* coll) {
  const struct perf_opts* o = p->o;
  if (p->is_root_proc) coll_header(p, coll);
  int t_first = o->type < 0 ? 0 : o->type, t_last = o->type < 0 ? perf_ntypes - 1 : o->type;
  int has_ops = coll->has_op;
  int o_first = !has_ops ? 0 : o->op < 0 ? 0 : o->op;
  int o_last = !has_ops ? 0 : o->op < 0 ? perf_nops - 1 : o->op;
  int r_first = !coll->has_root ? -1 : o->root < 0 ? 0 : o->root;
  int r_last = !coll->has_root ? -1 : o->root < 0 ? p->nranks - 1 : o->root;
  double bw_sum = 0;
  int bw_count = 0, errors = 0, rc = 0;
  for (int ti = t_first; ti <= t_last && rc == 0; ti++)
    for (int oi = o_first; oi <= o_last && rc == 0; oi++)
      for (int r = r_first; r <= r_last && rc == 0; r++) {
        struct test t = {
            .coll = coll, .type = &perf_types[ti], .op = &perf_ops[has_ops ? oi : 0], .root = r};
        rc = time_test(p, &t, &bw_sum, &bw_count, &errors);
      }
  if (rc) return -1;
  double avg = bw_count ? bw_sum / bw_count : 0;
  p->wrong_rows += errors;
  if (p->is_root_proc) {
    const char* verdict = "";
    if (o->min_bw_set) {
      int low = avg < o->min_bw * 0.9;
      verdict = low ? "FAILED" : "OK";
      p->below_min_bw |= low;
    }
    printf("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK");
    printf("# %-20s : %g %s\n", "Avg bus bandwidth", avg, verdict);
    printf("#\n# Collective test concluded: %s\n#\n", coll->title);
    fflush(stdout);
    perf_json_coll_summary(p->json, p->s->lib_label, coll->name, avg, errors);
  }
  return 0;
}

void perf_rank_error(const struct perf_proc* p, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "weft-perf: rank %d: %s\n", p->proc * p->nlocal, msg);
  fflush(stderr);
}
