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
 *   remote        it runs on another host: its host's boards are not visible from here; such
 *                 ranks are counted (other_hosts_ranks_count), not listed, so a report's size
 *                 follows the host's ranks, not the job's.
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

enum { RK_OK = 0, RK_UNRESPONSIVE, RK_DEAD, RK_MISSING, RK_REMOTE };
static const char* const rk_word[] = {"ok", "unresponsive", "dead", "missing", "remote"};

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

static int classify(struct ncclComm* comm, int r, const weft_hang_view* v, int seen,
                    uint64_t now, int factor, const char** why) {
  *why = "";
  if (!seen) {
    const weft_rank_info* p = peers_of(comm);
    if (p && p[r].host_hash && p[r].host_hash != p[comm->rank].host_hash) {
      *why = "on another host (its host's ranks are not visible from here)";
      return RK_REMOTE;
    }
    *why = "has not joined the communicator's status board (init not reached)";
    return RK_MISSING;
  }
  if (v->state != WEFT_HANG_LIVE) return RK_OK; /* destroyed/aborted: shown by its flags */
  if (v->pid > 0 && !proc_alive(v->pid)) {
    *why = "its process exited";
    return RK_DEAD;
  }
  char st = v->pid > 0 ? proc_state(v->pid) : 0;
  if (st == 'T' || st == 't') {
    *why = "its process is stopped";
    return RK_UNRESPONSIVE;
  }
  if (now > v->hb_ms && now - v->hb_ms > (uint64_t)RAS_STALE_MS * (uint64_t)factor) {
    *why = "its process has not run its watchdog lately";
    return RK_UNRESPONSIVE;
  }
  return RK_OK;
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
} report_args;

static const char* host_of(struct ncclComm* comm, int r) {
  const weft_rank_info* p = peers_of(comm);
  return p ? p[r].host : "?";
}

