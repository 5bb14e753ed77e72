/* Parameters: the table in params.def, read through one path. The order, highest first, is the
 * one stock NCCL gives an env plugin, so a site gets the same settings from weft and from NCCL:
 * the process environment, then NCCL_CONF_FILE (or ~/.nccl.conf), then /etc/nccl.conf (the conf
 * files are applied into the environment at the first read, never over a variable already
 * set), then what an env plugin answers (NCCL_ENV_PLUGIN; core/plugin registers the source),
 * then the policy file (applied into the environment for names nothing above set), then the
 * declared default. */
#ifndef WEFT_UTIL_PARAM_H
#define WEFT_UTIL_PARAM_H

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

typedef enum {
#define WEFT_PARAM(id, name, kind, def, min, max, help) WEFT_PARAM_##id,
#define WEFT_PARAM_CHOICES(id, form, words)
#include "util/params.def"
#undef WEFT_PARAM_CHOICES
#undef WEFT_PARAM
  WEFT_PARAM_COUNT
} weft_param_id;

typedef enum { WEFT_PARAM_INT, WEFT_PARAM_STR } weft_param_kind;

typedef struct {
  const char* name;
  weft_param_kind kind;
  const char* def;
  int64_t min, max;
  const char* help;
} weft_param_info;

typedef enum {
  WEFT_SRC_DEFAULT = 0,
  WEFT_SRC_CONF_ETC,  /* /etc/nccl.conf */
  WEFT_SRC_CONF_USER, /* NCCL_CONF_FILE or ~/.nccl.conf */
  WEFT_SRC_POLICY,
  WEFT_SRC_ENV_PLUGIN, /* answered by the env plugin, not in the environment */
  WEFT_SRC_ENV
} weft_param_source;

/* The declared table (for docs, weft-policy schema). */
const weft_param_info* param_table(int* count);
const weft_param_info* param_info(weft_param_id id);
/* Lookup by name; NULL when the name is not declared. */
const weft_param_info* param_find(const char* name);

/* Current value. A value that does not parse or is out of range warns once and yields the
 * default. */
int64_t param_int(weft_param_id id);
/* Never NULL: the set value or the default; a value outside the setting's declared choices
 * (WEFT_PARAM_CHOICES) warns once, naming the setting and the default, and yields the default. */
const char* param_str(weft_param_id id);
/* 1 when value is allowed for p: one of its declared choices, or anything when it declares
 * none (an empty value is always allowed: it means the default). Else 0, and the choices as
 * text ("AF_INET or AF_INET6") in expected when it is not NULL. Logs nothing. */
int param_value_allowed(const weft_param_info* p, const char* value, char* expected, size_t len);
/* True when set by any source other than the default. */
int param_is_set(weft_param_id id);
weft_param_source param_source_of(const char* name);
const char* param_source_name(weft_param_source src);

/* Read every declared setting once, so that each bad value warns (once per process) even when
 * no code path of this run reads it (NCCL_P2P_LEVEL in host mode). */
void param_check_all(void);

/* Parse an integer with the same rules param_int uses (whole string, base 0). */
int param_parse_int(const char* s, int64_t* out);

/* Apply the conf files once per process (idempotent, thread-safe). */
void param_load_conf_files(void);
/* Policy settings: applied unless the environment, a conf file or the env plugin set the name
 * (a value an earlier policy applied is replaced). Returns 1 when applied, 0 when the other
 * source wins. */
int param_apply_policy(const char* name, const char* value);

/* Where values come from after the conf files: get(name) answers like getenv (the env plugin's
 * getEnv, which answers the environment first); a string it returns that is not the
 * environment's own is copied, so values read through param_* stay valid for the process. NULL: getenv. Set once, before the first
 * read (core/plugin/env_load.c does it from a constructor). */
typedef const char* (*param_env_source_fn)(const char* name);
void param_set_env_source(param_env_source_fn get);
/* The current value of any name through that path (NULL when unset). */
const char* param_value(const char* name);

#endif
