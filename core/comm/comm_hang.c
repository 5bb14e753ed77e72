/* The hang report: what each rank of a communicator is in, and whom it waits for. Each rank
 * keeps one slot of a per-communicator status board in shared memory (a POSIX segment every
 * rank of a host maps at init, named from the communicator's hash), so any rank of the host can
 * read every local rank's state without the bootstrap, whose connection may itself be stuck.
 * The owner writes its slot with relaxed stores at the edges of a launch (plan_op.c: op, count,
 * datatype, root/peer, sequence number, one clock read) and, only after an item has waited
 * ~100 ms, what it waits for (host_exec.c: peer, channel, step); nothing is written per step.
 * A report is requested by bumping the board's request counter: the watchdog of every rank of
 * the host (comm_hang_watch.c) then logs that rank's line, and one rank logs the summary that
 * names who waits for whom. Ranks of other hosts have their own board and their own summary;
 * a rank without a board (shm refused) reports its own line only. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/comm_hang.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"
#include "util/names.h"

#define BOARD_MAGIC 0x7765667468616e67ull /* "wefthang" */

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

enum { SLOT_EMPTY = 0, SLOT_LIVE, SLOT_DESTROYED, SLOT_ABORTED };
enum { PHASE_NONE = 0, PHASE_SETUP, PHASE_RUN };

/* One rank's state, written by that rank only. */
typedef struct {
  int32_t pid, state, in_call, phase;
  int32_t func, dtype, root, nops;
  uint64_t count, seq;    /* the launch's first collective (or first op; seq 0 for p2p) */
  uint64_t last_seq;      /* the launch's last collective number */
  uint64_t done_seq;      /* last collective number whose launch succeeded */
  uint64_t fail_seq;      /* the launch that failed last (its last collective number) */
  int32_t done_func, done_result;
  uint64_t launches, done_launches;
  uint64_t since_ms; /* when the current launch began or the last one ended (clock_ms) */
  int32_t wait_peer, wait_channel, wait_send, wait_proto;
  uint64_t wait_step, wait_launch, wait_ms;
  uint64_t seen_req; /* report requests this rank has answered */
  uint64_t hb_ms;    /* the watchdog's last tick in this rank's process (RAS: unresponsive) */
  uint64_t func_done[WEFT_HANG_NFUNCS]; /* launches finished, by their first op's function */
} hang_slot;

typedef struct {
  uint64_t magic;
  int32_t nranks, req_by; /* req_by: rank that asked (its own summary), -1: lowest live rank */
  uint64_t req, req_ms;
  hang_slot slot[];
} hang_board;

struct weft_hang {
  hang_board* board;
  size_t bytes;
  int shared; /* board is the shm segment (else private memory: own slot only) */
  char name[64];
  uint64_t auto_launch; /* launch already reported by the timer */
  int check_colls;
  int ready; /* atomic: init is complete (peers, plan): the watchdog may read the comm */
};

static hang_slot* me(struct ncclComm* comm) { return &comm->hang->board->slot[comm->rank]; }

/* ---- the board ---- */

static void board_name(const struct ncclComm* comm, char* buf, size_t len) {
  snprintf(buf, len, "/weft-hang-%u-%016llx-%d", (unsigned)geteuid(),
           (unsigned long long)comm->comm_hash, comm->nranks);
}

/* Map the board segment name, which every local rank of the comm opens, or NULL after a WARN
 * saying why it cannot be used. Two things would make a store to the mapping a SIGBUS later,
 * and both are ruled out here, before it is mapped:
 *  - a full /dev/shm: the file's blocks are allocated now (posix_fallocate), so no room is an
 *    ENOSPC here, and the file this rank made is removed;
 *  - a file someone else controls: the name is predictable (an NCCL_COMM_ID job without
 *    WEFT_COMM_SECRET has a predictable hash), so another user may have created it first and
 *    could truncate it under the mapping. It is used only when this user owns it, nobody else
 *    may open it (mode 0600), it is not a link (O_NOFOLLOW) and its size is 0 (new) or the
 *    board's; otherwise it is left alone (it is not this user's to remove). */
