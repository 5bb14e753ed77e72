/* See netib_harness.h. */
#include "netib_harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char logbuf[1 << 16];
static size_t loglen;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void nb_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...) {
  (void)flags;
  (void)file;
  (void)line;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char* tag = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "LOG";
  pthread_mutex_lock(&log_lock);
  int k = snprintf(logbuf + loglen, sizeof logbuf - loglen, "%s %s\n", tag, msg);
  if (k > 0 && (size_t)k < sizeof logbuf - loglen) loglen += (size_t)k;
  pthread_mutex_unlock(&log_lock);
  if (getenv("NETIB_TEST_VERBOSE")) fprintf(stderr, "[%d] %s %s\n", (int)getpid(), tag, msg);
}

const char* nb_log(void) { return logbuf; }

int nb_log_has(const char* text) {
  pthread_mutex_lock(&log_lock);
  int r = strstr(logbuf, text) != NULL;
  pthread_mutex_unlock(&log_lock);
  return r;
}

void nb_log_clear(void) {
  pthread_mutex_lock(&log_lock);
  loglen = 0;
  logbuf[0] = '\0';
  pthread_mutex_unlock(&log_lock);
}

void nb_dump_log(void) { fprintf(stderr, "--- plugin log (pid %d) ---\n%s---\n", (int)getpid(), logbuf); }

double nb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void nb_open(nb_plugin* p) {
  void* dl = dlopen(NETIB_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", NETIB_PLUGIN_PATH, dlerror());
    exit(1);
  }
  p->net = dlsym(dl, "ncclNetPlugin_v11");
  NB_CHECK(p->net != NULL);
  NB_CHECK(p->net->init(&p->ctx, 1, NULL, nb_logger, NULL) == ncclSuccess);
}

void nb_close(nb_plugin* p) { NB_CHECK(p->net->finalize(p->ctx) == ncclSuccess); }

void nb_ctl_send(int ctl, char c) { NB_CHECK(send(ctl, &c, 1, MSG_NOSIGNAL) == 1); }

int nb_ctl_recv(int ctl, char* c, double timeout_s) {
  struct pollfd pf = {ctl, POLLIN, 0};
  if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1) return -1;
  return recv(ctl, c, 1, 0) == 1 ? 0 : -1;
}

ncclResult_t nb_accept(nb_plugin* p, int ctl, void** rcomm, double timeout_s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lcomm = NULL;
  ncclResult_t r = p->net->listen(p->ctx, 0, handle, &lcomm);
  if (r != ncclSuccess) return r;
  NB_CHECK(send(ctl, handle, sizeof handle, MSG_NOSIGNAL) == (ssize_t)sizeof handle);
  double end = nb_now() + timeout_s;
  *rcomm = NULL;
  ncclNetDeviceHandle_v11_t* dh = NULL;
  while (*rcomm == NULL && nb_now() < end) {
    r = p->net->accept(lcomm, rcomm, &dh);
    if (r != ncclSuccess) break;
    if (*rcomm == NULL) usleep(200);
  }
  NB_CHECK(p->net->closeListen(lcomm) == ncclSuccess);
  if (r == ncclSuccess && *rcomm == NULL) return ncclInProgress;
  return r;
}

ncclResult_t nb_connect(nb_plugin* p, int ctl, void** scomm, double timeout_s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  size_t got = 0;
  double end = nb_now() + timeout_s;
  while (got < sizeof handle && nb_now() < end) {
    struct pollfd pf = {ctl, POLLIN, 0};
    if (poll(&pf, 1, 100) != 1) continue;
    ssize_t k = recv(ctl, handle + got, sizeof handle - got, 0);
    if (k <= 0) return ncclRemoteError;
    got += (size_t)k;
  }
  if (got < sizeof handle) return ncclInProgress;
  *scomm = NULL;
  ncclNetDeviceHandle_v11_t* dh = NULL;
  ncclResult_t r = ncclSuccess;
  while (*scomm == NULL && nb_now() < end) {
    r = p->net->connect(p->ctx, 0, handle, scomm, &dh);
    if (r != ncclSuccess) break;
    if (*scomm == NULL) usleep(200);
  }
  if (r == ncclSuccess && *scomm == NULL) return ncclInProgress;
  return r;
}

ncclResult_t nb_wait(nb_plugin* p, void* req, int* sizes, double timeout_s) {
  double end = nb_now() + timeout_s;
  int tmp[8];
  while (nb_now() < end) {
    int done = 0;
    ncclResult_t r = p->net->test(req, &done, sizes ? sizes : tmp);
    if (r != ncclSuccess) return r;
    if (done) return ncclSuccess;
    usleep(100);
  }
  return ncclInProgress;
}

static pid_t fork_side(const char* const* env, nb_side_fn fn, void* arg, int ctl, int other) {
  pid_t pid = fork();
  NB_CHECK(pid >= 0);
  if (pid > 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  close(other);
  for (const char* const* e = env; e && *e; e++) {
    char name[128];
    const char* eq = strchr(*e, '=');
    NB_CHECK(eq != NULL && (size_t)(eq - *e) < sizeof name);
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    setenv(name, eq + 1, 1);
  }
  nb_plugin p;
  nb_open(&p);
  int rc = fn(&p, ctl, arg);
  if (rc != 0) nb_dump_log();
  _exit(rc);
}

int nb_run_pair(const char* const* recv_env, nb_side_fn recv_fn, const char* const* send_env,
                nb_side_fn send_fn, void* arg, int timeout_s) {
  int sv[2];
  NB_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  pid_t pr = fork_side(recv_env, recv_fn, arg, sv[0], sv[1]);
  pid_t ps = fork_side(send_env, send_fn, arg, sv[1], sv[0]);
  close(sv[0]);
  close(sv[1]);
  pid_t pids[2] = {pr, ps};
  const char* names[2] = {"receiver", "sender"};
  int failed = 0, left = 2;
  double end = nb_now() + timeout_s;
  while (left > 0) {
    int st;
    pid_t w = waitpid(-1, &st, WNOHANG);
    if (w > 0) {
      for (int i = 0; i < 2; i++) {
        if (pids[i] != w) continue;
        pids[i] = 0;
        left--;
        if (WIFSIGNALED(st)) {
          fprintf(stderr, "%s killed by signal %d\n", names[i], WTERMSIG(st));
          failed = 1;
        } else if (WEXITSTATUS(st) != 0) {
          fprintf(stderr, "%s failed (exit %d)\n", names[i], WEXITSTATUS(st));
          failed = 1;
        }
      }
      continue;
    }
    if (nb_now() > end) {
      for (int i = 0; i < 2; i++)
        if (pids[i]) {
          fprintf(stderr, "%s still running after %d s (a hang): killed\n", names[i], timeout_s);
          kill(pids[i], SIGKILL);
          waitpid(pids[i], NULL, 0);
        }
      return 1;
    }
    usleep(2000);
  }
  return failed;
}
