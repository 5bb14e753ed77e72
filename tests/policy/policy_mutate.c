/* Mutation test: thousands of mutated copies of the valid policy files (tests/policy/good)
 * go through the loader, and every one that loads also through matching and what it sets.
 * Nothing may crash (the sanitizer builds run this too) and each parse must stay bounded.
 * Usage: policy_mutate GOOD_DIR [COUNT]; WEFT_TEST_SEED picks the sequence. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "testutil.h"

enum { MAX_SEEDS = 64, MAX_BUF = 1 << 16 };

static char* seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS];
static int nseeds;

static void read_seeds(const char* dir) {
  DIR* d = opendir(dir);
  EXPECT(d != NULL);
  struct dirent* e;
  while ((e = readdir(d)) != NULL && nseeds < MAX_SEEDS) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".yaml")) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE* f = fopen(path, "rb");
    EXPECT(f != NULL);
    char* buf = malloc(MAX_BUF);
    EXPECT(buf != NULL);
    seed_len[nseeds] = fread(buf, 1, MAX_BUF / 4, f);
    fclose(f);
    seeds[nseeds++] = buf;
  }
  closedir(d);
  EXPECT(nseeds > 0);
}

static const char* const tokens[] = {
    "&a ", "*a", "&b [*a, *a, *a, *a]", "<<: *a", "!!str ", "!x ", "---\n", "...\n", "? ",
    ": ", "- ", "[", "]", "{", "}", ",", "\"", "'", "|\n", ">-\n", "#", "\t", "\n  ", "%YAML 1.1\n",
    "~", "null", "true", "0x7fffffffffffffff", "-1", "99999999999999999999", "\\", "\xff\xfe",
    "\xc3", "NCCL_ALGO", "nodes: {min: 5, max: 2}", "hostname: '[z-a]'", "name: ", "match: ",
    "settings: ", "clusters: ", "version: 2", "\"\\0\"", "\"\\u0000\"", "\x00",
};

static uint64_t rng;
static size_t pick(size_t n) { return n ? (size_t)(test_rand(&rng) % n) : 0; }

/* One mutation of buf[0..*len) in place (capacity MAX_BUF). */
static void mutate(char* buf, size_t* len) {
  size_t n = *len;
  switch (pick(8)) {
    case 0: /* flip a byte */
      if (n) buf[pick(n)] ^= (char)(1u << pick(8));
      break;
    case 1: { /* insert a token */
      const char* t = tokens[pick(sizeof tokens / sizeof tokens[0])];
      size_t tl = t[0] ? strlen(t) : 1, at = pick(n + 1);
      if (n + tl >= MAX_BUF) break;
      memmove(buf + at + tl, buf + at, n - at);
      memcpy(buf + at, t, tl);
      *len = n + tl;
      break;
    }
    case 2: { /* delete a range */
      if (!n) break;
      size_t at = pick(n), k = 1 + pick(n - at < 40 ? n - at : 40);
      memmove(buf + at, buf + at + k, n - at - k);
      *len = n - k;
      break;
    }
    case 3: { /* duplicate a range somewhere else */
      if (!n) break;
      size_t from = pick(n), k = 1 + pick(n - from < 200 ? n - from : 200), to = pick(n + 1);
      if (n + k >= MAX_BUF) break;
      char tmp[200];
      memcpy(tmp, buf + from, k);
      memmove(buf + to + k, buf + to, n - to);
      memcpy(buf + to, tmp, k);
      *len = n + k;
      break;
    }
    case 4: /* truncate */
      *len = pick(n + 1);
      break;
    case 5: { /* a random byte anywhere */
      size_t at = pick(n + 1);
      if (n + 1 >= MAX_BUF) break;
      memmove(buf + at + 1, buf + at, n - at);
      buf[at] = (char)pick(256);
      *len = n + 1;
      break;
    }
    case 6: { /* a deep or wide nest */
      size_t k = 1 + pick(60), at = pick(n + 1);
      if (n + 2 * k >= MAX_BUF) break;
      memmove(buf + at + 2 * k, buf + at, n - at);
      for (size_t i = 0; i < k; i++) buf[at + i] = '[';
      for (size_t i = 0; i < k; i++) buf[at + k + i] = ']';
      *len = n + 2 * k;
      break;
    }
    default: { /* swap two bytes */
      if (n < 2) break;
      size_t a = pick(n), b = pick(n);
      char t = buf[a];
      buf[a] = buf[b];
      buf[b] = t;
      break;
    }
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A loaded policy goes through everything the explain tool and init use. */
static void exercise(const weft_policy* p) {
  policy_facts f;
  memset(&f, 0, sizeof f);
  snprintf(f.hostname, sizeof f.hostname, "gpu-ib-7");
  policy_facts_add_nic(&f, "mlx5_0");
  f.ngpus = 1;
  snprintf(f.gpus[0], sizeof f.gpus[0], "NVIDIA H100");
  f.nodes_min = 1;
  f.nodes_max = 4;
  f.rpn_min = f.rpn_max = 8;
  policy_choice ch;
  policy_choose(p, &f, &ch);
  char why[512];
  for (int i = 0; i < policy_cluster_count(p); i++) {
    policy_eval_cluster(p, i, &f, why, sizeof why);
    const policy_item* items;
    int n = policy_items(p, i, &items);
    for (int k = 0; k < n; k++) EXPECT(items[k].name[0] != '\0');
    (void)policy_settings_hash(p, i);
    (void)policy_cluster_name(p, i);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: policy_mutate GOOD_DIR [COUNT]\n");
    return 2;
  }
  int count = argc > 2 ? atoi(argv[2]) : 2000;
  rng = test_seed(0x5eed5eedull);
  printf("seed 0x%llx, %d mutations\n", (unsigned long long)rng, count);
  read_seeds(argv[1]);
  char* buf = malloc(MAX_BUF);
  policy_errors* e = malloc(sizeof *e);
  EXPECT(buf != NULL && e != NULL);
  double start = now_s(), worst = 0;
  int valid = 0, worst_case = -1;
  for (int i = 0; i < count; i++) {
    int s = (int)pick((size_t)nseeds);
    size_t len = seed_len[s];
    memcpy(buf, seeds[s], len);
    int rounds = 1 + (int)pick(4);
    for (int r = 0; r < rounds; r++) mutate(buf, &len);
    weft_policy* p = NULL;
    double t0 = now_s();
    int rc = policy_load_buffer("mutant.yaml", buf, len, &p, e);
    double dt = now_s() - t0;
    if (dt > worst) {
      worst = dt;
      worst_case = i;
    }
    if (rc == 0) {
      valid++;
      exercise(p);
      policy_free(p);
    } else {
      EXPECT(e->n > 0);
      EXPECT(strncmp(e->msg[0], "mutant.yaml:", 12) == 0);
    }
    if (dt > 1.0) {
      fprintf(stderr, "mutation %d took %.3f s (bound 1 s); input:\n%.*s\n", i, dt, (int)len, buf);
      return 1;
    }
  }
  printf("%d mutations in %.2f s: %d still valid; slowest parse %.2f ms (#%d)\n", count,
         now_s() - start, valid, worst * 1e3, worst_case);
  free(buf);
  free(e);
  for (int i = 0; i < nseeds; i++) free(seeds[i]);
  return 0;
}
