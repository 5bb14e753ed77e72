/* The two-process harness (see net_suite.h). The test child forks a peer; handles travel over a
 * socketpair (MSG_NOSIGNAL, so a dead side never raises SIGPIPE in ours); results travel over a
 * shared page, so the child learns of a peer's failure while it is still polling. The peer dies
 * with the child (PR_SET_PDEATHSIG) and lives in the child's process group, which the runner
 * kills after each test. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_suite.h"

enum { PEER_RUNNING = 0, PEER_FN_DONE = 1, PEER_CLOSED = 2 };

typedef struct {
  int peer_state;  /* PEER_* (atomic) */
  int peer_result; /* conf_result of the peer's part */
  char peer_reason[1024];
  int child_done;  /* the child finished its part: the peer may close (atomic) */
} pair_shared;

static nt_side* cur_side;
static pair_shared* shared;
static int peer_status;
static int peer_reaped;

static conf_result peer_death_reason(int status) {
  char sig[96], stage[160];
  conf_stage_describe_peer(stage, sizeof stage);
  if (WIFSIGNALED(status))
    return conf_fail("peer killed by %s%s", conf_signal_name(WTERMSIG(status), sig, sizeof sig),
                     stage);
  return conf_fail("peer exited with status %d before finishing its part",
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

conf_result nt_peer_alive(nt_side* s) {
  if (s->is_peer || s->peer_may_exit) return CONF_PASS;
  if (shared && __atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) >= PEER_FN_DONE &&
      shared->peer_result == CONF_FAIL)
    return conf_fail("peer: %s", shared->peer_reason);
  if (!peer_reaped) {
    pid_t w = waitpid(s->peer_pid, &peer_status, WNOHANG);
    if (w == s->peer_pid) peer_reaped = 1;
  }
  if (peer_reaped) {
    int state = shared ? __atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) : PEER_CLOSED;
    if (WIFSIGNALED(peer_status) || state < PEER_FN_DONE) return peer_death_reason(peer_status);
  }
  return CONF_PASS;
}

conf_result nt_wait_peer_exit(nt_side* s) {
  double deadline = nt_now() + nt_ctx->wait_s;
  while (!peer_reaped) {
    if (waitpid(s->peer_pid, &peer_status, WNOHANG) == s->peer_pid) {
      peer_reaped = 1;
      break;
    }
    if (nt_now() > deadline) return conf_fail("the peer did not exit within %.0f s", nt_ctx->wait_s);
    usleep(1000);
  }
  return CONF_PASS;
}

conf_result nt_peer_reported(nt_side* s) {
  (void)s;
  if (!shared || __atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) < PEER_FN_DONE)
    return CONF_PASS;
  return (conf_result)shared->peer_result;
}

const char* nt_peer_reason(void) { return shared ? shared->peer_reason : ""; }

int nt_peer_exited(nt_side* s) {
  if (!peer_reaped && waitpid(s->peer_pid, &peer_status, WNOHANG) == s->peer_pid) peer_reaped = 1;
  return peer_reaped;
}

conf_result nt_pair_peer_check(void) {
  if (cur_side == NULL) return CONF_PASS;
  return nt_peer_alive(cur_side);
}

conf_result nt_ctl_send(nt_side* s, const void* buf, size_t len) {
  int fd = s->is_peer ? s->from_peer : s->to_peer;
  const char* p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!s->is_peer) CONF_TRY(nt_peer_alive(s));
      return conf_fail("control channel to the %s closed: %s", s->is_peer ? "test" : "peer",
                       strerror(errno));
    }
    p += n;
    len -= (size_t)n;
  }
  return CONF_PASS;
}

conf_result nt_ctl_recv(nt_side* s, void* buf, size_t len) {
  int fd = s->is_peer ? s->from_peer : s->to_peer;
  char* p = buf;
  double deadline = nt_now() + nt_wait_bound(0) * 2;
  while (len > 0) {
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (!s->is_peer) CONF_TRY(nt_peer_alive(s));
      if (nt_now() > deadline)
        return conf_fail("no word from the %s for %.0f s", s->is_peer ? "test" : "peer",
                         nt_wait_bound(0) * 2);
      continue;
    }
    ssize_t n = recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!s->is_peer) {
        /* The peer is gone: wait briefly for its status to say why. */
        for (int i = 0; i < 100 && !peer_reaped; i++) {
          CONF_TRY(nt_peer_alive(s));
          usleep(10000);
        }
        CONF_TRY(nt_peer_alive(s));
      }
      return conf_fail("control channel from the %s closed", s->is_peer ? "test" : "peer");
    }
    p += n;
    len -= (size_t)n;
  }
  return CONF_PASS;
}

/* Listen nlisten times and send the handles; receive nconnect handles; then drive every connect
 * and accept together until all complete. */
