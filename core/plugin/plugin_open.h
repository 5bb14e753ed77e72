/* Opening a plugin library by NCCL's rules, shared by the tuner and profiler loaders: a spec is
 * tried as given (a path, or a file name the dynamic loader searches for), then, for a bare
 * name, as <prefix>-<name>.so. A failure says whether no file was found at all (normal when
 * only the defaults were tried) or one was found and failed to load (always worth a WARN). */
#ifndef WEFT_PLUGIN_OPEN_H
#define WEFT_PLUGIN_OPEN_H

#include <stddef.h>
#include "nccl.h"

/* dlopen spec (RTLD_NOW | RTLD_LOCAL), then <prefix>-<spec>.so for a bare name. NULL with
 * *absent set when no file was found, or with why set when one was found but failed to load;
 * why names the files tried. */
void* plugin_open_named(const char* spec, const char* prefix, int* absent, char* why, size_t len);
/* The file dl was loaded from (the loader's resolved name), or fallback. */
void plugin_lib_path(void* dl, const char* fallback, char* out, size_t len);
/* "ncclSuccess", "ncclInternalError", … for logs. */
const char* plugin_result_name(ncclResult_t r);

#endif
