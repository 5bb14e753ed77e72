/* Env plugin ABI version 1 (NCCL 2.28.7 and later), exported by plugins as ncclEnvPlugin_v1.
 * FROZEN: this file describes a binary interface that shipped plugins are built against; it is
 * never edited. A later change goes into a new env_vN.h. The library reads every setting
 * through getEnv once the plugin is initialized. Layout on LP64: ncclEnv_v1_t 32 bytes. */
#ifndef WEFT_ABI_ENV_V1_H
#define WEFT_ABI_ENV_V1_H

#include <stdint.h>

#include "../nccl.h"

typedef struct {
  const char* name;
  /* Once per process, with the loading library's version, before any getEnv. */
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch,
                       const char* suffix);
  /* At process exit (or when the library unloads the plugin); no getEnv follows. */
  ncclResult_t (*finalize)(void);
  /* The value of a setting, or NULL when it has none. The string must stay valid until the
   * next getEnv of the same name or finalize. */
  const char* (*getEnv)(const char* name);
} ncclEnv_v1_t;

#endif
