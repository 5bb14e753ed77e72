/* Bit-for-bit agreement across ranks: where a collective gives every rank the same result
 * (AllReduce, AllGather, Broadcast), every rank must hold the same bits (NCCL's guarantee, which
 * DDP relies on; each rank's check against the reference allows the op's rounding bound, this
 * one allows nothing). Each verification records a hash of every local rank's output in a
 * ledger shared by the forked ranks (mapped before the fork); the runner compares the ledger
 * once every rank has finished. Ranks verify the same cases in the same order, so the n-th
 * record of every rank belongs to the same call. */
#ifndef GPU_SAME_H
#define GPU_SAME_H

#include <stddef.h>

/* Before the ranks start (before fork in --procs mode). 0, or -1 when the map failed. */
int gpu_same_init(int nranks);
/* Record the output of one verification on rank (its n-th record). */
void gpu_same_record(int rank, const void* out, size_t len);
/* After every rank finished: the number of records where ranks differ (each printed). */
int gpu_same_check(void);

#endif
