/* The env plugin ABI: every version weft loads (v1, v2; one frozen header each under env/) and
 * the current view (v2). A plugin (`libnccl-env-<name>.so`, chosen by NCCL_ENV_PLUGIN, else
 * `libnccl-env.so`) exports one or both `ncclEnvPlugin_vN` symbols; the loader looks for the
 * newest first. Plain C, no CUDA headers needed. */
#ifndef NCCL_ENV_H_
#define NCCL_ENV_H_

#include "nccl.h"
#include "nccl_common.h"

#include "env/env_v1.h"
#include "env/env_v2.h"

/* The current view. */
typedef ncclEnv_v2_t ncclEnv_t;

/* The current version's plugin table, as a bare identifier. */
#define NCCL_ENV_PLUGIN_SYMBOL ncclEnvPlugin_v2

#endif