static void* board_map(const struct ncclComm* comm, const char* name, size_t bytes) {
  int fd = shm_open(name, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) { /* no /dev/shm here, say: not worth a warning */
    INFO(NCCL_INIT, "rank %d: cannot open /dev/shm%s for the hang report: %s", comm->rank, name,
         strerror(errno));
    return NULL;
  }
  void* p = NULL;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0) {
    WARN("rank %d: cannot stat /dev/shm%s: %s", comm->rank, name, strerror(errno));
  } else if (st.st_uid != geteuid() || (st.st_mode & 077) != 0 || !S_ISREG(st.st_mode)) {
    WARN("rank %d: /dev/shm%s belongs to uid %u with mode 0%o, not to this user (uid %u) "
         "alone: not used for the hang report (another user may have made it first)",
         comm->rank, name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
         (unsigned)geteuid());
  } else if (st.st_size != 0 && (size_t)st.st_size != bytes) {
    WARN("rank %d: /dev/shm%s has %lld bytes, not the board's %zu: not used for the hang "
         "report", comm->rank, name, (long long)st.st_size, bytes);
  } else if ((rc = ftruncate(fd, (off_t)bytes) != 0 ? errno : 0) != 0 ||
             (rc = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
    WARN("rank %d: cannot allocate %zu bytes of /dev/shm%s for the hang report: %s", comm->rank,
         bytes, name, strerror(rc));
    shm_unlink(name); /* this user's: checked above */
  } else {
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      WARN("rank %d: cannot map /dev/shm%s: %s", comm->rank, name, strerror(errno));
      shm_unlink(name);
      p = NULL;
    }
  }
  close(fd);
  return p;
}

ncclResult_t comm_hang_attach(struct ncclComm* comm) {
  struct weft_hang* h = calloc(1, sizeof *h);
  if (!h) {
    WARN("rank %d: out of memory for the hang report's state", comm->rank);
    return ncclSystemError;
  }
  h->bytes = sizeof(hang_board) + (size_t)comm->nranks * sizeof(hang_slot);
  board_name(comm, h->name, sizeof h->name);
  void* p = board_map(comm, h->name, h->bytes);
  if (p == NULL) {
    INFO(NCCL_INIT, "rank %d: no shared status board for the hang report; it reports this rank "
         "only", comm->rank);
    p = calloc(1, h->bytes);
    if (!p) {
      free(h);
      WARN("rank %d: out of memory for the hang report's board", comm->rank);
      return ncclSystemError;
    }
  } else {
    h->shared = 1;
  }
  h->board = p;
  hang_board* b = h->board;
  uint64_t zero = 0;
  __atomic_compare_exchange_n(&b->magic, &zero, BOARD_MAGIC, 0, __ATOMIC_ACQ_REL,
                              __ATOMIC_RELAXED);
  ST(b->nranks, comm->nranks);
  hang_slot* s = &b->slot[comm->rank];
  ST(s->seen_req, LD(b->req));
  ST(s->wait_peer, -1);
  ST(s->since_ms, clock_ms());
  ST(s->hb_ms, clock_ms());
  ST(s->pid, (int32_t)getpid());
  __atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
  __atomic_store_n(&comm->hang, h, __ATOMIC_RELEASE);
  comm_hang_watch_add();
  return ncclSuccess;
}

void comm_hang_ready(struct ncclComm* comm, int check_colls) {
  struct weft_hang* h = comm->hang;
  if (!h) return;
  if (h->shared) shm_unlink(h->name); /* ENOENT: another rank did */
  h->check_colls = check_colls;
  __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
}

void comm_hang_detach(struct ncclComm* comm) {
  struct weft_hang* h = comm->hang;
  if (!h) return;
  comm_hang_watch_remove();
  int aborted = __atomic_load_n(&comm->abort_flag, __ATOMIC_ACQUIRE) != 0;
  __atomic_store_n(&me(comm)->state, aborted ? SLOT_ABORTED : SLOT_DESTROYED, __ATOMIC_RELEASE);
}

void comm_hang_free(struct ncclComm* comm) {
  struct weft_hang* h = comm->hang;
  if (!h) return;
  if (h->shared) {
    shm_unlink(h->name);
    munmap(h->board, h->bytes);
  } else {
    free(h->board);
  }
  free(h);
  comm->hang = NULL;
}

/* ---- what the data path tells it ---- */

void comm_hang_note_launch(struct ncclComm* comm, const weft_hang_launch* l, int setup) {
  if (!comm->hang || !l) return;
  hang_slot* s = me(comm);
  ST(s->func, l->func);
  ST(s->dtype, (int32_t)l->dtype);
  ST(s->root, l->root);
  ST(s->nops, l->nops);
  ST(s->count, l->count);
  ST(s->seq, l->seq);
  ST(s->last_seq, l->last_seq);
  ST(s->phase, setup ? PHASE_SETUP : PHASE_RUN);
  ST(s->since_ms, clock_ms());
  ST(s->launches, LD(s->launches) + 1);
  __atomic_store_n(&s->in_call, 1, __ATOMIC_RELEASE);
}

