/* The GIN/RMA/CollNet loader (core/plugin/kind_load.c) on the fixture plugins built from
 * kind_fixture.c into KINDLOAD_DIR (libnccl-gin-vN.so, libnccl-rma-vN.so, libnccl-rma-gin13.so,
 * libnccl-net-collnet-vN.so, and broken ones). Usage: kindload_test <case>; one process per
 * case. WARNs go to a file so a case can read them. */
#include <dlfcn.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kind_fixture.h"
#include "plugin/kind.h"
#include "testutil.h"
#include "util/log.h"


static char log_path[PATH_MAX];

static const char* lib(const char* name) {
  static char buf[8][PATH_MAX];
  static int next;
  char* p = buf[next++ % 8];
  snprintf(p, PATH_MAX, "%s/%s", KINDLOAD_DIR, name);
  return p;
}

static fixture_stats_t* stats(const char* name) {
  void* dl = dlopen(lib(name), RTLD_NOW | RTLD_LOCAL); /* kept open: the counters survive */
  if (dl == NULL) {
    fprintf(stderr, "cannot open %s: %s\n", lib(name), dlerror());
    exit(1);
  }
  fixture_stats_t* s = dlsym(dl, "fixture_stats");
  EXPECT(s != NULL);
  return s;
}

static int log_has(const char* a, const char* b) {
  FILE* f = fopen(log_path, "r");
  if (f == NULL) return 0;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, a) && (!b || strstr(line, b))) n++;
  fclose(f);
  return n;
}

static weft_kind_plugin* open_kind(weft_plugin_kind k, const char* net_lib, uint64_t id) {
  weft_kind_plugin* p = NULL;
  EXPECT_OK(kind_plugin_open(k, net_lib, id, &p));
  return p;
}

/* Every GIN version through NCCL_GIN_PLUGIN by bare name (libnccl-gin-<name>.so). */
static int case_gin_every_version(void) {
  for (int v = WEFT_GIN_MIN_VERSION; v <= WEFT_GIN_MAX_VERSION; v++) {
    char name[16], file[40];
    snprintf(name, sizeof name, "v%d", v);
    snprintf(file, sizeof file, "libnccl-gin-v%d.so", v);
    setenv("NCCL_GIN_PLUGIN", name, 1);
    fixture_stats_t* s = stats(file);
    weft_kind_plugin* p = open_kind(WEFT_KIND_GIN, NULL, 0x1234 + (uint64_t)v);
    EXPECT(p != NULL);
    EXPECT_EQ_INT(p->version, v);
    EXPECT_EQ_INT(p->ndev, 2);
    EXPECT(strstr(p->path, file) != NULL);
    EXPECT(s->last_comm_id == 0x1234 + (uint64_t)v);
    EXPECT_EQ_INT(p->gin.has_host_rma, v <= 13);
    ncclGinProperties_v15_t gp;
    memset(&gp, 0x55, sizeof gp);
    EXPECT_OK(p->gin.gin.getGinProperties(&gp));
    /* v15's own answer, v14's widened (barrier default), v11..v13 strong signals */
    if (v == 15) EXPECT_EQ_INT(gp.barrierOptions, NCCL_GIN_BARRIER_SIGNAL_EFFICIENT);
    else EXPECT_EQ_INT(gp.barrierOptions, NCCL_GIN_BARRIER_DEFAULT);
    EXPECT_EQ_INT(gp.supportsStrongSignals, v != 14);
    ncclNetProperties_v12_t np;
    EXPECT_OK(p->gin.gin.getProperties(1, &np));
    EXPECT(np.name && strcmp(np.name, "fix") == 0);
    if (v <= 12) EXPECT_EQ_INT(np.railId, NCCL_NET_ID_UNDEF); /* widened from net v11 */
    kind_plugin_close(p);
    EXPECT_EQ_INT(s->finalizes, 1);
  }
  return 0;
}

/* RMA v13..v15, and a library with only ncclGinPlugin_v13 read as RMA v13. */
static int case_rma_every_version(void) {
  const char* files[] = {"libnccl-rma-v13.so", "libnccl-rma-v14.so", "libnccl-rma-v15.so",
                         "libnccl-rma-gin13.so"};
  int want[] = {13, 14, 15, 13};
  for (int i = 0; i < 4; i++) {
    setenv("NCCL_RMA_PLUGIN", lib(files[i]), 1);
    weft_kind_plugin* p = open_kind(WEFT_KIND_RMA, NULL, 7);
    EXPECT(p != NULL);
    EXPECT_EQ_INT(p->version, want[i]);
    EXPECT(p->rma.iput != NULL && p->rma.iputSignal != NULL && p->rma.iget != NULL);
    kind_plugin_close(p);
  }
  return 0;
}

