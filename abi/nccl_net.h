/* The net plugin ABI: every version weft loads (v6 to v12, one frozen header each under net/),
 * the constants they share, and the current view (v12, NCCL 2.30's). A plugin exports one
 * or more `ncclNetPlugin_vN` symbols of type ncclNet_vN_t; the core probes the newest first and
 * adapts older versions to the current view (core/plugin/). Plain C, no CUDA headers needed. */
#ifndef NCCL_NET_H_
#define NCCL_NET_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "nccl_common.h"

/* Bytes of the opaque handle listen fills in and connect consumes. */
#define NCCL_NET_HANDLE_MAXSIZE 128

/* ptrSupport bits, and the type argument of regMr/regMrDmaBuf. */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/* Requests one comm may have outstanding (v6 plugins: NCCL_NET_MAX_REQUESTS_V6). */
#define NCCL_NET_MAX_REQUESTS 32

/* Values the core may store in *request before calling irecv. OPTIONAL_RECV_COMPLETION: the
 * data carries its own arrival flags (LL/LL128), so the plugin need not report completion
 * (passed to v9+ plugins only; the core clears it for older ones). MULTI_REQUEST: reserved for
 * multi-request batches (v11, see maxMultiRequestSize); NCCL 2.28's core never sets it. */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_MULTI_REQUEST 0x2

/* Largest value the core accepts for maxP2pBytes / maxCollBytes (1 TiB). */
#define NCCL_MAX_NET_SIZE_BYTES (1 * 1024 * 1024 * 1024 * 1024L)
/* Transfer limits assumed for plugins too old to report them (v6 to v8). */
#define MAX_NET_SIZE (1024 * 1024 * 1024L)
#define MAX_COLLNET_SIZE (512 * 1024 * 1024L)

/* Net plugin libraries one process may load. */
#ifndef NCCL_NET_MAX_PLUGINS
#define NCCL_NET_MAX_PLUGINS 16
#endif

#include "net/net_device.h"
#include "net/net_v6.h"
#include "net/net_v7.h"
#include "net/net_v8.h"
#include "net/net_v9.h"
#include "net/net_v10.h"
#include "net/net_v11.h"
#include "net/net_v12.h"

/* The current view. */
#define NCCL_NET_MAX_DEVS_PER_NIC NCCL_NET_MAX_DEVS_PER_NIC_V12
typedef ncclNet_v12_t ncclNet_t;
typedef ncclNetProperties_v12_t ncclNetProperties_t;
typedef ncclNetDeviceHandle_v12_t ncclNetDeviceHandle_t;
typedef ncclNetVDeviceProps_v12_t ncclNetVDeviceProps_t;
typedef ncclNetCommConfig_v12_t ncclNetCommConfig_t;
typedef ncclNetCommAttr_v12_t ncclNetCommAttr_t;
typedef ncclNetAttr_v12_t ncclNetAttr_t;

/* The current version's plugin table, as a bare identifier (as NCCL spells it) so a plugin
 * can write `const ncclNet_t NCCL_NET_PLUGIN_SYMBOL = {...};`. */
#define NCCL_NET_PLUGIN_SYMBOL ncclNetPlugin_v12

#endif