void comm_hang_note_run(struct ncclComm* comm) {
  if (comm->hang) ST(me(comm)->phase, PHASE_RUN);
}

void comm_hang_note_done(struct ncclComm* comm, ncclResult_t res) {
  if (!comm->hang || !LD(me(comm)->in_call)) return;
  hang_slot* s = me(comm);
  if (LD(s->last_seq)) ST(*(res == ncclSuccess ? &s->done_seq : &s->fail_seq), LD(s->last_seq));
  ST(s->done_func, LD(s->func));
  ST(s->done_result, (int32_t)res);
  ST(s->done_launches, LD(s->launches));
  int f = LD(s->func);
  if (res == ncclSuccess && f >= 0 && f < WEFT_HANG_NFUNCS) ST(s->func_done[f], LD(s->func_done[f]) + 1);
  ST(s->since_ms, clock_ms());
  ST(s->phase, PHASE_NONE);
  __atomic_store_n(&s->in_call, 0, __ATOMIC_RELEASE);
}

void comm_hang_note_wait(struct ncclComm* comm, int peer, int channel, int is_send, int proto,
                         uint64_t step) {
  if (!comm->hang) return;
  hang_slot* s = me(comm);
  ST(s->wait_peer, peer);
  ST(s->wait_channel, channel);
  ST(s->wait_send, is_send);
  ST(s->wait_proto, proto);
  ST(s->wait_step, step);
  ST(s->wait_ms, clock_ms());
  ST(s->wait_launch, LD(s->launches));
}

/* ---- the report ---- */

/* Device mode: a launch returns once enqueued; what the kernel does after is not on the board. */
static const char* done_word(const struct ncclComm* comm) {
  return comm->mode == WEFT_MODE_DEVICE ? "enqueued" : "finished";
}

