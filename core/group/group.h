/* ncclGroupStart/End: a per-thread nesting depth; only the outermost End launches. Inits made
 * inside a group are deferred and run concurrently at that End (one thread may create the
 * communicators of several ranks this way, as nccl-tests -g does). Operations are queued per
 * communicator and launched together at that End, which returns once all of them completed
 * (host executor); one thread may drive several communicators in one group. Outside a group
 * an operation is a group of one. */
#ifndef WEFT_GROUP_H
#define WEFT_GROUP_H

#include "comm/comm.h"
#include "nccl.h"

int group_depth(void);
ncclResult_t group_start(void);
ncclResult_t group_end(void);
/* ncclGroupSimulateEnd: closes one level as group_end does; at the outermost, deferred inits
 * and jobs run, and the queued operations are priced by the cost model (*us: the slowest
 * communicator's collectives, µs; -1 at an inner level) and dropped, never launched. res: an
 * error the caller found (a bad ncclSimInfo_t): the group still closes, its operations
 * dropped, and res returned. */
ncclResult_t group_end_simulated(ncclResult_t res, double* us);
/* Queue an init for the outermost End (takes a copy of id). */
ncclResult_t group_defer_init(struct ncclComm* comm, const ncclUniqueId* id);
/* Queue a collective setup call (ncclCommWindowRegister's mapping, ncclCommSplit) for the
 * outermost End: the jobs of every communicator run there concurrently, after the deferred
 * inits and before the operations, since each may wait for peers that are other jobs of the
 * same group. End returns the first job's error. */
typedef ncclResult_t (*group_job_fn)(struct ncclComm* comm, void* arg);
ncclResult_t group_defer_job(struct ncclComm* comm, group_job_fn fn, void* arg);
/* The same, and arg (malloc'ed) is freed once the job ran or was dropped. */
ncclResult_t group_defer_job_owned(struct ncclComm* comm, group_job_fn fn, void* arg);

/* Queue a call for after the group's operations at the outermost End (one-sided puts, signals
 * and waits, api/): a communicator's run in call order on one thread, every communicator's at
 * once (a wait may need another's put of the same group). drop frees arg when the call does not
 * run (an error in the group, or the communicator destroyed meanwhile); fn frees it when it does.
 * End returns the first call's error. */
typedef void (*group_drop_fn)(void* arg);
ncclResult_t group_defer_after(struct ncclComm* comm, group_job_fn fn, void* arg,
                               group_drop_fn drop);

/* Queue an operation (copied) on comm; outside a group, run it now. ncclInvalidArgument leaves
 * the group as it was; other errors are sticky and returned by the outermost End too. */
/* comm is being destroyed or aborted by this thread: it leaves the thread's open group (its
 * queued init or operations are dropped, with a WARN naming fn) so that End never touches it. */
void group_forget_comm(struct ncclComm* comm, const char* fn);

struct weft_op;
ncclResult_t group_add_op(struct ncclComm* comm, const struct weft_op* op);

#endif