/* A comma list: the first that loads wins; a missing one WARNs; a failing init WARNs with the
 * plugin and the call, and the next one is used. */
static int case_list_order_and_errors(void) {
  char list[4 * PATH_MAX];
  snprintf(list, sizeof list, "nosuchgin,%s,%s,%s", lib("libnccl-gin-initfails.so"),
           lib("libnccl-gin-nullreg.so"), lib("libnccl-gin-v13.so"));
  setenv("NCCL_GIN_PLUGIN", list, 1);
  weft_kind_plugin* p = open_kind(WEFT_KIND_GIN, NULL, 1);
  EXPECT(p != NULL);
  EXPECT_EQ_INT(p->version, 13);
  EXPECT(log_has("GIN/Plugin: nosuchgin: no such library", "libnccl-gin-nosuchgin.so") == 1);
  EXPECT(log_has("libnccl-gin-initfails.so (fix-initfails): ncclGinPlugin_v14 init returned "
                 "ncclSystemError, skipping", NULL) == 1);
  EXPECT(log_has("libnccl-gin-nullreg.so (fix-nullreg): ncclGinPlugin_v15: regMrSym is NULL",
                 NULL) == 1);
  kind_plugin_close(p);
  return 0;
}

/* none: nothing, silently; unset: the default library is absent, an INFO only. */
static int case_none_and_default(void) {
  setenv("NCCL_GIN_PLUGIN", "none", 1);
  EXPECT(open_kind(WEFT_KIND_GIN, NULL, 1) == NULL);
  unsetenv("NCCL_GIN_PLUGIN");
  unsetenv("NCCL_RMA_PLUGIN");
  EXPECT(open_kind(WEFT_KIND_GIN, NULL, 1) == NULL);
  EXPECT(open_kind(WEFT_KIND_RMA, NULL, 1) == NULL);
  EXPECT(log_has("NCCL WARN", NULL) == 0);
  return 0;
}

/* The net library's tables: GIN (NCCL 2.28's lookup), RMA after the GIN library, CollNet of
 * every version (only ever there). */
static int case_net_library_lookups(void) {
  setenv("NCCL_GIN_PLUGIN", "none", 1);
  setenv("NCCL_RMA_PLUGIN", "none", 1);
  weft_kind_plugin* p = open_kind(WEFT_KIND_GIN, lib("libnccl-gin-v11.so"), 1);
  EXPECT(p != NULL && p->version == 11);
  kind_plugin_close(p);
  /* RMA: none listed; the last GIN library (v11: no RMA table) then the net library */
  p = open_kind(WEFT_KIND_RMA, lib("libnccl-rma-v14.so"), 1);
  EXPECT(p != NULL && p->version == 14);
  kind_plugin_close(p);
  for (int v = WEFT_COLLNET_MIN_VERSION; v <= WEFT_COLLNET_MAX_VERSION; v++) {
    char file[48];
    snprintf(file, sizeof file, "libnccl-net-collnet-v%d.so", v);
    fixture_stats_t* s = stats(file);
    p = open_kind(WEFT_KIND_COLLNET, lib(file), 99);
    EXPECT(p != NULL);
    EXPECT_EQ_INT(p->version, v);
    EXPECT_EQ_INT(p->ndev, 2);
    EXPECT(strcmp(p->name, "fix-collnet") == 0);
    kind_plugin_close(p);
    EXPECT_EQ_INT(s->finalizes, v >= 11 ? 1 : 0); /* no finalize before v11 */
  }
  EXPECT(open_kind(WEFT_KIND_COLLNET, NULL, 1) == NULL);
  EXPECT(log_has("NCCL WARN", NULL) == 0);
  return 0;
}

