/* The core's door to tuner plugins: which library, which ABI version, and one context per
 * communicator.
 *
 * Library (NCCL's rules, 2.21+): NCCL_TUNER_PLUGIN names it: `none` disables tuners; a name or
 * path is tried as given, then a bare name as libnccl-tuner-<name>.so. Unset: libnccl-tuner.so.
 * When that finds nothing, the library of the external net plugin in use is tried (NCCL's
 * fallback; opened with a handle of its own, so closing the tuner never unloads the net). One
 * library per process, loaded with the first communicator and dlclose'd after the last.
 *
 * Version: ncclTunerPlugin_v6 first, then v5, v4, v3, v2; older ones are adapted to the current
 * (v6) view by one shim each (tuner_shim_vN.c; v5 is v6 without getChunkSize). A library whose newest table has a NULL name or
 * entry, or that exports no known version while it was asked for by name, is not used: one
 * WARN naming the file and the reason, and weft's model decides alone. A library found only by
 * the defaults that has no tuner symbol is normal (an INFO line at TUNING, not a WARN). */
#ifndef WEFT_PLUGIN_TUNER_H
#define WEFT_PLUGIN_TUNER_H

#include <stddef.h>
#include <stdint.h>
#include "nccl_tuner.h"

#define WEFT_TUNER_MIN_VERSION 2
#define WEFT_TUNER_MAX_VERSION 6

/* One communicator's tuner: the current view and this communicator's context in it. */
typedef struct weft_tuner {
  const ncclTuner_v6_t* api; /* every entry non-NULL but getChunkSize (NULL: keep the core's) */
  void* ctx;                 /* from api->init */
  const char* name;          /* the plugin's name */
  const char* path;          /* the file it came from */
  int version;               /* the ABI version the library exports, 2..6 */
  int algo_rows;             /* rows of the cost tables it gets: NCCL_NUM_ALGORITHMS, or
                              * WEFT_NUM_ALGORITHMS when it exports weftTunerAlgorithms (weft.h) */
} weft_tuner;

/* Open the process's tuner library (first call) and run its init for a new communicator.
 * constants: in, the model's defaults; out, what a v5/v6 plugin left there (older versions never
 * see them). Returns ncclSuccess with *out = NULL when no tuner is configured, none is found, or
 * the tuner cannot be used (WARNed once); errors only for bad arguments or lack of memory. */
ncclResult_t tuner_open_for_comm(uint64_t comm_id, size_t nranks, size_t nnodes,
                                 const ncclNvlDomainInfo_v5_t* nvl,
                                 ncclTunerConstants_v5_t* constants, weft_tuner** out);

/* Finalize the communicator's context (a failure is WARNed) and drop the library when it was the
 * last. NULL is a no-op. */
void tuner_close_for_comm(weft_tuner* t);

/* Forget NCCL_TUNER_PLUGIN as read and the library's state, so the next open reads the settings
 * again (tests). ncclInvalidUsage while a communicator holds the tuner. */
ncclResult_t tuner_loader_reset(void);

/* ---- shims (tuner_shim_vN.c): an old version's table as the current view ---- */
/* dlsym name of a version's table: "ncclTunerPlugin_v<version>". */
const char* tuner_shim_symbol(int version);
/* Fill view from raw (the library's ncclTunerPlugin_v<version>). A version older than 5 keeps
 * raw in the shim's one slot (one library per process, as in NCCL). Returns 0, or -1 with the
 * reason (a NULL name or entry) in why. */
int tuner_shim_adapt(const void* raw, int version, ncclTuner_v6_t* view, char* why, size_t len);
int tuner_shim_v2(const void* raw, ncclTuner_v6_t* view, char* why, size_t len);
int tuner_shim_v3(const void* raw, ncclTuner_v6_t* view, char* why, size_t len);
int tuner_shim_v4(const void* raw, ncclTuner_v6_t* view, char* why, size_t len);

#endif
