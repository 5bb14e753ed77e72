/* Helpers of the net-ib tests: load libnccl-net-weft-ib.so (its v11 table) with a logger that keeps
 * every line for checks, and run a sender and a receiver as two forked processes, each with its
 * own environment (so a fault is injected into one side only), under a time bound: a side that
 * hangs is a failure, never a stuck test. */
#ifndef WEFT_NETIB_HARNESS_H
#define WEFT_NETIB_HARNESS_H

#include <stddef.h>
#include "nccl_net.h"

#define NB_CHECK(cond)                                                         \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
      nb_dump_log();                                                           \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

typedef struct {
  ncclNet_v11_t* net;
  void* ctx;
} nb_plugin;

/* dlopen the plugin (RTLD_NOW | RTLD_LOCAL) and init a context; exits(1) on failure. */
void nb_open(nb_plugin* p);
void nb_close(nb_plugin* p);
/* The logger nb_open hands the plugin (also for its other tables). */
void nb_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
               const char* fmt, ...);
/* Lines the plugin logged ("WARN …" / "INFO …"), and whether one contains text. */
const char* nb_log(void);
int nb_log_has(const char* text);
void nb_log_clear(void);
void nb_dump_log(void);
double nb_now(void);

/* A side of a pair: ctl is a socket to the other side (for the handle and go/done bytes). */
typedef int (*nb_side_fn)(nb_plugin* p, int ctl, void* arg);
/* Fork the receiver then the sender, each applying its "NAME=VALUE" list first (NULL-ended,
 * may be NULL); 0 when both exit 0 within timeout_s. */
int nb_run_pair(const char* const* recv_env, nb_side_fn recv_fn, const char* const* send_env,
                nb_side_fn send_fn, void* arg, int timeout_s);

/* Receiver: listen, send the handle, accept until done or an error (bounded by timeout_s).
 * Returns the accept/listen result; *rcomm is set on success. */
ncclResult_t nb_accept(nb_plugin* p, int ctl, void** rcomm, double timeout_s);
/* Sender: receive the handle, connect until done or an error. */
ncclResult_t nb_connect(nb_plugin* p, int ctl, void** scomm, double timeout_s);
/* Poll test() until done or an error or timeout_s; returns test's result (ncclInProgress on
 * timeout). sizes may be NULL. */
ncclResult_t nb_wait(nb_plugin* p, void* req, int* sizes, double timeout_s);
/* One byte over ctl (blocking, bounded). */
void nb_ctl_send(int ctl, char c);
int nb_ctl_recv(int ctl, char* c, double timeout_s);

#endif
