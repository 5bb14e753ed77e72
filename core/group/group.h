/* ncclGroupStart/End: a per-thread nesting depth; only the outermost End launches. Inits made
 * inside a group are deferred and run concurrently at that End (one thread may create the
 * communicators of several ranks this way, as nccl-tests -g does). */
#ifndef WEFT_GROUP_H
#define WEFT_GROUP_H

#include "comm/comm.h"
#include "nccl.h"

int group_depth(void);
ncclResult_t group_start(void);
ncclResult_t group_end(void);
/* Queue an init for the outermost End (takes a copy of id). */
ncclResult_t group_defer_init(struct ncclComm* comm, const ncclUniqueId* id);

#endif
