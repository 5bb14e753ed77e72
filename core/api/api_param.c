/* ncclParam*: NCCL 2.30's access to settings, over weft's one table (util/params.def). A key is
 * a setting's name (NCCL_* or WEFT_*), a handle points at its entry in the table, and every
 * value read is the one the library uses (util/param.c: environment, conf files, env plugin,
 * policy, default; an integer that does not parse or is out of range reads as the default the
 * library falls back to). Integer settings are int64; string settings are C strings. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "util/check.h"
#include "util/param.h"

/* The table entry h points at; ncclInvalidArgument (WARN naming fn) for anything else. */
static ncclResult_t handle_id(const char* fn, ncclParamHandle_t h, weft_param_id* id) {
  int n = 0;
  const weft_param_info* t = param_table(&n);
  uintptr_t p = (uintptr_t)(const void*)h, base = (uintptr_t)t;
  if (h == NULL || p < base || p >= base + (uintptr_t)n * sizeof *t ||
      (p - base) % sizeof *t != 0) {
    WARN("%s: h = %p is not a handle ncclParamBind returned", fn, (void*)h);
    return ncclInvalidArgument;
  }
  *id = (weft_param_id)((p - base) / sizeof *t);
  return ncclSuccess;
}

static ncclResult_t key_id(const char* fn, const char* key, weft_param_id* id) {
  WEFT_ARG_NONNULL(fn, key);
  const weft_param_info* p = param_find(key);
  if (p == NULL) {
    WARN("%s: key = \"%s\" is not a setting of this library (ncclParamGetAllParameterKeys "
         "lists them)",
         fn, key);
    return ncclInvalidArgument;
  }
  int n = 0;
  *id = (weft_param_id)(p - param_table(&n));
  return ncclSuccess;
}

/* The value as text; integers are printed into buf. */
static const char* value_text(weft_param_id id, char* buf, size_t len) {
  if (param_info(id)->kind == WEFT_PARAM_STR) return param_str(id);
  snprintf(buf, len, "%" PRId64, param_int(id));
  return buf;
}

WEFT_API(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key) {
  const char* fn = "ncclParamBind";
  WEFT_ARG_NONNULL(fn, out);
  weft_param_id id;
  WEFT_CHECK(key_id(fn, key, &id));
  *out = (ncclParamHandle_t)(void*)(uintptr_t)param_info(id);
  return ncclSuccess;
}

