/* Opening plugin libraries by NCCL's rules (see plugin_open.h). */
#include "plugin/plugin_open.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

const char* plugin_result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    case ncclTimeout: return "ncclTimeout";
    default: return "unknown result";
  }
}

static int not_found(const char* err) {
  return err && strstr(err, "No such file or directory") != NULL;
}

static int is_lib_so(const char* s) {
  size_t n = strlen(s);
  return strncmp(s, "lib", 3) == 0 && n >= 3 && strcmp(s + n - 3, ".so") == 0;
}

void* plugin_open_named(const char* spec, const char* prefix, int* absent, char* why,
                        size_t len) {
  char alt[512] = "";
  char err1[512] = "", err2[512] = "";
  *absent = 0;
  void* dl = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
  if (dl) return dl;
  const char* e = dlerror();
  snprintf(err1, sizeof err1, "%s", e ? e : "unknown error");
  if (strchr(spec, '/') == NULL && !is_lib_so(spec)) {
    snprintf(alt, sizeof alt, "%s-%s.so", prefix, spec);
    dl = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
    if (dl) return dl;
    e = dlerror();
    snprintf(err2, sizeof err2, "%s", e ? e : "unknown error");
  }
  *absent = not_found(err1) && (alt[0] == '\0' || not_found(err2));
  if (*absent)
    snprintf(why, len, "no such library (tried %s%s%s)", spec, alt[0] ? " and " : "", alt);
  else
    snprintf(why, len, "cannot load: %s", !not_found(err1) || alt[0] == '\0' ? err1 : err2);
  return NULL;
}

void plugin_lib_path(void* dl, const char* fallback, char* out, size_t len) {
  struct link_map* lm = NULL;
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
    snprintf(out, len, "%s", lm->l_name);
  else
    snprintf(out, len, "%s", fallback);
}
