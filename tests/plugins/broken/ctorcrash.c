/* Broken: a library constructor crashes (SIGSEGV) as soon as the plugin is loaded. */
#include "refnet.h"

static int* volatile nowhere; /* NULL, unknown to the compiler */

__attribute__((constructor)) static void crash_on_load(void) { *nowhere = 1; }

REFNET_EXPORT_V11(ncclNetPlugin_v11, "broken-ctorcrash", .name = "broken-ctorcrash")