/* An integer setting's value, when it fits [lo, hi]. */
static ncclResult_t get_int(const char* fn, ncclParamHandle_t h, const void* out, int64_t lo,
                            int64_t hi, int64_t* v) {
  weft_param_id id;
  WEFT_CHECK(handle_id(fn, h, &id));
  WEFT_ARG_NONNULL(fn, out);
  const weft_param_info* p = param_info(id);
  if (p->kind != WEFT_PARAM_INT) {
    WARN("%s: %s is a string setting; use ncclParamGetStr", fn, p->name);
    return ncclInvalidArgument;
  }
  *v = param_int(id);
  if (*v < lo || *v > hi) {
    WARN("%s: %s = %" PRId64 " does not fit this getter's type; use ncclParamGetI64", fn,
         p->name, *v);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

#define PARAM_GETTER(suffix, ctype, lo, hi)                                         \
  WEFT_API(ncclResult_t, ncclParamGet##suffix, ncclParamHandle_t h, ctype* out);     \
  ncclResult_t ncclParamGet##suffix(ncclParamHandle_t h, ctype* out) {               \
    int64_t v;                                                                       \
    WEFT_CHECK(get_int("ncclParamGet" #suffix, h, out, (lo), (hi), &v));             \
    *out = (ctype)v;                                                                 \
    return ncclSuccess;                                                              \
  }

PARAM_GETTER(I8, int8_t, INT8_MIN, INT8_MAX)
PARAM_GETTER(I16, int16_t, INT16_MIN, INT16_MAX)
PARAM_GETTER(I32, int32_t, INT32_MIN, INT32_MAX)
PARAM_GETTER(I64, int64_t, INT64_MIN, INT64_MAX)
PARAM_GETTER(U8, uint8_t, 0, UINT8_MAX)
PARAM_GETTER(U16, uint16_t, 0, UINT16_MAX)
PARAM_GETTER(U32, uint32_t, 0, UINT32_MAX)
PARAM_GETTER(U64, uint64_t, 0, INT64_MAX)

WEFT_API(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out) {
  const char* fn = "ncclParamGetStr";
  weft_param_id id;
  WEFT_CHECK(handle_id(fn, h, &id));
  WEFT_ARG_NONNULL(fn, out);
  if (param_info(id)->kind != WEFT_PARAM_STR) {
    WARN("%s: %s is an integer setting; use ncclParamGetI64 or ncclParamGetParameter", fn,
         param_info(id)->name);
    return ncclInvalidArgument;
  }
  *out = param_str(id); /* interned by util/param.c: valid for the process */
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len) {
  const char* fn = "ncclParamGet";
  weft_param_id id;
  WEFT_CHECK(handle_id(fn, h, &id));
  WEFT_ARG_NONNULL(fn, out);
  WEFT_ARG_NONNULL(fn, len);
  int64_t v = 0;
  const void* src = &v;
  size_t n = sizeof v;
  if (param_info(id)->kind == WEFT_PARAM_STR) {
    src = param_str(id);
    n = strlen(src) + 1;
  } else {
    v = param_int(id);
  }
  if (maxLen <= 0 || (size_t)maxLen < n) {
    WARN("%s: maxLen = %d is too small for %s (%zu bytes)", fn, maxLen, param_info(id)->name, n);
    *len = 0;
    return ncclInvalidArgument;
  }
  memcpy(out, src, n);
  *len = (int)n;
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclParamGetParameter, const char* key, const char** value,
         int* valueLen);
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen) {
  const char* fn = "ncclParamGetParameter";
  static __thread char text[32]; /* valid until this thread's next call, as NCCL promises */
  WEFT_ARG_NONNULL(fn, value);
  WEFT_ARG_NONNULL(fn, valueLen);
  weft_param_id id;
  ncclResult_t res = key_id(fn, key, &id);
  if (res != ncclSuccess) {
    *value = NULL;
    *valueLen = 0;
    return res;
  }
  *value = value_text(id, text, sizeof text);
  *valueLen = (int)strlen(*value);
  return ncclSuccess;
}

WEFT_API(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen) {
  const char* fn = "ncclParamGetAllParameterKeys";
  static __thread const char* keys[WEFT_PARAM_COUNT]; /* the caller's copy, per thread */
  WEFT_ARG_NONNULL(fn, table);
  WEFT_ARG_NONNULL(fn, tableLen);
  int n = 0;
  const weft_param_info* t = param_table(&n);
  for (int i = 0; i < n && i < WEFT_PARAM_COUNT; i++) keys[i] = t[i].name;
  *table = keys;
  *tableLen = n < WEFT_PARAM_COUNT ? n : WEFT_PARAM_COUNT;
  return ncclSuccess;
}

WEFT_API(void, ncclParamDumpAll, void);
void ncclParamDumpAll(void) {
  int n = 0;
  const weft_param_info* t = param_table(&n);
  printf("=== weft settings (docs/env.md) ===\n");
  for (int i = 0; i < n; i++) {
    char text[32];
    const char* v = value_text((weft_param_id)i, text, sizeof text);
    printf("%s (%s) %s\n    value=%s set_by=%s default=%s\n", t[i].name,
           t[i].kind == WEFT_PARAM_INT ? "int64" : "string", t[i].help, *v ? v : "<unset>",
           param_source_name(param_source_of(t[i].name)), *t[i].def ? t[i].def : "<unset>");
  }
  fflush(stdout);
}
