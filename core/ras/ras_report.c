/* The RAS status report and the peer events. Everything comes from this process's live
 * communicators (comm_registry_visit) and each one's hang-report board: a shared-memory page
 * every rank of the host writes its slot of, so the report of any process of the host names
 * every local rank, including one whose process is stopped (it cannot answer) or dead.
 *
 * A rank of a communicator is, as seen from here:
 *   ok            its slot is live, its pid exists, its process's watchdog ticked lately;
 *   unresponsive  its process is stopped (/proc state T or t), or its watchdog has not ticked
 *                 for RAS_STALE_MS x NCCL_RAS_TIMEOUT_FACTOR;
 *   dead          its pid no longer exists or is a zombie (considered_dead);
 *   missing       it has not mapped the board (still in init, or never arrived);
 *   remote        it runs on another host whose RAS peers were not asked (RAS off there):
 *                 counted (other_hosts_ranks_count), not listed. Ranks of other hosts that
 *                 were asked come from ras_gather.c (their host's own view of them).
 * JSON uses NCCL's field names (communicators, ranks, missing_ranks, status, init_state,
 * async_error, abort_flag, collective_counts, unresponsive, considered_dead); what NCCL has no
 * field for goes under "weft". */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/comm_hang.h"
#include "ras/ras.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/names.h"
#include "util/proc.h"

#define RAS_STALE_MS 3000 /* a process's watchdog ticks at least every second */
#define RAS_WATCH_MAX 4096 /* peer states MONITOR remembers */

