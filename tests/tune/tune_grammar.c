/* NCCL_ALGO / NCCL_PROTO grammar: valid specs give the expected per-collective masks (NCCL's
 * own examples included); invalid ones are ncclInvalidUsage with a WARN naming the token and
 * the variable, and leave the output untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tune/algo_proto.h"
#include "util/log.h"

#define T (1u << NCCL_ALGO_TREE)
#define R (1u << NCCL_ALGO_RING)
#define CD (1u << NCCL_ALGO_COLLNET_DIRECT)
#define CC (1u << NCCL_ALGO_COLLNET_CHAIN)
#define NV (1u << NCCL_ALGO_NVLS)
#define NT (1u << NCCL_ALGO_NVLS_TREE)
#define PAT (1u << NCCL_ALGO_PAT)
#define NCCL7 0x7fu /* NCCL's seven algorithms */
#define ALLA 0x1ffu /* and weft's OneShot, TwoShot */
#define LL (1u << NCCL_PROTO_LL)
#define L128 (1u << NCCL_PROTO_LL128)
#define S (1u << NCCL_PROTO_SIMPLE)
#define ALLP 0x7u

/* Masks in collective order: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce. */
typedef struct {
  const char* spec;
  unsigned m[WEFT_NUM_COLL_FUNCS];
} case_t;

static const case_t algo_ok[] = {
    {NULL, {ALLA, ALLA, ALLA, ALLA, ALLA}},
    {"", {ALLA, ALLA, ALLA, ALLA, ALLA}},
    {"   ", {ALLA, ALLA, ALLA, ALLA, ALLA}},
    {"ring", {R, R, R, R, R}},
    {"Ring", {R, R, R, R, R}},
    {"RING,tree", {R | T, R | T, R | T, R | T, R | T}},
    {" ring , Tree ", {R | T, R | T, R | T, R | T, R | T}},
    {"^ring", {ALLA & ~R, ALLA & ~R, ALLA & ~R, ALLA & ~R, ALLA & ~R}},
    {" ^ Ring ,tree", {ALLA & ~(R | T), ALLA & ~(R | T), ALLA & ~(R | T), ALLA & ~(R | T),
                       ALLA & ~(R | T)}},
    {"collnetdirect,CollNetChain,nvls,NVLSTree,pat", {NCCL7 & ~(R | T), NCCL7 & ~(R | T),
                                                      NCCL7 & ~(R | T), NCCL7 & ~(R | T),
                                                      NCCL7 & ~(R | T)}},
    /* NCCL's example: ring+collnetdirect everywhere, then allreduce and broadcast replaced. */
    {"ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring",
     {R, R | CD, R | CD, R | CD, T | CD}},
    {"allreduce:tree", {ALLA, ALLA, ALLA, ALLA, T}},
    {"AllReduce:Tree;AllGather:PAT", {ALLA, ALLA, PAT, ALLA, T}},
    {"ALLREDUCE : ^tree ; reducescatter: nvls", {ALLA, ALLA, ALLA, NV, ALLA & ~T}},
    {"reduce:ring;allreduce:ring;allreduce:tree", {ALLA, R, ALLA, ALLA, T}},
    {"ring;;allreduce:tree;", {R, R, R, R, T}},
    {";ring", {R, R, R, R, R}},
    {"ring,,tree,", {R | T, R | T, R | T, R | T, R | T}},
    {"broadcast:^ring,tree", {ALLA & ~(R | T), ALLA, ALLA, ALLA, ALLA}},
    {"NVLSTree;reduce:CollNetChain", {NT, CC, NT, NT, NT}},
};

static const case_t proto_ok[] = {
    {NULL, {ALLP, ALLP, ALLP, ALLP, ALLP}},
    {"", {ALLP, ALLP, ALLP, ALLP, ALLP}},
    /* NCCL's example: everything but LL128, and only LL128 for allreduce. */
    {"^LL128;allreduce:LL128", {LL | S, LL | S, LL | S, LL | S, L128}},
    /* NCCL's example: LL and Simple, and everything except LL for allreduce. */
    {"LL,Simple;allreduce:^LL", {LL | S, LL | S, LL | S, LL | S, L128 | S}},
    {"allreduce:ll,simple;broadcast:^ll", {L128 | S, ALLP, ALLP, ALLP, LL | S}},
    {"simple", {S, S, S, S, S}},
    {"SIMPLE", {S, S, S, S, S}},
    {"ll128", {L128, L128, L128, L128, L128}},
    {"Ll", {LL, LL, LL, LL, LL}},
    {"^ll,ll128", {S, S, S, S, S}},
    {"^simple,LL,LL128", {0, 0, 0, 0, 0}},
    {"\tLL ;\n allgather : Simple ", {LL, LL, S, LL, LL}},
};