static int pid_gone(int pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

/* Short form of r's state, the same for ranks in the same state (the summary groups by it).
 * *waits: the peer r waits for in its current launch, or -1. */
static void rank_key(struct ncclComm* comm, int r, char* buf, size_t len, int* waits) {
  hang_slot* s = &comm->hang->board->slot[r];
  *waits = -1;
  int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if (state == SLOT_EMPTY || (!comm->hang->shared && r != comm->rank)) {
    int other = comm->peers && comm->peers[r].host_hash != comm->peers[comm->rank].host_hash;
    if (other)
      snprintf(buf, len, "on host %s (not visible from here)", comm->peers[r].host);
    else
      snprintf(buf, len, "not visible (no shared status board)");
    return;
  }
  if (state == SLOT_DESTROYED || state == SLOT_ABORTED) {
    snprintf(buf, len, "%s its communicator after #%llu",
             state == SLOT_ABORTED ? "aborted" : "destroyed", (unsigned long long)LD(s->done_seq));
    return;
  }
  if (pid_gone(LD(s->pid))) {
    snprintf(buf, len, "exited (pid %d) after #%llu", (int)LD(s->pid),
             (unsigned long long)LD(s->done_seq));
    return;
  }
  if (!__atomic_load_n(&s->in_call, __ATOMIC_ACQUIRE)) {
    if (LD(s->done_result) != ncclSuccess)
      snprintf(buf, len, "not in a weft call (#%llu failed: %s)",
               (unsigned long long)LD(s->fail_seq),
               weft_result_str((ncclResult_t)LD(s->done_result)));
    else
      snprintf(buf, len, "not in a weft call (last %s #%llu)", done_word(comm),
               (unsigned long long)LD(s->done_seq));
    return;
  }
  int func = LD(s->func);
  char who[32] = "";
  if (func == ncclFuncSend || func == ncclFuncRecv)
    snprintf(who, sizeof who, ", %s rank %d", func == ncclFuncSend ? "to" : "from", LD(s->root));
  else if (func == ncclFuncBroadcast || func == ncclFuncReduce)
    snprintf(who, sizeof who, ", root %d", LD(s->root));
  char seq[24] = "";
  if (LD(s->seq)) snprintf(seq, sizeof seq, " #%llu", (unsigned long long)LD(s->seq));
  snprintf(buf, len, "in %s%s (count %llu%s)", weft_func_name(func), seq,
           (unsigned long long)LD(s->count), who);
  if (LD(s->wait_launch) == LD(s->launches) && LD(s->phase) == PHASE_RUN) *waits = LD(s->wait_peer);
}

/* The full line of rank r, as any rank of its host sees it. */
static void rank_line(struct ncclComm* comm, int r, uint64_t now, char* buf, size_t len) {
  hang_slot* s = &comm->hang->board->slot[r];
  int waits;
  char key[160];
  rank_key(comm, r, key, sizeof key, &waits);
  int in_call = LD(s->state) == SLOT_LIVE && LD(s->in_call) &&
                (comm->hang->shared || r == comm->rank);
  uint64_t since = LD(s->since_ms);
  double secs = now > since ? (double)(now - since) / 1000.0 : 0.0;
  if (!in_call) {
    if (LD(s->state) == SLOT_LIVE && LD(s->done_launches))
      snprintf(buf, len, "rank %d (pid %d): %s; its last launch (%s) ended %.1f s ago", r,
               (int)LD(s->pid), key, weft_func_name(LD(s->done_func)), secs);
    else
      snprintf(buf, len, "rank %d%s: %s", r, LD(s->pid) ? "" : " (no slot)", key);
    return;
  }
  char what[160];
  if (LD(s->phase) == PHASE_SETUP) {
    snprintf(what, sizeof what, "connection setup%s",
             comm->hang->check_colls ? " or the WEFT_CHECK_COLLECTIVES exchange" : "");
  } else if (waits >= 0) {
    uint64_t wms = LD(s->wait_ms);
    snprintf(what, sizeof what, "%s rank %d (channel %d, %s, step %llu) for %.1f s",
             LD(s->wait_send) ? "room to send to" : "data from", waits, LD(s->wait_channel),
             LD(s->wait_proto) == NCCL_PROTO_LL ? "LL" : "Simple",
             (unsigned long long)LD(s->wait_step),
             now > wms ? (double)(now - wms) / 1000.0 + 0.1 : 0.1);
  } else if (comm->mode == WEFT_MODE_DEVICE) {
    snprintf(what, sizeof what, "its enqueue on the stream");
  } else {
    snprintf(what, sizeof what, "nothing yet (its steps moved within the last 100 ms)");
  }
  int nops = LD(s->nops);
  char more[48] = "";
  if (nops > 1) snprintf(more, sizeof more, " +%d more op(s) in its group", nops - 1);
  snprintf(buf, len, "rank %d (pid %d): %s %s%s for %.1f s, waiting for %s", r, (int)LD(s->pid),
           key, dtype_name((ncclDataType_t)LD(s->dtype)), more, secs, what);
}

/* "0-6,9" for a sorted list. */
static void ranges(const int* v, int n, char* buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && o + 24 < len; i++) {
    int j = i;
    while (j + 1 < n && v[j + 1] == v[j] + 1) j++;
    o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? "," : "", v[i]);
    if (j > i) o += (size_t)snprintf(buf + o, len - o, "-%d", v[j]);
    i = j;
  }
  if (o + 24 >= len) snprintf(buf + len - 5, 5, "...");
}

/* What the odd rank r does, after "and ": "is in Broadcast #812 (...)", "is not in a weft call
 * (AllReduce #812 not called yet)", "has destroyed its communicator after #811". */
static void odd_text(struct ncclComm* comm, int r, const char* key, int big_first, char* buf,
                     size_t len) {
  hang_slot* s = &comm->hang->board->slot[r];
  hang_slot* b = &comm->hang->board->slot[big_first];
  if (strncmp(key, "not in", 6) == 0 && LD(s->done_result) == ncclSuccess && LD(b->in_call) &&
      LD(b->state) == SLOT_LIVE && LD(b->seq) > LD(s->done_seq))
    snprintf(buf, len, "is not in a weft call (%s #%llu not called yet)",
             weft_func_name(LD(b->func)), (unsigned long long)LD(b->seq));
  else
    snprintf(buf, len, "%s %s", strncmp(key, "in ", 3) && strncmp(key, "not ", 4) &&
                                        strncmp(key, "on ", 3) ? "has" : "is", key);
}