void ras_buf_printf(ras_buf* b, const char* fmt, ...) {
  if (b->full) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = b->p ? vsnprintf(b->p + b->len, room, fmt, ap) : -1;
    va_end(ap);
    if (b->p && n >= 0 && (size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t need = b->len + (n > 0 ? (size_t)n : 0) + 1;
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < need) cap *= 2;
    if (need > WEFT_RAS_OUT_MAX) {
      b->full = 1;
      return;
    }
    if (cap > WEFT_RAS_OUT_MAX) cap = WEFT_RAS_OUT_MAX;
    char* p = realloc(b->p, cap);
    if (!p) {
      b->full = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
    b->p[b->len] = '\0';
  }
}

void ras_buf_free(ras_buf* b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* The rank infos, once init has ended (while it runs, another thread writes them). */
static const weft_rank_info* peers_of(struct ncclComm* comm) {
  int st = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  return st != WEFT_COMM_INITIALIZING ? comm->peers : NULL;
}

const char* const ras_why_text[RAS_WHY_COUNT] = {
    "",
    "its process exited",
    "its process is stopped",
    "its process has not run its watchdog lately",
    "has not joined the communicator's status board (init not reached)",
    "on another host, whose RAS peers were not asked (RAS off there, or none listed)",
    "no process of its host takes RAS connections (refused: its processes are gone)",
    "no process of its host answered in time (stopped, hung or unreachable)",
    "never checked in with the bootstrap root: init waits for it",
    "checked in with the bootstrap root; waits for the others",
    /* one literal: clang's -Wstring-concatenation flags a split one in an array */
    "the bootstrap root does not answer (gone, not started, or done: all checked in)",
};

int ras_local_row(struct ncclComm* comm, int r, uint64_t now, int factor, ras_row* out) {
  memset(out, 0, sizeof *out);
  out->rank = r;
  const weft_rank_info* p = peers_of(comm);
  weft_hang_view v;
  if (!comm_hang_view(comm, r, &v)) {
    out->pid = p ? p[r].pid : -1;
    out->init_state = ncclInProgress;
    int remote = p && p[r].host_hash && p[r].host_hash != p[comm->rank].host_hash;
    out->kind = remote ? RK_REMOTE : RK_MISSING;
    out->why = remote ? RAS_WHY_REMOTE : RAS_WHY_NO_BOARD;
    return 0;
  }
  int init = __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  int my_state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  int ready = my_state == WEFT_COMM_READY || my_state == WEFT_COMM_FINALIZED;
  int mine = r == comm->rank;
  out->pid = v.pid;
  out->kind = RK_OK;
  if (v.state == WEFT_HANG_LIVE) { /* destroyed/aborted: shown by its flags */
    char st = v.pid > 0 ? proc_state(v.pid) : 0;
    if (v.pid > 0 && !proc_alive(v.pid)) {
      out->kind = RK_DEAD;
      out->why = RAS_WHY_EXITED;
    } else if (st == 'T' || st == 't') {
      out->kind = RK_UNRESPONSIVE;
      out->why = RAS_WHY_STOPPED;
    } else if (now > v.hb_ms && now - v.hb_ms > (uint64_t)RAS_STALE_MS * (uint64_t)factor) {
      out->kind = RK_UNRESPONSIVE;
      out->why = RAS_WHY_STALE;
    }
  }
  out->init_state = mine ? init : ready ? ncclSuccess : ncclInProgress;
  out->async_error = mine ? (init == ncclInProgress ? ncclSuccess : init) : 0;
  if (!out->async_error && v.result != ncclSuccess) out->async_error = v.result;
  out->abort_flag = mine ? __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) != 0
                         : v.state == WEFT_HANG_ABORTED;
  out->destroy_flag = v.state == WEFT_HANG_DESTROYED;
  out->finalized = mine && my_state == WEFT_COMM_FINALIZED;
  out->in_call = v.in_call != 0;
  out->done_seq = v.done_seq;
  memcpy(out->func_done, v.func_done, sizeof out->func_done);
  return 1;
}

static void json_str(ras_buf* b, const char* s) {
  ras_buf_printf(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') ras_buf_printf(b, "\\%c", c);
    else if (c < 0x20) ras_buf_printf(b, "\\u%04x", c);
    else ras_buf_printf(b, "%c", c);
  }
  ras_buf_printf(b, "\"");
}

typedef struct {
  ras_buf *text, *json;
  int verbose, factor, ncomms, nranks, nok, nbad, nerr;
  uint64_t now;
  const ras_net* net;
} report_args;

static const char* host_of(struct ncclComm* comm, int r) {
  const weft_rank_info* p = peers_of(comm);
  return p ? p[r].host : "?";
}

/* What the network said of rank r (other hosts' RAS peers, the bootstrap root), or NULL. */
static const ras_row* net_row(const ras_net_comm* nc, int r) {
  int lo = 0, hi = nc ? nc->nrows - 1 : -1; /* rows are sorted by rank */
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (nc->rows[mid].rank == r) return &nc->rows[mid];
    if (nc->rows[mid].rank < r) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* Rank r as the report shows it: this host's board first, then what other hosts or the
 * bootstrap root said. Returns whether the row has the board's details (line, counts). */
static int row_of(struct ncclComm* comm, int r, const report_args* a, const ras_net_comm* nc,
                  ras_row* row) {
  if (ras_local_row(comm, r, a->now, a->factor, row)) return 1;
  const ras_row* got = net_row(nc, r);
  if (got) {
    *row = *got;
    return row->kind == RK_OK || row->pid > 0;
  }
  if (nc && nc->init_asked && peers_of(comm) == NULL) { /* this rank waits in init */
    row->pid = r == comm->rank ? (int)getpid() : -1;
    if (!nc->init_answered) {
      row->why = RAS_WHY_ROOT_GONE;
      if (r == comm->rank) row->kind = RK_OK;
      return 0;
    }
    int missing = 0, listed_to = -1;
    for (int i = 0; i < nc->init.nranges; i++) {
      if (r >= nc->init.first[i] && r <= nc->init.last[i]) missing = 1;
      listed_to = nc->init.last[i];
    }
    int listed_all = nc->init.nranges < BOOTSTRAP_PROGRESS_RANGES;
    if (missing) {
      row->why = RAS_WHY_NOT_ARRIVED;
    } else if (listed_all || r < listed_to) {
      row->kind = RK_OK;
      row->why = RAS_WHY_ARRIVED;
    } /* else beyond the ranges the root's answer could carry: unknown (missing, no board) */
  }
  return 0;
}

static void report_comm(struct ncclComm* comm, void* arg) {
  report_args* a = arg;
  int n = comm->nranks;
  int init = __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  const weft_rank_info* peers = peers_of(comm);
  const ras_net_comm* nc = ras_net_find(a->net, comm->comm_hash);
  int nok = 0, nbad = 0, nremote = 0; /* remote: on other hosts not asked, counted, not listed */
  uint64_t stuck_ms = 0; /* the longest a listed rank has been inside one launch */
  for (int pass = 0; pass < 2; pass++) { /* pass 0 counts, pass 1 writes */
    ras_buf* t = a->text;
    ras_buf* j = a->json;
    if (pass == 1) {
      a->nranks += n;
      a->nok += nok;
      a->nbad += nbad;
      if (a->ncomms++) ras_buf_printf(j, ",\n");
      ras_buf_printf(j, "    {\n      \"hash\": \"0x%llx\",\n      \"secondary_hash\": \"0x0:0x%x\",\n"
                     "      \"size\": %d,\n      \"ranks_count\": %d,\n      \"missing_ranks_count\": %d,\n"
                     "      \"ranks\": [", (unsigned long long)comm->comm_hash,
                     (unsigned)getpid(), n, nok, nbad);
      ras_buf_printf(t, "\nCommunicator 0x%llx%s%s: %d ranks, %d ok, %d missing or not answering; "
                     "this process's rank %d: init %s\n", (unsigned long long)comm->comm_hash,
                     comm->name[0] ? " " : "", comm->name, n, nok, nbad, comm->rank,
                     init == ncclSuccess ? "done" : init == ncclInProgress ? "in progress"
                                                  : weft_result_str((ncclResult_t)init));
      if (nc && nc->init_asked && !peers) {
        if (nc->init_answered)
          ras_buf_printf(t, "  Init: %d of %d ranks checked in with the bootstrap root "
                         "(first %d ms ago)\n", n - nc->init.nmissing, n, nc->init.waited_ms);
        else
          ras_buf_printf(t, "  Init: %s\n", ras_why_text[RAS_WHY_ROOT_GONE]);
      }
      ras_buf_printf(t, "  %-5s %-8s %-16s %-6s %-6s %-6s %-7s %s\n", "Rank", "PID", "Host",
                     "Init", "Error", "Abort", "Destroy", "Collectives (finished launches)");
    }
    int first = 1;
    for (int r = 0; r < n; r++) {
      ras_row w;
      int detail = row_of(comm, r, a, nc, &w);
      if (pass == 0) {
        if (w.kind == RK_OK) nok++;
        else if (w.kind == RK_REMOTE) nremote++;
        else nbad++;
        if (detail && w.in_call && w.kind == RK_OK) {
          weft_hang_view v;
          if (comm_hang_view(comm, r, &v) && a->now > v.since_ms && a->now - v.since_ms > stuck_ms)
            stuck_ms = a->now - v.since_ms;
        }
        continue;
      }
      if (w.kind != RK_OK) continue;
      if (w.async_error || w.abort_flag) a->nerr++;
      ras_buf_printf(j, "%s\n        {\n          \"rank\": %d,\n          \"host\": ", first ? "" : ",", r);
      first = 0;
      json_str(j, host_of(comm, r));
      ras_buf_printf(j, ",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": -1,\n"
                     "          \"status\": {\n            \"init_state\": %d,\n            \"async_error\": %d,\n"
                     "            \"finalize_called\": %s,\n            \"destroy_flag\": %s,\n"
                     "            \"abort_flag\": %s\n          },\n          \"collective_counts\": {",
                     w.pid, peers ? peers[r].cuda_dev : -1, w.init_state, w.async_error,
                     w.finalized ? "true" : "false", w.destroy_flag ? "true" : "false",
                     w.abort_flag ? "true" : "false");
      char colls[256] = "";
      size_t o = 0;
      for (int f = 0; f < ncclNumFuncs; f++) {
        ras_buf_printf(j, "%s\n            \"%s\": %llu", f ? "," : "", weft_func_name(f),
                       (unsigned long long)w.func_done[f]);
        if (w.func_done[f] && o + 40 < sizeof colls)
          o += (size_t)snprintf(colls + o, sizeof colls - o, "%s%s %llu", o ? ", " : "",
                                weft_func_name(f), (unsigned long long)w.func_done[f]);
      }
      ras_buf_printf(j, "\n          },\n          \"weft\": {\n            \"in_call\": %s,\n"
                     "            \"last_finished_seq\": %llu",
                     w.in_call ? "true" : "false", (unsigned long long)w.done_seq);
      if (w.why) {
        ras_buf_printf(j, ",\n            \"why\": ");
        json_str(j, ras_why_text[w.why]);
      }
      if (peers && peers[r].ras_addr.sa.sa_family) { /* where its process answers other hosts */
        char pa[WEFT_SOCKADDR_STRLEN];
        ras_buf_printf(j, ",\n            \"ras_peer\": ");
        json_str(j, socket_addr_str(&peers[r].ras_addr, pa, sizeof pa));
      }
      char line[512];
      int local = detail && net_row(nc, r) == NULL;
      if (local && comm_hang_lines(comm, r, line, sizeof line, NULL, 0)) {
        ras_buf_printf(j, ",\n            \"hang_line\": ");
        json_str(j, line);
      }
      ras_buf_printf(j, "\n          }\n        }");
      ras_buf_printf(t, "  %-5d %-8d %-16.16s %-6s %-6s %-6s %-7s %s\n", r, w.pid,
                     host_of(comm, r), w.init_state == ncclSuccess ? "done"
                     : w.init_state == ncclInProgress ? "busy" : "FAIL",
                     w.async_error ? "YES" : "-", w.abort_flag ? "YES" : "-",
                     w.destroy_flag ? "YES" : "-", colls[0] ? colls : "none");
      if (a->verbose && local && comm_hang_lines(comm, r, line, sizeof line, NULL, 0))
        ras_buf_printf(t, "        %s\n", line);
    }
    if (pass == 0) continue;
    ras_buf_printf(j, "\n      ],\n      \"missing_ranks\": [");
    first = 1;
    for (int r = 0; r < n; r++) {
      ras_row w;
      row_of(comm, r, a, nc, &w);
      if (w.kind == RK_OK || w.kind == RK_REMOTE) continue;
      const char* state = w.why == RAS_WHY_NOT_ARRIVED ? "not_arrived"
                        : w.kind == RK_DEAD ? "dead" : w.kind == RK_UNRESPONSIVE ? "unresponsive"
                                                                         : "missing";
      ras_buf_printf(j, "%s\n        {\n          \"rank\": %d,\n          \"host\": ", first ? "" : ",", r);
      first = 0;
      json_str(j, host_of(comm, r));
      ras_buf_printf(j, ",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": -1,\n"
                     "          \"status\": {\n            \"unresponsive\": %s,\n"
                     "            \"considered_dead\": %s\n          },\n"
                     "          \"weft\": {\n            \"state\": \"%s\",\n            \"why\": ",
                     w.pid, peers ? peers[r].cuda_dev : -1,
                     w.kind == RK_UNRESPONSIVE ? "true" : "false",
                     w.kind == RK_DEAD ? "true" : "false", state);
      json_str(j, ras_why_text[w.why]);
      ras_buf_printf(j, "\n          }\n        }");
      ras_buf_printf(t, "  rank %d (pid %d, host %s) %s: %s\n", r, w.pid, host_of(comm, r),
                     w.kind == RK_DEAD ? "DEAD" : w.kind == RK_UNRESPONSIVE ? "UNRESPONSIVE"
                     : w.why == RAS_WHY_NOT_ARRIVED ? "NOT ARRIVED" : "MISSING",
                     ras_why_text[w.why]);
    }
    ras_buf_printf(j, "\n      ],\n      \"weft\": {\n        \"name\": ");
    json_str(j, comm->name);
    ras_buf_printf(j, ",\n        \"this_rank\": %d,\n        \"this_rank_init_state\": %d,\n"
                   "        \"other_hosts_ranks_count\": %d,\n        \"other_hosts_asked\": %d,\n"
                   "        \"other_hosts_answered\": %d", comm->rank, init, nremote,
                   nc ? nc->hosts : 0, nc ? nc->hosts_answered : 0);
    if (nc && nc->init_asked && !peers) {
      ras_buf_printf(j, ",\n        \"init\": {\n          \"root_answered\": %s,\n"
                     "          \"checked_in\": %d,\n          \"not_arrived_count\": %d,\n"
                     "          \"waited_ms\": %d\n        }",
                     nc->init_answered ? "true" : "false",
                     nc->init_answered ? n - nc->init.nmissing : -1,
                     nc->init_answered ? nc->init.nmissing : -1, nc->init.waited_ms);
    }
    if (nremote)
      ras_buf_printf(t, "  %d rank(s) on other hosts whose RAS peers were not asked (ask on "
                     "their hosts)\n", nremote);
    char summ[4096];
    if (comm_hang_lines(comm, -1, NULL, 0, summ, sizeof summ) && summ[0]) {
      ras_buf_printf(j, ",\n        \"hang_summary\": ");
      json_str(j, summ);
      /* text: only when it says something (a healthy job's ranks are just at different steps) */
      if (a->verbose || nbad || stuck_ms >= 1000)
        ras_buf_printf(t, "  Who waits for whom (this host): %s\n", summ);
    }
    ras_buf_printf(j, "\n      }");
    ras_buf_printf(j, "\n    }");
  }
}

static void timestamp(char* buf, size_t len) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void ras_report_status(ras_buf* out, int format, int verbose, int timeout_factor,
                       const ras_net* net) {
  uint64_t t0 = clock_ns();
  ras_buf text = {0}, json = {0};
  report_args a = {&text, &json, verbose, timeout_factor, 0, 0, 0, 0, 0, clock_ms(), net};
  comm_registry_visit(report_comm, &a);
  char ts[64], host[64] = "";
  timestamp(ts, sizeof ts);
  gethostname(host, sizeof host - 1);
  double secs = (double)(clock_ns() - t0) / 1e9;
  if (format == RAS_JSON) {
    ras_buf_printf(out, "{\n  \"nccl_version\": \"%d.%d.%d\",\n  \"cuda_runtime_version\": 0,\n"
                   "  \"cuda_driver_version\": 0,\n  \"timestamp\": \"%s\",\n"
                   "  \"communicators_count\": %d,\n  \"communicators\": [\n",
                   NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, ts, a.ncomms);
    if (json.p) ras_buf_printf(out, "%s", json.p);
    ras_buf_printf(out, "\n  ],\n  \"ras\": {\n    \"collection_time_sec\": %.3f,\n"
                   "    \"timeouts_count\": %d\n  },\n  \"weft\": {\n    \"version\": \"%s\",\n"
                   "    \"answered_by_pid\": %d,\n    \"host\": ", secs, net ? net->timeouts : 0,
                   WEFT_VERSION_STRING,
                   (int)getpid());
    json_str(out, host);
    ras_buf_printf(out, ",\n    \"scope\": \"this host's ranks of this process's communicators\",\n"
                   "    \"truncated\": %s\n  }\n}\n", text.full || json.full ? "true" : "false");
  } else {
    ras_buf_printf(out, "weft %s (NCCL API %d.%d.%d) RAS report, answered by pid %d on %s at %s\n\n",
                   WEFT_VERSION_STRING, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, (int)getpid(), host, ts);
    ras_buf_printf(out, "Job summary\n===========\n  Communicators: %d   Ranks: %d   Ok: %d   "
                   "Missing or not answering: %d   With errors or aborted: %d\n",
                   a.ncomms, a.nranks, a.nok, a.nbad, a.nerr);
    if (a.ncomms == 0) ras_buf_printf(out, "  (this process has no communicator now)\n");
    if (text.p) ras_buf_printf(out, "%s", text.p);
    ras_buf_printf(out, "\n%s%s", a.nbad || a.nerr ? "Status: PROBLEMS FOUND (see above)\n"
                                                    : "Status: OK\n",
                   text.full ? "(report truncated at 4 MiB)\n" : "");
  }
  ras_buf_free(&text);
  ras_buf_free(&json);
}

/* ---- peer events for MONITOR ---- */

typedef struct {
  uint64_t comm_hash;
  int rank, kind, pid;
  uint64_t gen;
} watch_entry;

struct ras_watch {
  watch_entry e[RAS_WATCH_MAX];
  int n, primed;
  uint64_t gen;
};

typedef struct {
  ras_watch* w;
  ras_buf *text, *json;
  int factor;
  uint64_t now;
} watch_args;

static void emit(watch_args* a, struct ncclComm* comm, int r, int pid, const char* event,
                 const char* details) {
  char ts[64];
  timestamp(ts, sizeof ts);
  ras_buf_printf(a->text, "%s lifecycle %s: rank %d (pid %d, host %s) of communicator 0x%llx: %s\n",
                 ts, event, r, pid, host_of(comm, r), (unsigned long long)comm->comm_hash, details);
  ras_buf_printf(a->json, "{\n  \"timestamp\": \"%s\",\n  \"group\": \"lifecycle\",\n"
                 "  \"event\": \"%s\",\n  \"peer\": {\n    \"host\": ", ts, event);
  json_str(a->json, host_of(comm, r));
  ras_buf_printf(a->json, ",\n    \"pid\": %d,\n    \"cuda_devs\": [],\n    \"nvml_devs\": []\n  },\n"
                 "  \"details\": ", pid);
  char d[256];
  snprintf(d, sizeof d, "rank %d of communicator 0x%llx: %s", r,
           (unsigned long long)comm->comm_hash, details);
  json_str(a->json, d);
  ras_buf_printf(a->json, "\n}\n");
}

static void watch_comm(struct ncclComm* comm, void* arg) {
  watch_args* a = arg;
  ras_watch* w = a->w;
  for (int r = 0; r < comm->nranks; r++) {
    ras_row row;
    int seen = ras_local_row(comm, r, a->now, a->factor, &row);
    int k = row.kind;
    const char* why = ras_why_text[row.why];
    if (k == RK_REMOTE || (k == RK_MISSING && !w->primed)) continue;
    watch_entry* e = NULL;
    for (int i = 0; i < w->n; i++)
      if (w->e[i].comm_hash == comm->comm_hash && w->e[i].rank == r) e = &w->e[i];
    if (!e) {
      if (w->n == RAS_WATCH_MAX) continue; /* bounded: ranks beyond it are not watched */
      e = &w->e[w->n++];
      e->comm_hash = comm->comm_hash;
      e->rank = r;
      e->kind = w->primed ? RK_MISSING : k;
    }
    e->gen = w->gen;
    if (seen) e->pid = row.pid;
    if (e->kind == k) continue;
    const char* ev = k == RK_DEAD ? "PEER_DEAD" : k == RK_UNRESPONSIVE ? "PEER_UNRESPONSIVE"
                   : k == RK_OK ? (e->kind == RK_MISSING ? "PEER_JOINED" : "PEER_RECOVERED")
                                : "PEER_MISSING";
    if (w->primed) emit(a, comm, r, e->pid, ev, k == RK_OK ? "answers again" : why);
    e->kind = k;
  }
}

ras_watch* ras_watch_new(void) { return calloc(1, sizeof(ras_watch)); }
void ras_watch_free(ras_watch* w) { free(w); }

void ras_watch_poll(ras_watch* w, ras_buf* text, ras_buf* json, int timeout_factor) {
  w->gen++;
  watch_args a = {w, text, json, timeout_factor, clock_ms()};
  comm_registry_visit(watch_comm, &a);
  for (int i = 0; i < w->n;) { /* communicators freed here: forget their ranks */
    if (w->e[i].gen != w->gen) w->e[i] = w->e[--w->n];
    else i++;
  }
  w->primed = 1;
}
