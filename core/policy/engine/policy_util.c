/* The engine's small helpers: a bounded arena (one per parsed file, freed at once), positioned
 * error messages, "did you mean" suggestions and the settings hash. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"

struct pl_chunk {
  pl_chunk* next;
  size_t used, cap;
  max_align_t data[];
};

enum { CHUNK_BYTES = 64 << 10 };

void* pl_alloc(pl_arena* a, size_t n) {
  const size_t align = sizeof(max_align_t);
  if (n > PL_MAX_ARENA) return NULL;
  n = (n + align - 1) / align * align;
  if (n == 0) n = align;
  pl_chunk* c = a->head;
  if (c == NULL || c->cap - c->used < n) {
    size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
    if (a->total + cap > PL_MAX_ARENA) return NULL;
    c = malloc(sizeof *c + cap);
    if (c == NULL) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
    a->total += cap;
  }
  void* p = (char*)c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char* pl_strndup(pl_arena* a, const char* s, size_t n) {
  char* d = pl_alloc(a, n + 1);
  if (d == NULL) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

void pl_arena_free(pl_arena* a) {
  pl_chunk* c = a->head;
  while (c) {
    pl_chunk* next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
  a->total = 0;
}

void pl_error(policy_errors* e, const char* file, int line, int col, const char* fmt, ...) {
  if (e == NULL) return;
  if (e->n == POLICY_MAX_ERRORS) {
    e->dropped++;
    return;
  }
  char* out = e->msg[e->n];
  int o = line > 0 ? snprintf(out, POLICY_ERR_LEN, "%s:%d:%d: ", file, line, col)
                   : snprintf(out, POLICY_ERR_LEN, "%s: ", file);
  if (o < 0 || o >= POLICY_ERR_LEN - 1) o = 0; /* a path that long: drop it, keep the text */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + o, (size_t)(POLICY_ERR_LEN - o), fmt, ap);
  va_end(ap);
  e->n++;
}

/* Optimal string alignment distance, case-insensitive, with an early exit above limit. */
static int edit_distance(const char* a, const char* b, int limit) {
  enum { MAXLEN = 64 };
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > MAXLEN || lb > MAXLEN) return limit + 1;
  if (la - lb > limit || lb - la > limit) return limit + 1;
  int d[MAXLEN + 1][MAXLEN + 1];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++) {
    for (int j = 1; j <= lb; j++) {
      int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
      int cost = ca != cb;
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  }
  return d[la][lb];
}

const char* pl_suggest(const char* word, const char* const* cands, int n) {
  size_t len = strlen(word);
  int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
  const char* best = NULL;
  int best_d = limit + 1;
  for (int i = 0; i < n; i++) {
    int d = edit_distance(word, cands[i], limit);
    if (d < best_d) {
      best_d = d;
      best = cands[i];
    }
  }
  return best;
}

uint64_t pl_fnv1a(const void* p, size_t n, uint64_t h) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

int pl_env_name_ok(const char* s) {
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (const char* p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}