static const char* const algo_bad[] = {
    "rings",           "ring,foo",        "allreduce:ring;tree", "allreduce:",
    "allreduce: , ",   "allreducex:ring", "sendrecv:ring",      "ring:allreduce",
    ":ring",           "ring;foo:tree",   "^ring,^tree",        "Tree Ring",
    "LL",              "all reduce:ring",
};
static const char* const proto_bad[] = {
    "LL129", "allreduce:LL;LL128", "ll,simple;allreduce:", "foo:LL", "^", "Ring",
};

static void expect_masks(const unsigned* got, const unsigned* want, const char* what,
                         const char* spec) {
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) {
    if (got[f] != want[f]) {
      fprintf(stderr, "%s \"%s\": %s mask 0x%x, expected 0x%x\n", what, spec ? spec : "(null)",
              tune_func_name(f), got[f], want[f]);
      exit(1);
    }
  }
}

static const unsigned sentinel = 0xdeadu;

static void expect_bad(const char* algo, const char* proto, const char* var, const char* token) {
  weft_algo_proto_mask m;
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) m.algo[f] = m.proto[f] = sentinel;
  WARN("-"); /* so a parse that fails without warning is caught below */
  EXPECT_RES(tune_parse_masks(algo, proto, &m), ncclInvalidUsage);
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT(m.algo[f] == sentinel && m.proto[f] == sentinel);
  char last[1024];
  weft_log_last_error(last, sizeof last);
  if (strstr(last, var) == NULL || (token && strstr(last, token) == NULL)) {
    fprintf(stderr, "WARN \"%s\" should name %s and \"%s\"\n", last, var, token ? token : "");
    exit(1);
  }
}

int main(void) {
  test_require_weft_lib();
  setenv("NCCL_DEBUG", "NONE", 1); /* the WARNs below are expected; last-error still records */
  weft_log_reset();
  weft_algo_proto_mask m;
  for (size_t i = 0; i < sizeof algo_ok / sizeof algo_ok[0]; i++) {
    EXPECT_OK(tune_parse_masks(algo_ok[i].spec, NULL, &m));
    expect_masks(m.algo, algo_ok[i].m, "NCCL_ALGO", algo_ok[i].spec);
    unsigned allp[WEFT_NUM_COLL_FUNCS] = {ALLP, ALLP, ALLP, ALLP, ALLP};
    expect_masks(m.proto, allp, "NCCL_PROTO", NULL);
  }
  for (size_t i = 0; i < sizeof proto_ok / sizeof proto_ok[0]; i++) {
    EXPECT_OK(tune_parse_masks(NULL, proto_ok[i].spec, &m));
    expect_masks(m.proto, proto_ok[i].m, "NCCL_PROTO", proto_ok[i].spec);
  }
  /* Both at once. */
  EXPECT_OK(tune_parse_masks("ring", "simple", &m));
  for (int f = 0; f < WEFT_NUM_COLL_FUNCS; f++) EXPECT(m.algo[f] == R && m.proto[f] == S);

  for (size_t i = 0; i < sizeof algo_bad / sizeof algo_bad[0]; i++)
    expect_bad(algo_bad[i], NULL, "NCCL_ALGO", NULL);
  for (size_t i = 0; i < sizeof proto_bad / sizeof proto_bad[0]; i++)
    expect_bad(NULL, proto_bad[i], "NCCL_PROTO", NULL);
  /* The WARN names the offending token. */
  expect_bad("ring,foo", NULL, "NCCL_ALGO", "\"foo\"");
  expect_bad("allreducex:ring", NULL, "NCCL_ALGO", "\"allreducex\"");
  expect_bad(NULL, "LL129", "NCCL_PROTO", "\"LL129\"");
  expect_bad("ring", "simple;allreduce:bogus", "NCCL_PROTO", "\"bogus\"");
  expect_bad("ring;tree", NULL, "NCCL_ALGO", "\"tree\"");

  /* Names. */
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_TREE), "Tree") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_RING), "Ring") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_COLLNET_DIRECT), "CollNetDirect") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_COLLNET_CHAIN), "CollNetChain") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_NVLS), "NVLS") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_NVLS_TREE), "NVLSTree") == 0);
  EXPECT(strcmp(tune_algo_name(NCCL_ALGO_PAT), "PAT") == 0);
  EXPECT(strcmp(tune_proto_name(NCCL_PROTO_LL), "LL") == 0);
  EXPECT(strcmp(tune_proto_name(NCCL_PROTO_LL128), "LL128") == 0);
  EXPECT(strcmp(tune_proto_name(NCCL_PROTO_SIMPLE), "Simple") == 0);
  EXPECT(strcmp(tune_algo_name(-1), "Unknown") == 0);
  EXPECT(strcmp(tune_proto_name(3), "Unknown") == 0);
  EXPECT(strcmp(tune_func_name(ncclFuncAllReduce), "AllReduce") == 0);
  return 0;
}
