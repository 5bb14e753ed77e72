/* The hang report's watchdog: one thread per process while it has communicators (started with
 * the first, joined with the last), ticking every WEFT_HANG_REPORT_MS / 4 (50 ms to 1 s). Each
 * tick visits the live communicators (comm_registry_visit) and runs comm_hang_poll on each:
 * the timer of a launch that has run longer than WEFT_HANG_REPORT_MS, a SIGUSR1, a report
 * another rank asked for. With WEFT_HANG_SIGNAL=1 a SIGUSR1 handler is installed; it only sets
 * a flag and writes a byte to a pipe the watchdog polls (the work is done on the thread). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "comm/comm_hang.h"
#include "util/check.h"
#include "util/clock.h"
#include "util/param.h"

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcond;
static int wcond_ready, wcount, wlive;
static unsigned wgen; /* bumped to stop the thread started under the previous value */
static pid_t wpid;
static pthread_t wthread;

/* Kept for the process's lifetime once installed: the handler may run at any time. */
static int sig_pipe[2] = {-1, -1};
static int sig_flag; /* atomic */

static void on_sigusr1(int sig) {
  (void)sig;
  int e = errno;
  __atomic_store_n(&sig_flag, 1, __ATOMIC_RELAXED);
  if (sig_pipe[1] >= 0) {
    ssize_t r = write(sig_pipe[1], "u", 1);
    (void)r;
  }
  errno = e;
}

static void install_signal(void) {
  if (sig_pipe[0] >= 0 || param_int(WEFT_PARAM_HANG_SIGNAL) == 0) return;
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    WARN("WEFT_HANG_SIGNAL=1: cannot create the signal pipe: %s (SIGUSR1 is not handled)",
         strerror(errno));
    sig_pipe[0] = sig_pipe[1] = -1;
    return;
  }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, &old);
  if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler != on_sigusr1)
    INFO(NCCL_INIT, "WEFT_HANG_SIGNAL=1 replaces the application's SIGUSR1 handler");
  INFO(NCCL_INIT, "SIGUSR1 logs the hang report of every communicator of pid %d", (int)getpid());
}

typedef struct {
  uint64_t now;
  int hang_ms, signalled;
} tick_args;

static void visit(struct ncclComm* comm, void* arg) {
  tick_args* t = arg;
  comm_hang_poll(comm, t->now, t->hang_ms, t->signalled);
}

static void* watch_main(void* arg) {
  unsigned gen = (unsigned)(uintptr_t)arg;
  int hang_ms = (int)param_int(WEFT_PARAM_HANG_REPORT_MS);
  int tick_ms = hang_ms > 0 ? hang_ms / 4 : 1000;
  if (tick_ms < 50) tick_ms = 50;
  if (tick_ms > 1000) tick_ms = 1000;
  for (;;) {
    if (sig_pipe[0] >= 0) {
      struct pollfd p = {.fd = sig_pipe[0], .events = POLLIN};
      if (poll(&p, 1, tick_ms) > 0) {
        char buf[64];
        while (read(sig_pipe[0], buf, sizeof buf) > 0) {
        }
      }
      pthread_mutex_lock(&wlock);
    } else {
      struct timespec ts = clock_deadline(CLOCK_MONOTONIC, tick_ms);
      pthread_mutex_lock(&wlock);
      if (wgen == gen) pthread_cond_timedwait(&wcond, &wlock, &ts);
    }
    int stop = wgen != gen;
    pthread_mutex_unlock(&wlock);
    if (stop) return NULL;
    tick_args t = {clock_ms(), hang_ms, 0};
    if (__atomic_exchange_n(&sig_flag, 0, __ATOMIC_RELAXED)) t.signalled = 1;
    comm_registry_visit(visit, &t);
  }
}

void comm_hang_watch_add(void) {
  pthread_mutex_lock(&wlock);
  if (wpid != getpid()) { /* a forked child has none of its parent's threads */
    wpid = getpid();
    wcount = wlive = 0;
  }
  if (!wcond_ready) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wcond, &ca);
    pthread_condattr_destroy(&ca);
    wcond_ready = 1;
  }
  install_signal();
  if (wcount++ == 0) { /* also with WEFT_HANG_REPORT_MS=0: it answers the other ranks' requests */
    int rc = pthread_create(&wthread, NULL, watch_main, (void*)(uintptr_t)wgen);
    if (rc == 0)
      wlive = 1;
    else
      WARN("cannot start the hang report's watchdog: %s (this process logs only the reports "
           "weftCommHangReport asks for)", strerror(rc));
  }
  pthread_mutex_unlock(&wlock);
}

void comm_hang_watch_remove(void) {
  pthread_mutex_lock(&wlock);
  int join = 0;
  if (wpid == getpid() && wcount > 0 && --wcount == 0 && wlive) {
    wgen++;
    wlive = 0;
    join = 1;
    pthread_cond_signal(&wcond);
    if (sig_pipe[1] >= 0) {
      ssize_t r = write(sig_pipe[1], "s", 1);
      (void)r;
    }
  }
  pthread_t t = wthread;
  pthread_mutex_unlock(&wlock);
  if (join) pthread_join(t, NULL);
}
