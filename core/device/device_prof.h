/* KernelCh profiler events of device launches, timed on the GPU (device_prof.c). */
#ifndef WEFT_DEVICE_PROF_H
#define WEFT_DEVICE_PROF_H

#include "nccl.h"
#include "algo/work.h"

struct ncclComm;
struct weft_dev_prof;
struct weft_dev_prof_rec;

/* A launch about to go out with works ws[0..n), work i on block blk[i]: when the profiler asks
 * for KernelCh and the stream is not being captured, *ts_dev is where the kernel's blocks store
 * their %globaltimer start and stop (2 per block) and *rec the record to hand to
 * device_prof_after; else both are NULL (also when every record is in flight: that launch goes
 * untimed). *pool is created on first use. */
ncclResult_t device_prof_arm(struct ncclComm* comm, struct weft_dev_prof** pool, int capturing,
                             weft_work* const* ws, const int* blk, int n,
                             unsigned long long** ts_dev, struct weft_dev_prof_rec** rec);
/* After the launch on stream: a host function, run once the kernel is done, reports each work's
 * KernelCh (start and KernelChStop with the GPU's times, as NCCL does) and frees the record. */
ncclResult_t device_prof_after(struct ncclComm* comm, struct weft_dev_prof_rec* rec,
                               void* stream);
/* The launch did not go out: the record is free again. */
void device_prof_cancel(struct weft_dev_prof_rec* rec);
/* Wait (bounded) for records in flight, then free the pool. */
void device_prof_destroy(struct ncclComm* comm, struct weft_dev_prof* pool);

#endif
