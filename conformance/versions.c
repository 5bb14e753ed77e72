/* weft-conformance versions LIB.so…: for each library, every plugin ABI table it exports (net,
 * tuner, env, profiler, gin, rma, collnet) and which one weft and each stock NCCL release from
 * 2.19 to 2.32 would take. A
 * loader takes the newest table it knows, so the answer per release is the newest exported
 * version within that release's range, or none. The ranges are the symbols each release's
 * loader looks up (read from NCCL's sources per tag):
 *
 *   net:   2.19 v5–v7, 2.20–2.23 v5–v8, 2.24–2.25 v5–v9, 2.26–2.27 v6–v10, 2.28–2.29 v6–v11,
 *          2.30 v6–v12
 *   tuner: 2.19–2.20 v1, 2.21 v2, 2.22–2.23 v2–v3, 2.24–2.27 v2–v4, 2.28–2.29 v2–v5,
 *          2.30 v2–v6
 *   env:   2.28.7–2.30.4 v1, 2.30.7+ v1–v2 (none before 2.28.7)
 *   profiler (ncclProfiler_vN, no "Plugin" in the name): 2.23 v1, 2.24–2.25 v1–v2, 2.26 v1–v3,
 *          2.27 v1–v4, 2.28 v1–v5, 2.29–2.30 v1–v6 (none before 2.23)
 *   gin:   2.28 v11 (in the net library only), 2.29 v11–v12, 2.30 v13–v14, 2.32 v13–v15
 *   rma:   2.30 v13–v14, 2.32 v13–v17 (an RMA v13 may be exported as ncclGinPlugin_v13)
 *   collnet (next to the net table): the net ranges, and 2.32 v6–v12
 *
 * The library is opened RTLD_LAZY|RTLD_LOCAL and only looked at: no table is called. Exit
 * status 0, or 1 when a library cannot be opened or exports no table of any kind. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "versions.h"

#define MAX_V 20

typedef struct {
  const char* release; /* as printed */
  int lo, hi;          /* versions its loader knows; lo 0: none */
} release_range;

typedef struct {
  const char* kind;   /* "net", "tuner", "env" */
  const char* prefix; /* symbol prefix */
  int weft_lo, weft_hi;
  const release_range* nccl;
  int nnccl;
} abi_kind;

static const release_range net_ranges[] = {
    {"2.19", 5, 7},       {"2.20-2.23", 5, 8},  {"2.24-2.25", 5, 9},
    {"2.26-2.27", 6, 10}, {"2.28-2.29", 6, 11}, {"2.30", 6, 12},
};
static const release_range tuner_ranges[] = {
    {"2.19-2.20", 1, 1}, {"2.21", 2, 2},      {"2.22-2.23", 2, 3},
    {"2.24-2.27", 2, 4}, {"2.28-2.29", 2, 5}, {"2.30", 2, 6},
};
static const release_range env_ranges[] = {
    {"2.19-2.28.3", 0, 0}, {"2.28.7-2.30.4", 1, 1}, {"2.30.7", 1, 2},
};

static const release_range profiler_ranges[] = {
    {"2.19-2.22", 0, 0}, {"2.23", 1, 1}, {"2.24-2.25", 1, 2}, {"2.26", 1, 3},
    {"2.27", 1, 4},      {"2.28", 1, 5}, {"2.29-2.30", 1, 6},
};

static const release_range gin_ranges[] = {
    {"2.19-2.27", 0, 0}, {"2.28", 11, 11}, {"2.29", 11, 12}, {"2.30", 13, 14}, {"2.32", 13, 15},
};
static const release_range rma_ranges[] = {
    {"2.19-2.29", 0, 0}, {"2.30", 13, 14}, {"2.32", 13, 17},
};
static const release_range collnet_ranges[] = {
    {"2.19", 5, 7},       {"2.20-2.23", 5, 8},  {"2.24-2.25", 5, 9}, {"2.26-2.27", 6, 10},
    {"2.28-2.29", 6, 11}, {"2.30-2.32", 6, 12},
};