static conf_result pair_connect(nt_side* s, int nlisten, int nconnect) {
  nt_plugin* p = &s->plugin;
  unsigned char mine[NT_MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE];
  unsigned char theirs[NT_MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE];
  for (int i = 0; i < nlisten; i++) CONF_TRY(nt_listen(p, mine[i], &s->listen[i]));
  if (nlisten) CONF_TRY(nt_ctl_send(s, mine, sizeof mine[0] * (size_t)nlisten));
  if (nconnect) CONF_TRY(nt_ctl_recv(s, theirs, sizeof theirs[0] * (size_t)nconnect));
  ncclNetDeviceHandle_v12_t* devh = NULL;
  double deadline = nt_now() + nt_ctx->wait_s;
  nt_backoff b = {0};
  for (;;) {
    int pending = 0;
    for (int i = 0; i < nconnect; i++) {
      if (s->send[i]) continue;
      NT_CALL("connect", p->api->connect(p->nctx, p->dev, theirs[i], &s->send[i], &devh));
      if (!s->send[i]) pending++;
    }
    for (int i = 0; i < nlisten; i++) {
      if (s->recv[i]) continue;
      NT_CALL("accept", p->api->accept(s->listen[i], &s->recv[i], &devh));
      if (!s->recv[i]) pending++;
    }
    if (!pending) return CONF_PASS;
    if (!s->is_peer) CONF_TRY(nt_peer_alive(s));
    if (nt_now() > deadline)
      return conf_fail("%d of %d connect/accept calls not complete after %.0f s", pending,
                       nlisten + nconnect, nt_ctx->wait_s);
    nt_backoff_wait(&b);
  }
}

static conf_result close_side(nt_side* s) {
  nt_plugin* p = &s->plugin;
  if (p->api == NULL) return CONF_PASS;
  for (int i = 0; i < NT_MAX_CONNS; i++) {
    if (s->send[i]) NT_CALL_SETUP("closeSend", p->api->closeSend(s->send[i]));
    s->send[i] = NULL;
    if (s->recv[i]) NT_CALL_SETUP("closeRecv", p->api->closeRecv(s->recv[i]));
    s->recv[i] = NULL;
    if (s->listen[i]) NT_CALL_SETUP("closeListen", p->api->closeListen(s->listen[i]));
    s->listen[i] = NULL;
  }
  return nt_close(p);
}

static void wait_flag(int* flag, int value, double bound_s) {
  double deadline = nt_now() + bound_s;
  nt_backoff b = {0};
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < value && nt_now() < deadline)
    nt_backoff_wait(&b);
}

/* Runs o->before_open (when set) and keeps its answer in s, the reason taken off the process's
 * record so that a later failure records its own. */
static void before_open(nt_side* s, const nt_pair_opts* o) {
  s->before_result = o->before_open ? o->before_open(s) : CONF_PASS;
  if (s->before_result == CONF_PASS) return;
  snprintf(s->before_why, sizeof s->before_why, "%s", conf_reason());
  conf_clear_reason();
}

static void peer_finish(pair_shared* sh, conf_result r, int state) {
  snprintf(sh->peer_reason, sizeof sh->peer_reason, "%s", conf_reason());
  sh->peer_result = r;
  __atomic_store_n(&sh->peer_state, state, __ATOMIC_RELEASE);
}

static void run_peer(nt_side* s, const nt_pair_opts* o, nt_side_fn fn, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  if (conf_result_fd >= 0) close(conf_result_fd);
  conf_stage_become_peer();
  s->is_peer = 1;
  int n = o->nconns > 0 ? o->nconns : 1;
  before_open(s, o);
  conf_result r = nt_open(&s->plugin);
  if (r == CONF_PASS) r = pair_connect(s, o->bidir ? n : 0, n);
  if (r == CONF_PASS) r = fn(s);
  peer_finish(shared, r, PEER_FN_DONE);
  if (r != CONF_PASS) _exit(0);
  /* Close only after the test side is done too, as NCCL closes after a final barrier. */
  wait_flag(&shared->child_done, 1, nt_wait_bound(0) * 4);
  if (!o->no_close) {
    r = close_side(s);
    if (r != CONF_PASS) {
      peer_finish(shared, r, PEER_CLOSED);
      _exit(0);
    }
  }
  peer_finish(shared, CONF_PASS, PEER_CLOSED);
  _exit(0);
}

static void kill_peer(nt_side* s) {
  if (peer_reaped) return;
  kill(s->peer_pid, SIGKILL);
  waitpid(s->peer_pid, &peer_status, 0);
  peer_reaped = 1;
}

/* The child's reason, with the peer's fate when it failed too: a peer that crashed is usually
 * the cause (the child then sees a closed connection), so its signal leads. Waits up to a second
 * for a peer that has not reported yet, then ends it. */