/* The summary line into out (cap bytes, cap >= 512); "" when memory is short. */
static void summary_text(struct ncclComm* comm, const char* why, char* out, size_t cap) {
  int n = comm->nranks;
  out[0] = '\0';
  char(*keys)[160] = calloc((size_t)n, sizeof *keys);
  int* waits = calloc((size_t)n, sizeof *waits);
  int* group = calloc((size_t)n, sizeof *group); /* group index of each rank */
  int* list = calloc((size_t)n, sizeof *list);
  if (!keys || !waits || !group || !list) goto done;
  for (int r = 0; r < n; r++) rank_key(comm, r, keys[r], sizeof keys[r], &waits[r]);
  int ngroups = 0, big = -1, big_n = 0, big_first = 0;
  for (int r = 0; r < n; r++) {
    group[r] = -1;
    for (int q = 0; q < r; q++)
      if (strcmp(keys[q], keys[r]) == 0) {
        group[r] = group[q];
        break;
      }
    if (group[r] < 0) group[r] = ngroups++;
  }
  size_t o = 0;
  o += (size_t)snprintf(out, cap, "hang report (%s) comm %s%s0x%llx: ", why, comm->name,
                        comm->name[0] ? " " : "", (unsigned long long)comm->comm_hash);
  char* waited = calloc((size_t)n, 1);
  if (!waited) goto done;
  for (int g = 0; g < ngroups && o < cap - 256; g++) {
    int m = 0, nw = 0, first = -1;
    for (int r = 0; r < n; r++)
      if (group[r] == g) {
        if (first < 0) first = r;
        list[m++] = r;
      }
    if (m > big_n) big_n = m, big = g, big_first = first;
    char rs[128];
    ranges(list, m, rs, sizeof rs);
    o += (size_t)snprintf(out + o, cap - o, "%s%s %s %s", g ? "; " : "", m > 1 ? "ranks" : "rank",
                          rs, keys[first]);
    int* wl = list; /* reuse: the peers this group waits for */
    for (int r = 0; r < n; r++) waited[r] = 0;
    for (int r = 0; r < n; r++)
      if (group[r] == g && waits[r] >= 0 && waits[r] < n) waited[waits[r]] = 1;
    for (int r = 0; r < n; r++)
      if (waited[r]) wl[nw++] = r;
    if (nw) {
      ranges(wl, nw, rs, sizeof rs);
      o += (size_t)snprintf(out + o, cap - o, " %s for %s %s", m > 1 ? "wait" : "waits",
                            nw > 1 ? "ranks" : "rank", rs);
    }
  }
  /* The odd ones out: ranks the largest group waits for, or everyone outside it. */
  int nodd = 0;
  for (int r = 0; r < n; r++) waited[r] = 0;
  for (int r = 0; r < n; r++)
    if (group[r] == big && waits[r] >= 0 && waits[r] < n && group[waits[r]] != big)
      waited[waits[r]] = 1;
  int any = 0;
  for (int r = 0; r < n; r++) any |= waited[r];
  if (!any && ngroups > 1)
    for (int r = 0; r < n; r++) waited[r] = group[r] != big;
  for (int r = 0; r < n && o < cap - 256; r++) {
    if (!waited[r]) continue;
    if (nodd++ == 8) {
      o += (size_t)snprintf(out + o, cap - o, "; ...");
      break;
    }
    hang_slot* s = &comm->hang->board->slot[r];
    char what[200];
    odd_text(comm, r, keys[r], big_first, what, sizeof what);
    o += (size_t)snprintf(out + o, cap - o, "%s rank %d last %s #%llu and %s",
                          nodd == 1 ? " -- odd one out:" : ";", r, done_word(comm),
                          (unsigned long long)LD(s->done_seq), what);
  }
  if (ngroups == 1 && nodd == 0) o += (size_t)snprintf(out + o, cap - o, " (all alike)");
  free(waited);
done:
  free(keys);
  free(waits);
  free(group);
  free(list);
}

static void summary(struct ncclComm* comm, const char* why) {
  char* out = calloc(1, 4096);
  if (!out) return;
  summary_text(comm, why, out, 4096);
  if (out[0]) weft_log_report(__FILE__, __LINE__, "%s", out);
  free(out);
}

/* Lowest rank of this board whose slot is live (the summary's author for timer and signal). */
static int summary_rank(struct ncclComm* comm) {
  if (!comm->hang->shared) return comm->rank;
  for (int r = 0; r < comm->nranks; r++) {
    hang_slot* s = &comm->hang->board->slot[r];
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_LIVE && !pid_gone(LD(s->pid)))
      return r;
  }
  return comm->rank;
}

