/* gpu_misuse: what the cases share (see gpu_misuse.c for the program and its cases). */
#ifndef GPU_MISUSE_H
#define GPU_MISUSE_H

#include "gpu_world.h"

/* Every error of a mismatch must come this soon (WEFT_TIMEOUT_MS is set to 30 s, as in
 * tests/host/host_mismatch.c: an error that only the timeout produced is too late). */
#define MISUSE_SLACK_S 8.0

/* 0 when call returned want and (has non-NULL) the last WARN contains has; else 1, printed
 * with the rank and the call. */
int misuse_expect(const gpu_rank* r, const char* call, ncclResult_t got, ncclResult_t want,
                  const char* has);
#define MISUSE_EXPECT(r, call, want, has) misuse_expect((r), #call, (call), (want), (has))

/* Device buffer of n bytes on r's GPU, every byte set to fill (exits 1 on a CUDA error). */
void* misuse_dev_alloc(const gpu_rank* r, size_t n, int fill);
/* Copies n bytes to or from a device buffer; 0, or 1 (printed) on a CUDA error. */
int misuse_upload(const gpu_rank* r, void* dev, const void* host, size_t n);
int misuse_download(const gpu_rank* r, void* host, const void* dev, size_t n);

/* Truncation and mismatched collectives (gpu_misuse_mismatch.c), one rank per process. arg
 * is the case name: p2p_small, p2p_large, coll_count, coll_dtype, coll_op, bcast_root. */
int misuse_mismatch_body(gpu_world* w, void* arg);
/* The text some rank's WARN must contain for that case (NULL: unknown case). */
const char* misuse_mismatch_want(const char* name);

#endif
