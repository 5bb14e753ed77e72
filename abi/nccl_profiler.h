/* The profiler plugin ABI: every version weft loads (v1 to v6, one frozen header each under
 * profiler/), the event bits and states they share (profiler/profiler_types.h), and the current
 * view (v6). A plugin exports one or more `ncclProfiler_vN` symbols of type ncclProfiler_vN_t;
 * the core probes the newest first. Plain C, no CUDA headers needed. */
#ifndef NCCL_PROFILER_H_
#define NCCL_PROFILER_H_

#include "nccl.h"
#include "nccl_common.h"

#include "profiler/profiler_types.h"
#include "profiler/profiler_v1.h"
#include "profiler/profiler_v2.h"
#include "profiler/profiler_v3.h"
#include "profiler/profiler_v4.h"
#include "profiler/profiler_v5.h"
#include "profiler/profiler_v6.h"
#include "profiler/net_ib_v1.h"
#include "profiler/net_ofi_v1.h"
#include "profiler/net_socket_v1.h"

/* The current view. */
typedef ncclProfiler_v6_t ncclProfiler_t;
typedef ncclProfilerEventDescr_v6_t ncclProfilerEventDescr_t;
typedef ncclProfilerEventStateArgs_v6_t ncclProfilerEventStateArgs_t;

/* dlsym name of the current version's plugin table. */
#define NCCL_PROFILER_PLUGIN_SYMBOL "ncclProfiler_v6"

#endif