static void own_line(struct ncclComm* comm, const char* why) {
  char line[512];
  rank_line(comm, comm->rank, clock_ms(), line, sizeof line);
  weft_log_report(__FILE__, __LINE__, "hang report (%s) comm %s%s0x%llx: %s", why, comm->name,
                  comm->name[0] ? " " : "", (unsigned long long)comm->comm_hash, line);
}

static void request(struct ncclComm* comm, int by) {
  hang_board* b = comm->hang->board;
  ST(b->req_by, by);
  ST(b->req_ms, clock_ms());
  __atomic_add_fetch(&b->req, 1, __ATOMIC_ACQ_REL);
}

ncclResult_t comm_hang_report_now(struct ncclComm* comm) {
  if (!comm->hang) {
    WARN("weftCommHangReport: rank %d: this communicator has no hang report state (init did "
         "not finish)", comm->rank);
    return ncclInvalidUsage;
  }
  request(comm, comm->rank);
  ST(me(comm)->seen_req, LD(comm->hang->board->req));
  own_line(comm, "requested");
  summary(comm, "requested");
  return ncclSuccess;
}

void comm_hang_poll(struct ncclComm* comm, uint64_t now, int hang_ms, int signalled) {
  struct weft_hang* h = __atomic_load_n(&comm->hang, __ATOMIC_ACQUIRE);
  if (!h) return;
  ST(me(comm)->hb_ms, now); /* also during init: a long setup is not an unresponsive process */
  if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) return;
  hang_board* b = h->board;
  hang_slot* s = me(comm);
  if (signalled && now - LD(b->req_ms) > 1000) request(comm, -1);
  if (hang_ms > 0 && LD(s->in_call) && LD(s->launches) != h->auto_launch &&
      now - LD(s->since_ms) >= (uint64_t)hang_ms) {
    h->auto_launch = LD(s->launches);
    uint64_t last = LD(b->req_ms);
    if (now - last >= (uint64_t)hang_ms / 2 &&
        __atomic_compare_exchange_n(&b->req_ms, &last, now, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
      ST(b->req_by, -1);
      __atomic_add_fetch(&b->req, 1, __ATOMIC_ACQ_REL);
    }
  }
  uint64_t req = __atomic_load_n(&b->req, __ATOMIC_ACQUIRE);
  if (req == LD(s->seen_req)) return;
  ST(s->seen_req, req);
  int by = LD(b->req_by);
  const char* why = by >= 0 ? "requested by a rank" : signalled ? "SIGUSR1" : "WEFT_HANG_REPORT_MS";
  own_line(comm, why);
  if (by == comm->rank || (by < 0 && summary_rank(comm) == comm->rank)) summary(comm, why);
}

/* ---- what the RAS service reads (ras/) ---- */

int comm_hang_view(struct ncclComm* comm, int r, weft_hang_view* v) {
  memset(v, 0, sizeof *v);
  struct weft_hang* h = __atomic_load_n(&comm->hang, __ATOMIC_ACQUIRE);
  if (!h || r < 0 || r >= comm->nranks || (!h->shared && r != comm->rank)) return 0;
  hang_slot* s = &h->board->slot[r];
  int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  if (state == SLOT_EMPTY) return 0;
  v->state = state == SLOT_LIVE ? WEFT_HANG_LIVE : state == SLOT_ABORTED ? WEFT_HANG_ABORTED
                                                                         : WEFT_HANG_DESTROYED;
  v->pid = LD(s->pid);
  v->in_call = LD(s->in_call);
  v->func = LD(s->func);
  v->seq = LD(s->seq);
  v->done_seq = LD(s->done_seq);
  v->result = LD(s->done_result);
  v->hb_ms = LD(s->hb_ms);
  v->since_ms = LD(s->since_ms);
  for (int f = 0; f < WEFT_HANG_NFUNCS; f++) v->func_done[f] = LD(s->func_done[f]);
  return 1;
}

int comm_hang_lines(struct ncclComm* comm, int r, char* line, size_t len, char* summ,
                    size_t summ_len) {
  struct weft_hang* h = __atomic_load_n(&comm->hang, __ATOMIC_ACQUIRE);
  if (!h || !__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) return 0;
  if (line && r >= 0 && r < comm->nranks) rank_line(comm, r, clock_ms(), line, len);
  if (summ) summary_text(comm, "RAS STATUS", summ, summ_len);
  return 1;
}
