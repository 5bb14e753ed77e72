/* Env plugin ABI version 2 (NCCL 2.30 and later), exported by plugins as ncclEnvPlugin_v2.
 * FROZEN: this file describes a binary interface that shipped plugins are built against; it is
 * never edited. Against v1: init also receives the library's logger, so the plugin can report
 * through the library's log. Layout on LP64: ncclEnv_v2_t 32 bytes. */
#ifndef WEFT_ABI_ENV_V2_H
#define WEFT_ABI_ENV_V2_H

#include <stdint.h>

#include "../nccl.h"
#include "../nccl_common.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch,
                       const char* suffix, ncclDebugLogger_t logFunction);
  ncclResult_t (*finalize)(void);
  /* As v1: valid until the next getEnv of the same name or finalize. */
  const char* (*getEnv)(const char* name);
} ncclEnv_v2_t;

#endif