static const abi_kind kinds[] = {
    {"net", "ncclNetPlugin_v", 6, 12, net_ranges, sizeof net_ranges / sizeof net_ranges[0]},
    {"tuner", "ncclTunerPlugin_v", 2, 6, tuner_ranges,
     sizeof tuner_ranges / sizeof tuner_ranges[0]},
    {"env", "ncclEnvPlugin_v", 1, 2, env_ranges, sizeof env_ranges / sizeof env_ranges[0]},
    {"profiler", "ncclProfiler_v", 1, 6, profiler_ranges,
     sizeof profiler_ranges / sizeof profiler_ranges[0]},
    {"gin", "ncclGinPlugin_v", 11, 15, gin_ranges, sizeof gin_ranges / sizeof gin_ranges[0]},
    {"rma", "ncclRmaPlugin_v", 13, 15, rma_ranges, sizeof rma_ranges / sizeof rma_ranges[0]},
    {"collnet", "ncclCollNetPlugin_v", 6, 12, collnet_ranges,
     sizeof collnet_ranges / sizeof collnet_ranges[0]},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

/* Newest exported version in [lo, hi]; 0 when none. */
static int pick(unsigned exported, int lo, int hi) {
  if (lo <= 0) return 0;
  for (int v = hi; v >= lo; v--)
    if (exported & (1u << v)) return v;
  return 0;
}

static void print_choice(const char* who, int v, const char* prefix) {
  if (v) printf("    %-18s %s%d\n", who, prefix, v);
  else printf("    %-18s none\n", who);
}

/* 1 when the library exports some table. */
static int report_one(const char* path) {
  void* dl = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (dl == NULL) {
    printf("%s: cannot open: %s\n", path, dlerror());
    return 0;
  }
  printf("%s\n", path);
  int any = 0;
  for (int k = 0; k < NKINDS; k++) {
    const abi_kind* a = &kinds[k];
    unsigned exported = 0;
    char list[160] = "";
    const char* name = NULL;
    for (int v = 1; v < MAX_V; v++) {
      char sym[40];
      snprintf(sym, sizeof sym, "%s%d", a->prefix, v);
      const void* t = dlsym(dl, sym);
      if (t == NULL) continue;
      exported |= 1u << v;
      if (name == NULL) name = *(const char* const*)t; /* every table starts with its name */
      size_t n = strlen(list);
      snprintf(list + n, sizeof list - n, "%sv%d", n ? " " : "", v);
    }
    /* NCCL's RMA loader also reads a GIN v13 table as RMA v13 */
    int gin13 = 0;
    if (strcmp(a->kind, "rma") == 0 && !(exported & (1u << 13)) && dlsym(dl, "ncclGinPlugin_v13")) {
      const void* t = dlsym(dl, "ncclGinPlugin_v13");
      exported |= 1u << 13;
      gin13 = 1;
      if (name == NULL) name = *(const char* const*)t;
    }
    if (!exported) continue;
    any = 1;
    printf("  %s plugin \"%s\": exports %s%s\n", a->kind, name ? name : "(null name)", list,
           gin13 ? (list[0] ? " and ncclGinPlugin_v13 (read as v13)" : "ncclGinPlugin_v13 (read as v13)") : "");
    char who[32];
    print_choice("weft", pick(exported, a->weft_lo, a->weft_hi), a->prefix);
    for (int r = 0; r < a->nnccl; r++) {
      snprintf(who, sizeof who, "NCCL %s", a->nccl[r].release);
      print_choice(who, pick(exported, a->nccl[r].lo, a->nccl[r].hi), a->prefix);
    }
  }
  if (!any)
    printf("  exports no ncclNetPlugin_vN, ncclTunerPlugin_vN, ncclEnvPlugin_vN, ncclProfiler_vN, "
           "ncclGinPlugin_vN, ncclRmaPlugin_vN or ncclCollNetPlugin_vN\n");
  dlclose(dl);
  return any;
}

int versions_main(int argc, char** argv) {
  if (argc < 1) {
    fprintf(stderr, "usage: weft-conformance versions LIB.so...\n");
    return 2;
  }
  int ok = 1;
  for (int i = 0; i < argc; i++) ok &= report_one(argv[i]);
  return ok ? 0 : 1;
}