static void report_comm(struct ncclComm* comm, void* arg) {
  report_args* a = arg;
  int n = comm->nranks;
  int init = __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
  int my_state = __atomic_load_n(&comm->state, __ATOMIC_ACQUIRE);
  int ready = my_state == WEFT_COMM_READY || my_state == WEFT_COMM_FINALIZED;
  const weft_rank_info* peers = peers_of(comm);
  int nok = 0, nbad = 0, nremote = 0; /* remote: on other hosts, counted, not listed */
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
      ras_buf_printf(t, "  %-5s %-8s %-16s %-6s %-6s %-6s %-7s %s\n", "Rank", "PID", "Host",
                     "Init", "Error", "Abort", "Destroy", "Collectives (finished launches)");
    }
    int first = 1;
    for (int r = 0; r < n; r++) {
      weft_hang_view v;
      int seen = comm_hang_view(comm, r, &v);
      const char* why;
      int k = classify(comm, r, &v, seen, a->now, a->factor, &why);
      if (pass == 0) {
        if (k == RK_OK) nok++;
        else if (k == RK_REMOTE) nremote++;
        else nbad++;
        if (seen && v.in_call && a->now > v.since_ms && a->now - v.since_ms > stuck_ms)
          stuck_ms = a->now - v.since_ms;
        continue;
      }
      if (k != RK_OK) continue;
      int mine = r == comm->rank;
      int rinit = mine ? init : ready ? ncclSuccess : ncclInProgress;
      int aerr = mine ? (init == ncclInProgress ? ncclSuccess : init) : 0;
      if (!aerr && v.result != ncclSuccess) aerr = v.result;
      int abort_flag = mine ? __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) != 0
                            : v.state == WEFT_HANG_ABORTED;
      int destroy_flag = v.state == WEFT_HANG_DESTROYED;
      int finalized = mine ? my_state == WEFT_COMM_FINALIZED : 0;
      if (aerr || abort_flag) a->nerr++;
      ras_buf_printf(j, "%s\n        {\n          \"rank\": %d,\n          \"host\": ", first ? "" : ",", r);
      first = 0;
      json_str(j, host_of(comm, r));
      ras_buf_printf(j, ",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": -1,\n"
                     "          \"status\": {\n            \"init_state\": %d,\n            \"async_error\": %d,\n"
                     "            \"finalize_called\": %s,\n            \"destroy_flag\": %s,\n"
                     "            \"abort_flag\": %s\n          },\n          \"collective_counts\": {",
                     v.pid, peers ? peers[r].cuda_dev : -1, rinit, aerr,
                     finalized ? "true" : "false", destroy_flag ? "true" : "false",
                     abort_flag ? "true" : "false");
      char colls[256] = "";
      size_t o = 0;
      for (int f = 0; f < ncclNumFuncs; f++) {
        ras_buf_printf(j, "%s\n            \"%s\": %llu", f ? "," : "", weft_func_name(f),
                       (unsigned long long)v.func_done[f]);
        if (v.func_done[f] && o + 40 < sizeof colls)
          o += (size_t)snprintf(colls + o, sizeof colls - o, "%s%s %llu", o ? ", " : "",
                                weft_func_name(f), (unsigned long long)v.func_done[f]);
      }
      ras_buf_printf(j, "\n          },\n          \"weft\": {\n            \"in_call\": %s,\n"
                     "            \"last_finished_seq\": %llu",
                     v.in_call ? "true" : "false", (unsigned long long)v.done_seq);
      char line[512];
      if (comm_hang_lines(comm, r, line, sizeof line, NULL, 0)) {
        ras_buf_printf(j, ",\n            \"hang_line\": ");
        json_str(j, line);
      }
      ras_buf_printf(j, "\n          }\n        }");
      ras_buf_printf(t, "  %-5d %-8d %-16.16s %-6s %-6s %-6s %-7s %s\n", r, v.pid,
                     host_of(comm, r), rinit == ncclSuccess ? "done" : rinit == ncclInProgress ? "busy" : "FAIL",
                     aerr ? "YES" : "-", abort_flag ? "YES" : "-", destroy_flag ? "YES" : "-",
                     colls[0] ? colls : "none");
      if (a->verbose && comm_hang_lines(comm, r, line, sizeof line, NULL, 0))
        ras_buf_printf(t, "        %s\n", line);
    }
    if (pass == 0) continue;
    ras_buf_printf(j, "\n      ],\n      \"missing_ranks\": [");
    first = 1;
    for (int r = 0; r < n; r++) {
      weft_hang_view v;
      int seen = comm_hang_view(comm, r, &v);
      const char* why;
      int k = classify(comm, r, &v, seen, a->now, a->factor, &why);
      if (k == RK_OK || k == RK_REMOTE) continue;
      ras_buf_printf(j, "%s\n        {\n          \"rank\": %d,\n          \"host\": ", first ? "" : ",", r);
      first = 0;
      json_str(j, host_of(comm, r));
      ras_buf_printf(j, ",\n          \"pid\": %d,\n          \"cuda_dev\": %d,\n          \"nvml_dev\": -1,\n"
                     "          \"status\": {\n            \"unresponsive\": %s,\n"
                     "            \"considered_dead\": %s\n          },\n"
                     "          \"weft\": {\n            \"state\": \"%s\",\n            \"why\": ",
                     seen ? v.pid : (peers ? peers[r].pid : -1), peers ? peers[r].cuda_dev : -1,
                     k == RK_UNRESPONSIVE ? "true" : "false", k == RK_DEAD ? "true" : "false",
                     rk_word[k]);
      json_str(j, why);
      ras_buf_printf(j, "\n          }\n        }");
      ras_buf_printf(t, "  rank %d (pid %d, host %s) %s: %s\n", r,
                     seen ? v.pid : (peers ? peers[r].pid : -1), host_of(comm, r),
                     k == RK_DEAD ? "DEAD" : k == RK_UNRESPONSIVE ? "UNRESPONSIVE"
                     : "MISSING", why);
    }
    ras_buf_printf(j, "\n      ],\n      \"weft\": {\n        \"name\": ");
    json_str(j, comm->name);
    ras_buf_printf(j, ",\n        \"this_rank\": %d,\n        \"this_rank_init_state\": %d,\n"
                   "        \"other_hosts_ranks_count\": %d", comm->rank, init, nremote);
    if (nremote)
      ras_buf_printf(t, "  %d rank(s) on other hosts: not visible from here (ask on their hosts)\n",
                     nremote);
    char summ[4096];
    if (comm_hang_lines(comm, -1, NULL, 0, summ, sizeof summ) && summ[0]) {
      ras_buf_printf(j, ",\n        \"hang_summary\": ");
      json_str(j, summ);
      /* text: only when it says something (a healthy job's ranks are just at different steps) */
      if (a->verbose || nbad || stuck_ms >= 1000)
        ras_buf_printf(t, "  Who waits for whom: %s\n", summ);
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

void ras_report_status(ras_buf* out, int format, int verbose, int timeout_factor) {
  uint64_t t0 = clock_ns();
  ras_buf text = {0}, json = {0};
  report_args a = {&text, &json, verbose, timeout_factor, 0, 0, 0, 0, 0, clock_ms()};
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
                   "    \"timeouts_count\": 0\n  },\n  \"weft\": {\n    \"version\": \"%s\",\n"
                   "    \"answered_by_pid\": %d,\n    \"host\": ", secs, WEFT_VERSION_STRING,
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
    weft_hang_view v;
    int seen = comm_hang_view(comm, r, &v);
    const char* why;
    int k = classify(comm, r, &v, seen, a->now, a->factor, &why);
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
    if (seen) e->pid = v.pid;
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
