/* Launching ranks. -np N: the launcher forks N rank processes and stays as their hub (the
 * side channel of chan.h): every exchange is a round in which each live rank sends one
 * message and, once all have, gets the combined answer. A rank that dies, leaves early or
 * hangs past the timeout ends the run: the others get a short grace period to report their
 * own error, then are killed, and the exit code says the run failed. Under mpirun or with
 * WEFT_RANK/WEFT_NRANKS nothing is forked; perf_world_from_env reads the placement. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "perf.h"

enum { MSG_BCAST = 1, MSG_ALLREDUCE = 2, MSG_ALLGATHER = 3, MSG_BYE = 4 };
enum { MSG_MAX_PAYLOAD = 16 << 20, GRACE_MS = 3000 };

struct msg_hdr {
  uint32_t type;
  uint32_t arg; /* allreduce: op; bye: exit code */
  uint64_t len; /* payload bytes */
};

int perf_write_all(int fd, const void* buf, size_t len) {
  const char* p = buf;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int perf_read_all(int fd, void* buf, size_t len) {
  char* p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, p + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return got == 0 ? 1 : -1;
    if (n < 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --- the rank side ------------------------------------------------------------------------- */

struct hub_client {
  int fd;
  int nprocs;
};

static int client_round(struct perf_chan* ch, uint32_t type, uint32_t arg, const void* out,
                        size_t outlen, void* in, size_t inlen) {
  struct hub_client* c = ch->ctx;
  struct msg_hdr h = {type, arg, outlen};
  if (perf_write_all(c->fd, &h, sizeof h) || (outlen && perf_write_all(c->fd, out, outlen))) {
    fprintf(stderr, "weft-perf: lost the launcher (write: %s)\n", strerror(errno));
    return -1;
  }
  struct msg_hdr r;
  if (perf_read_all(c->fd, &r, sizeof r) || r.type != type || r.len != inlen ||
      (inlen && perf_read_all(c->fd, in, inlen))) {
    fprintf(stderr, "weft-perf: the launcher ended the run (another rank failed)\n");
    return -1;
  }
  return 0;
}

static int client_bcast(struct perf_chan* ch, void* buf, size_t bytes) {
  return client_round(ch, MSG_BCAST, 0, buf, bytes, buf, bytes);
}

static int client_allreduce(struct perf_chan* ch, double* vals, int n, enum perf_chan_op op) {
  return client_round(ch, MSG_ALLREDUCE, (uint32_t)op, vals, (size_t)n * sizeof *vals, vals,
                      (size_t)n * sizeof *vals);
}

static int client_allgather(struct perf_chan* ch, const void* mine, size_t bytes, void* all) {
  struct hub_client* c = ch->ctx;
  return client_round(ch, MSG_ALLGATHER, 0, mine, bytes, all, bytes * (size_t)c->nprocs);
}

static void client_bye(struct perf_chan* ch, int rc) {
  struct hub_client* c = ch->ctx;
  struct msg_hdr h = {MSG_BYE, (uint32_t)rc, 0};
  (void)perf_write_all(c->fd, &h, sizeof h);
}

static void client_destroy(struct perf_chan* ch) {
  struct hub_client* c = ch->ctx;
  close(c->fd);
}

/* --- the hub ------------------------------------------------------------------------------- */

enum rank_state { R_RUNNING, R_BYE, R_GONE };

struct hub_rank {
  pid_t pid;
  int fd;
  enum rank_state state;
  int bye_rc;
  struct msg_hdr hdr; /* this round's message */
  char* payload;
  int has_msg;
  int killed; /* the launcher sent SIGKILL */
};

static void combine(double* acc, const double* v, size_t n, uint32_t op) {
  for (size_t i = 0; i < n; i++) {
    if (op == PERF_CHAN_SUM)
      acc[i] += v[i];
    else if (op == PERF_CHAN_MIN)
      acc[i] = v[i] < acc[i] ? v[i] : acc[i];
    else
      acc[i] = v[i] > acc[i] ? v[i] : acc[i];
  }
}

/* Answers a complete round. 0 when answered, -1 when the ranks disagree. */
static int hub_answer(struct hub_rank* r, int np) {
  struct msg_hdr h = r[0].hdr;
  for (int i = 1; i < np; i++) {
    if (r[i].hdr.type != h.type || r[i].hdr.arg != h.arg || r[i].hdr.len != h.len) {
      fprintf(stderr,
              "weft-perf: ranks 0 and %d disagree on the side-channel exchange (%u/%u vs "
              "%u/%u)\n",
              i, h.type, (unsigned)h.len, r[i].hdr.type, (unsigned)r[i].hdr.len);
      return -1;
    }
  }
  char* answer = NULL;
  size_t alen = 0;
  if (h.type == MSG_BCAST) {
    answer = r[0].payload;
    alen = h.len;
  } else if (h.type == MSG_ALLREDUCE) {
    answer = r[0].payload;
    alen = h.len;
    for (int i = 1; i < np; i++)
      combine((double*)(void*)answer, (const double*)(void*)r[i].payload, h.len / sizeof(double),
              h.arg);
  } else {
    alen = h.len * (size_t)np;
    answer = malloc(alen ? alen : 1);
    if (!answer) return -1;
    for (int i = 0; i < np; i++) memcpy(answer + h.len * (size_t)i, r[i].payload, h.len);
  }
  struct msg_hdr out = {h.type, h.arg, alen};
  for (int i = 0; i < np; i++) {
    /* A rank that died meanwhile shows up as EOF in the next round. */
    if (perf_write_all(r[i].fd, &out, sizeof out) == 0 && alen)
      (void)perf_write_all(r[i].fd, answer, alen);
  }
  if (h.type == MSG_ALLGATHER) free(answer);
  return 0;
}

/* Reads one message from rank i; marks it gone on EOF or garbage. */
static void hub_read(struct hub_rank* r, int i) {
  struct hub_rank* k = &r[i];
  int rc = perf_read_all(k->fd, &k->hdr, sizeof k->hdr);
  if (rc == 0 && k->hdr.len > MSG_MAX_PAYLOAD) rc = -1;
  if (rc == 0 && k->hdr.type == MSG_BYE) {
    k->state = R_BYE;
    k->bye_rc = (int)k->hdr.arg;
    return;
  }
  if (rc == 0 && k->hdr.len) {
    k->payload = malloc(k->hdr.len);
    if (!k->payload || perf_read_all(k->fd, k->payload, k->hdr.len)) rc = -1;
  }
  if (rc != 0) {
    k->state = R_GONE;
    return;
  }
  k->has_msg = 1;
}

/* Stops the ranks still in the run; those that said bye or hung up are leaving already. */
static void hub_kill(struct hub_rank* r, int np) {
  for (int i = 0; i < np; i++)
    if (r[i].pid > 0 && r[i].state == R_RUNNING && !r[i].killed) {
      kill(r[i].pid, SIGKILL);
      r[i].killed = 1;
    }
}

/* Waits for every rank; one that has not exited GRACE_MS after the run ended is killed. */
static void hub_reap(struct hub_rank* r, int n, int* status) {
  double deadline = now_ms() + GRACE_MS;
  int left = n;
  for (int i = 0; i < n; i++) status[i] = -1;
  while (left > 0) {
    for (int i = 0; i < n; i++) {
      if (status[i] != -1) continue;
      int st;
      pid_t w = waitpid(r[i].pid, &st, WNOHANG);
      if (w == r[i].pid || (w < 0 && errno == ECHILD)) {
        status[i] = w == r[i].pid ? st : 0;
        left--;
      }
    }
    if (left == 0) break;
    if (now_ms() > deadline) {
      for (int i = 0; i < n; i++)
        if (status[i] == -1 && !r[i].killed) {
          fprintf(stderr, "weft-perf: rank %d did not exit after the run ended\n", i);
          kill(r[i].pid, SIGKILL);
          r[i].killed = 1;
        }
      deadline = now_ms() + 1e9;
    }
    usleep(2000);
  }
}

/* Serves rounds until every rank said bye, one left abnormally, or the deadline passed.
 * Returns 0 for a clean end, 1 otherwise (the ranks still running were killed). */
static int hub_serve(struct hub_rank* r, int np, int timeout_s) {
  double deadline = timeout_s > 0 ? now_ms() + timeout_s * 1e3 : 0;
  double grace_end = 0;
  int failed = 0;
  struct pollfd* pfd = calloc((size_t)np, sizeof *pfd);
  int* idx = calloc((size_t)np, sizeof *idx);
  if (!pfd || !idx) {
    free(pfd);
    free(idx);
    hub_kill(r, np);
    return 1;
  }
  for (;;) {
    int running = 0, waiting = 0, abnormal = 0;
    for (int i = 0; i < np; i++) {
      if (r[i].state == R_RUNNING) running++;
      if (r[i].state == R_RUNNING && !r[i].has_msg) waiting++;
      if (r[i].state == R_GONE || (r[i].state == R_BYE && r[i].bye_rc != 0)) abnormal = 1;
    }
    if (running == 0) break;
    if ((abnormal || (running < np && waiting == 0)) && !failed) {
      /* A rank is gone (or a round can never complete): give the rest a moment to report
       * their own errors, then end it. */
      failed = 1;
      grace_end = now_ms() + GRACE_MS;
    }
    if (!failed && waiting == 0) {
      if (hub_answer(r, np)) {
        failed = 1;
        grace_end = now_ms();
      }
      for (int i = 0; i < np; i++) {
        free(r[i].payload);
        r[i].payload = NULL;
        r[i].has_msg = 0;
      }
      continue;
    }
    double wait_until = failed ? grace_end : deadline;
    int ms = -1;
    if (wait_until > 0) {
      double left = wait_until - now_ms();
      if (left <= 0) {
        if (!failed)
          fprintf(stderr, "weft-perf: timeout: the run took longer than %d s\n", timeout_s);
        failed = 1;
        break;
      }
      ms = (int)left + 1;
    }
    int n = 0;
    for (int i = 0; i < np; i++) {
      /* After a failure keep reading everyone still running, to notice them leave. */
      if (r[i].state == R_RUNNING && (failed || !r[i].has_msg)) {
        pfd[n].fd = r[i].fd;
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        idx[n++] = i;
      }
    }
    int rc = poll(pfd, (nfds_t)n, ms);
    if (rc < 0 && errno != EINTR) break;
    for (int j = 0; j < n && rc > 0; j++) {
      if (!pfd[j].revents) continue;
      int i = idx[j];
      if (failed && r[i].has_msg) { /* a stale round message: drop it */
        free(r[i].payload);
        r[i].payload = NULL;
        r[i].has_msg = 0;
      }
      hub_read(r, i);
    }
  }
  for (int i = 0; i < np; i++) {
    free(r[i].payload);
    r[i].payload = NULL;
  }
  free(pfd);
  free(idx);
  int clean = !failed;
  for (int i = 0; i < np; i++)
    if (r[i].state != R_BYE || r[i].bye_rc != 0) clean = 0;
  if (!clean) hub_kill(r, np);
  return clean ? 0 : 1;
}

int perf_launch_fork(int np, int timeout_s, perf_rank_main fn, void* arg) {
  struct hub_rank* r = calloc((size_t)np, sizeof *r);
  if (!r) return 1;
  for (int i = 0; i < np; i++) r[i].fd = -1;
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  int spawned = 0;
  for (; spawned < np; spawned++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
      fprintf(stderr, "weft-perf: socketpair: %s\n", strerror(errno));
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "weft-perf: fork of rank %d: %s\n", spawned, strerror(errno));
      close(sv[0]);
      close(sv[1]);
      break;
    }
    if (pid == 0) {
      /* The rank: dies with the launcher, talks to it over sv[1] only. */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      close(sv[0]);
      for (int j = 0; j < spawned; j++) close(r[j].fd);
      struct hub_client client = {sv[1], np};
      struct perf_chan ch = {"hub",      client_bcast,   client_allreduce, client_allgather,
                             client_bye, client_destroy, &client};
      int rc = fn(spawned, np, &ch, arg);
      client_bye(&ch, rc);
      fflush(stdout);
      fflush(stderr);
      exit(rc);
    }
    close(sv[1]);
    r[spawned].pid = pid;
    r[spawned].fd = sv[0];
  }
  int result;
  if (spawned < np) {
    hub_kill(r, spawned);
    result = 1;
  } else {
    result = hub_serve(r, np, timeout_s);
  }
  /* The exit code: the first rank's own non-zero code (the rank that failed, not the ones
   * stopped because of it), else 1 when a rank was killed or the hub saw a failure. */
  int first_rc = 0, killed = 0;
  int* statuses = calloc((size_t)(spawned ? spawned : 1), sizeof *statuses);
  if (!statuses) {
    hub_kill(r, spawned);
    for (int i = 0; i < spawned; i++) waitpid(r[i].pid, NULL, 0);
    free(r);
    return PERF_EXIT_FAIL;
  }
  hub_reap(r, spawned, statuses);
  for (int i = 0; i < spawned; i++) {
    int status = statuses[i];
    if (WIFEXITED(status)) {
      int rc = WEXITSTATUS(status);
      if (rc != 0) fprintf(stderr, "weft-perf: rank %d exited with code %d\n", i, rc);
      if (rc && !first_rc) first_rc = rc;
    } else if (WIFSIGNALED(status)) {
      killed = 1;
      if (WTERMSIG(status) == SIGKILL && r[i].killed)
        fprintf(stderr, "weft-perf: rank %d stopped by the launcher\n", i);
      else
        fprintf(stderr, "weft-perf: rank %d killed by signal %d (%s)\n", i, WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    }
    close(r[i].fd);
  }
  free(statuses);
  free(r);
  if (first_rc) return first_rc;
  if (killed) return PERF_EXIT_FAIL;
  return result ? PERF_EXIT_FAIL : PERF_EXIT_OK;
}

/* --- environment launchers ------------------------------------------------------------------ */

static int env_int(const char* name, int* out) {
  const char* v = getenv(name);
  if (!v || !*v) return 0;
  char* end;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > 1 << 24) return -1;
  *out = (int)n;
  return 1;
}

int perf_world_from_env(struct perf_world* w, char* err, size_t errlen) {
  static const struct {
    const char* rank;
    const char* size;
    const char* label;
  } vars[] = {
      {"WEFT_RANK", "WEFT_NRANKS", "WEFT_RANK/WEFT_NRANKS"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI (OMPI_COMM_WORLD_RANK/SIZE)"},
      {"PMI_RANK", "PMI_SIZE", "PMI (PMI_RANK/PMI_SIZE)"},
      {"SLURM_PROCID", "SLURM_NTASKS", "Slurm (SLURM_PROCID/SLURM_NTASKS)"},
  };
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    int rank = -1, size = -1;
    int a = env_int(vars[i].rank, &rank), b = env_int(vars[i].size, &size);
    if (a == 0 && b == 0) continue;
    if (a != 1 || b != 1 || size < 1 || rank >= size) {
      snprintf(err, errlen, "%s=%s and %s=%s do not name a rank of a job", vars[i].rank,
               getenv(vars[i].rank) ? getenv(vars[i].rank) : "(unset)", vars[i].size,
               getenv(vars[i].size) ? getenv(vars[i].size) : "(unset)");
      return -1;
    }
    w->nprocs = size;
    w->proc = rank;
    w->launcher = vars[i].label;
    w->local_proc = rank;
    static const char* local_vars[] = {"WEFT_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID"};
    for (size_t j = 0; j < sizeof local_vars / sizeof local_vars[0]; j++) {
      int lr;
      if (env_int(local_vars[j], &lr) == 1) {
        w->local_proc = lr;
        break;
      }
    }
    return 1;
  }
  return 0;
}