static conf_result child_failed(nt_side* s, conf_result r) {
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", conf_reason());
  double deadline = nt_now() + 1.0;
  while (!peer_reaped && __atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) < PEER_FN_DONE &&
         nt_now() < deadline) {
    if (waitpid(s->peer_pid, &peer_status, WNOHANG) == s->peer_pid) peer_reaped = 1;
    else usleep(2000);
  }
  int state = __atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE);
  char text[2300];
  char sig[96], stage[160];
  if (peer_reaped && WIFSIGNALED(peer_status) && strstr(mine, "peer killed") == NULL) {
    conf_stage_describe_peer(stage, sizeof stage);
    snprintf(text, sizeof text, "peer killed by %s%s; then here: %s",
             conf_signal_name(WTERMSIG(peer_status), sig, sizeof sig), stage, mine);
  } else if (state >= PEER_FN_DONE && shared->peer_result == CONF_FAIL &&
             strstr(mine, shared->peer_reason) == NULL) {
    snprintf(text, sizeof text, "%s; peer: %s", mine, shared->peer_reason);
  } else {
    snprintf(text, sizeof text, "%s", mine);
  }
  kill_peer(s);
  conf_set_reason(text);
  return r;
}

conf_result nt_run_pair(const nt_pair_opts* o, nt_side_fn child_fn, nt_side_fn peer_fn) {
  static nt_side side;
  nt_side* s = &side;
  memset(s, 0, sizeof *s);
  s->arg = o->arg;
  s->nconns = o->nconns > 0 ? o->nconns : 1;
  if (s->nconns > NT_MAX_CONNS) return conf_fail("harness: at most %d connections", NT_MAX_CONNS);
  shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return conf_fail("harness: mmap failed: %s", strerror(errno));
  memset(shared, 0, sizeof *shared);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    return conf_fail("harness: socketpair failed: %s", strerror(errno));
  pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return conf_fail("harness: fork failed: %s", strerror(errno));
  if (pid == 0) {
    close(sv[0]);
    s->from_peer = sv[1];
    s->to_peer = -1;
    cur_side = s;
    run_peer(s, o, peer_fn, parent);
  }
  close(sv[1]);
  s->to_peer = sv[0];
  s->from_peer = -1;
  s->peer_pid = pid;
  peer_reaped = 0;
  cur_side = s;

  int n = s->nconns;
  before_open(s, o);
  conf_result r = nt_open(&s->plugin);
  if (r == CONF_PASS) r = pair_connect(s, n, o->bidir ? n : 0);
  if (r == CONF_PASS) r = child_fn(s);
  if (r == CONF_SKIP || r == CONF_INCONCLUSIVE) {
    kill_peer(s);
    return r;
  }
  if (r != CONF_PASS) return child_failed(s, r);
  if (s->peer_may_exit) {
    kill_peer(s);
    cur_side = NULL;
    if (!o->no_close) CONF_TRY(close_side(s));
    return CONF_PASS;
  }

  /* Meet: the peer's part must end well too. */
  double bound = nt_wait_bound(0) * 4;
  double deadline = nt_now() + bound;
  nt_backoff b = {0};
  while (__atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) < PEER_FN_DONE) {
    r = nt_peer_alive(s);
    if (r != CONF_PASS) return child_failed(s, r);
    if (nt_now() > deadline)
      return child_failed(s, conf_fail("peer did not finish its part within %.0f s", bound));
    nt_backoff_wait(&b);
  }
  if (shared->peer_result != CONF_PASS) {
    conf_result pr = (conf_result)shared->peer_result;
    kill_peer(s);
    if (pr == CONF_SKIP) return conf_skip("%s", shared->peer_reason);
    if (pr == CONF_INCONCLUSIVE) return conf_inconclusive("peer: %s", shared->peer_reason);
    return conf_fail("peer: %s", shared->peer_reason);
  }
  __atomic_store_n(&shared->child_done, 1, __ATOMIC_RELEASE);
  if (!o->no_close) {
    r = close_side(s);
    if (r != CONF_PASS) return child_failed(s, r);
  }
  /* The peer closes and exits. */
  deadline = nt_now() + bound;
  b.polls = 0;
  while (!peer_reaped) {
    if (waitpid(s->peer_pid, &peer_status, WNOHANG) == s->peer_pid) {
      peer_reaped = 1;
      break;
    }
    if (nt_now() > deadline) {
      kill_peer(s);
      return conf_fail("peer did not close its comms and exit within %.0f s", bound);
    }
    nt_backoff_wait(&b);
  }
  cur_side = NULL;
  if (WIFSIGNALED(peer_status)) return peer_death_reason(peer_status);
  if (__atomic_load_n(&shared->peer_state, __ATOMIC_ACQUIRE) < PEER_CLOSED)
    return conf_fail("peer exited before closing its comms");
  if (shared->peer_result != CONF_PASS) return conf_fail("peer: %s", shared->peer_reason);
  return CONF_PASS;
}