/* A window's NCCL_WIN_STRICT_ORDERING reaches regMrSym as NCCL_NET_MR_FLAG_FORCE_SO. */
static int case_window_strict_ordering(void) {
  const char* files[] = {"libnccl-gin-v15.so", "libnccl-rma-v15.so", "libnccl-gin-v11.so"};
  for (int i = 0; i < 3; i++) {
    int is_gin = strstr(files[i], "gin") != NULL;
    setenv(is_gin ? "NCCL_GIN_PLUGIN" : "NCCL_RMA_PLUGIN", lib(files[i]), 1);
    fixture_stats_t* s = stats(files[i]);
    weft_kind_plugin* p = open_kind(is_gin ? WEFT_KIND_GIN : WEFT_KIND_RMA, NULL, 1);
    EXPECT(p != NULL);
    char buf[64];
    void* mh = NULL;
    EXPECT_OK(kind_plugin_reg_window(p, NULL, buf, sizeof buf, NCCL_PTR_HOST,
                                     NCCL_WIN_STRICT_ORDERING, &mh));
    EXPECT(s->last_mr_flags == NCCL_NET_MR_FLAG_FORCE_SO);
    EXPECT_OK(kind_plugin_reg_window(p, NULL, buf, sizeof buf, NCCL_PTR_HOST,
                                     NCCL_WIN_DEFAULT | NCCL_WIN_COLL_SYMMETRIC, &mh));
    EXPECT(s->last_mr_flags == 0);
    EXPECT_EQ_INT(s->regs, 2);
    kind_plugin_close(p);
  }
  return 0;
}

/* The layouts the headers claim, against offsets read from NCCL 2.32.6's v14→v15 GIN adapter
 * (its stores into the v15 table and config) and from NCCL's published v11..v14 headers. */
static int case_layouts(void) {
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, getGinProperties), 0x18);
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, getProperties), 0x20);
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, connect), 0x30);
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, createContext), 0x38);
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, regMrSym), 0x40);
  EXPECT_EQ_INT((int)offsetof(ncclGin_v15_t, finalize), 0x80);
  EXPECT_EQ_INT((int)sizeof(ncclGin_v15_t), 136);
  EXPECT_EQ_INT((int)offsetof(ncclGinProperties_v15_t, barrierOptions), 4);
  EXPECT_EQ_INT((int)sizeof(ncclGinProperties_v15_t), 8);
  EXPECT_EQ_INT((int)sizeof(ncclGinConfig_v15_t), 24);
  EXPECT_EQ_INT((int)sizeof(ncclGin_v14_t), 136);
  EXPECT_EQ_INT((int)sizeof(ncclGinConfig_v14_t), 28);
  EXPECT_EQ_INT((int)sizeof(ncclGinProperties_v14_t), 2);
  EXPECT_EQ_INT((int)sizeof(ncclGin_v13_t), 168);
  EXPECT_EQ_INT((int)sizeof(ncclGinConfig_v13_t), 20);
  EXPECT_EQ_INT((int)sizeof(ncclGin_v12_t), 152);
  EXPECT_EQ_INT((int)sizeof(ncclGin_v11_t), 152);
  EXPECT_EQ_INT((int)sizeof(ncclRma_v14_t), 168);
  EXPECT_EQ_INT((int)sizeof(ncclRma_v15_t), 168);
  EXPECT_EQ_INT((int)sizeof(ncclRmaConfig_v14_t), 12);
  EXPECT_EQ_INT((int)sizeof(ncclCollNet_v6_t), 15 * 8);
  EXPECT_EQ_INT((int)sizeof(ncclCollNet_v8_t), 17 * 8);
  EXPECT_EQ_INT((int)sizeof(ncclCollNet_v9_t), 18 * 8);
  EXPECT_EQ_INT((int)sizeof(ncclCollNet_v12_t), 19 * 8);
  EXPECT_EQ_INT((int)sizeof(ncclNetSGE_v8_t), 24);
  EXPECT_EQ_INT(NCCL_NET_MR_FLAG_FORCE_SO, 1);
  EXPECT_EQ_INT(NCCL_WIN_STRICT_ORDERING, 2);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  snprintf(log_path, sizeof log_path, "/tmp/weft-kindload-%d.log", (int)getpid());
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", log_path, 1);
  weft_log_reset();
  const char* c = argv[1];
  int rc;
  if (!strcmp(c, "gin_every_version")) rc = case_gin_every_version();
  else if (!strcmp(c, "rma_every_version")) rc = case_rma_every_version();
  else if (!strcmp(c, "list_order_and_errors")) rc = case_list_order_and_errors();
  else if (!strcmp(c, "none_and_default")) rc = case_none_and_default();
  else if (!strcmp(c, "net_library_lookups")) rc = case_net_library_lookups();
  else if (!strcmp(c, "window_strict_ordering")) rc = case_window_strict_ordering();
  else if (!strcmp(c, "layouts")) rc = case_layouts();
  else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  if (rc != 0 || getenv("WEFT_KEEP_LOG")) {
    fprintf(stderr, "log kept: %s\n", log_path);
  } else {
    unlink(log_path);
  }
  return rc;
}
