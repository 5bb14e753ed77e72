/* Matching: each cluster's conditions against the facts, in a fixed order (hostname, nic, gpu,
 * env, nodes, ranks_per_node). A cluster matches when every condition holds; the first failing
 * condition is its reason for not matching. Facts given as ranges (nodes and ranks per node
 * before the ranks have met) make a condition unknown unless the whole range decides it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_internal.h"

typedef struct {
  char* buf;
  size_t len, used;
} text;

static void put(text* t, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text* t, const char* fmt, ...) {
  if (t->len == 0 || t->used >= t->len - 1) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
  va_end(ap);
  if (n > 0) t->used += (size_t)n;
  if (t->used >= t->len) t->used = t->len - 1;
}

static void put_globs(text* t, const pl_globs* g) {
  for (int i = 0; i < g->n && i < 4; i++) put(t, "%s'%s'", i ? ", " : "", g->v[i]);
  if (g->n > 4) put(t, ", … (%d globs)", g->n);
}

static void put_values(text* t, const char* base, size_t stride, int n) {
  for (int i = 0; i < n && i < 8; i++) put(t, "%s%s", i ? ", " : "", base + (size_t)i * stride);
  if (n > 8) put(t, ", … (%d)", n);
}

/* Any value matching any glob. */
static policy_tri eval_globs(const pl_globs* g, const char* what, const char* base,
                             size_t stride, int n, int casefold, text* t) {
  for (int i = 0; i < n; i++) {
    const char* v = base + (size_t)i * stride;
    for (int j = 0; j < g->n; j++) {
      if (pl_glob_match(g->v[j], v, casefold)) {
        put(t, "%s '%s' matches '%s'", what, v, g->v[j]);
        return POLICY_YES;
      }
    }
  }
  if (n == 0) {
    put(t, "no %s found here (wanted ", what);
  } else if (n == 1) {
    put(t, "%s '%s' matches none of ", what, base);
  } else {
    put(t, "no %s matches ", what);
  }
  put_globs(t, g);
  if (n > 1) {
    put(t, " (%ss here: ", what);
    put_values(t, base, stride, n);
    put(t, ")");
  } else if (n == 0) {
    put(t, ")");
  }
  return POLICY_NO;
}

static void put_range(text* t, const pl_range* r) {
  if (r->min == r->max) put(t, "%lld", (long long)r->min);
  else if (r->max >= 1000000000) put(t, ">= %lld", (long long)r->min);
  else if (r->min <= 1) put(t, "<= %lld", (long long)r->max);
  else put(t, "%lld..%lld", (long long)r->min, (long long)r->max);
}

static policy_tri eval_range(const pl_range* r, const char* what, int fmin, int fmax, text* t) {
  if (fmin >= r->min && fmax <= r->max) {
    if (fmin == fmax) put(t, "%s %d is ", what, fmin);
    else put(t, "%s (%d..%d) is ", what, fmin, fmax);
    put_range(t, r);
    return POLICY_YES;
  }
  if (fmax < r->min || fmin > r->max) {
    if (fmin == fmax) put(t, "%s %d is not ", what, fmin);
    else put(t, "%s (at most %d) is not ", what, fmax);
    put_range(t, r);
    return POLICY_NO;
  }
  put(t, "%s not known yet (wanted ", what);
  put_range(t, r);
  put(t, ")");
  return POLICY_UNKNOWN;
}

static policy_tri eval_env(const pl_env_cond* e, text* t) {
  const char* v = getenv(e->name);
  switch (e->kind) {
    case PL_ENV_SET:
      put(t, "%s is %sset", e->name, v ? "" : "not ");
      return v ? POLICY_YES : POLICY_NO;
    case PL_ENV_UNSET:
      put(t, "%s is %sset", e->name, v ? "" : "not ");
      return v ? POLICY_NO : POLICY_YES;
    default:
      if (v == NULL) {
        put(t, "%s is not set (wanted '%s')", e->name, e->value);
        return POLICY_NO;
      }
      if (strcmp(v, e->value)) {
        put(t, "%s is '%.60s', not '%s'", e->name, v, e->value);
        return POLICY_NO;
      }
      put(t, "%s is '%s'", e->name, e->value);
      return POLICY_YES;
  }
}

/* One condition's verdict into the cluster's: keep the first NO, else the first UNKNOWN, else
 * every YES. Each condition is written to scratch and copied where it belongs. */
typedef struct {
  policy_tri verdict;
  text yes;
  char first_no[256];
  char first_unknown[256];
} tally;

static void count(tally* s, policy_tri r, const char* cond) {
  if (r == POLICY_NO && s->first_no[0] == '\0')
    snprintf(s->first_no, sizeof s->first_no, "%s", cond);
  else if (r == POLICY_UNKNOWN && s->first_unknown[0] == '\0')
    snprintf(s->first_unknown, sizeof s->first_unknown, "%s", cond);
  else if (r == POLICY_YES)
    put(&s->yes, "%s%s", s->yes.used ? "; " : "", cond);
  if (r == POLICY_NO) s->verdict = POLICY_NO;
  else if (r == POLICY_UNKNOWN && s->verdict == POLICY_YES) s->verdict = POLICY_UNKNOWN;
}

policy_tri policy_eval_cluster(const weft_policy* p, int i, const policy_facts* f, char* why,
                               size_t len) {
  const pl_cluster* cl = &p->clusters[i];
  tally s = {POLICY_YES, {why, len, 0}, "", ""};
  if (len) why[0] = '\0';
  char cond[256];
  text c;
#define COND(expr)                     \
  do {                                 \
    c = (text){cond, sizeof cond, 0};  \
    cond[0] = '\0';                    \
    policy_tri r_ = (expr);            \
    count(&s, r_, cond);               \
  } while (0)
  if (cl->hostname.n)
    COND(eval_globs(&cl->hostname, "hostname", f->hostname, sizeof f->hostname, 1, 1, &c));
  if (cl->nic.n) COND(eval_globs(&cl->nic, "NIC", f->nics[0], sizeof f->nics[0], f->nnics, 0, &c));
  if (cl->gpu.n) COND(eval_globs(&cl->gpu, "GPU", f->gpus[0], sizeof f->gpus[0], f->ngpus, 1, &c));
  for (int e = 0; e < cl->nenv; e++) COND(eval_env(&cl->env[e], &c));
  if (cl->nodes.set) COND(eval_range(&cl->nodes, "nodes", f->nodes_min, f->nodes_max, &c));
  if (cl->rpn.set) COND(eval_range(&cl->rpn, "ranks per node", f->rpn_min, f->rpn_max, &c));
#undef COND
  if (s.verdict == POLICY_NO) snprintf(why, len, "%s", s.first_no);
  else if (s.verdict == POLICY_UNKNOWN) snprintf(why, len, "%s", s.first_unknown);
  else if (s.yes.used == 0) snprintf(why, len, "no conditions (matches every host)");
  return s.verdict;
}

int policy_env_conditions(const weft_policy* p, int upto, char* buf, size_t len) {
  int n = 0;
  size_t used = 0;
  if (len) buf[0] = '\0';
  int last = upto < 0 || upto >= p->nclusters ? p->nclusters - 1 : upto;
  for (int i = 0; i <= last; i++)
    for (int e = 0; e < p->clusters[i].nenv; e++, n++) {
      if (used + 1 >= len) continue;
      int w = snprintf(buf + used, len - used, "%s%s of '%s'", n ? ", " : "",
                       p->clusters[i].env[e].name, p->clusters[i].name);
      if (w > 0) used += (size_t)w;
      if (used >= len) used = len - 1;
    }
  return n;
}

void policy_choose(const weft_policy* p, const policy_facts* f, policy_choice* out) {
  out->cluster = -1;
  out->decided = 1;
  out->why[0] = '\0';
  char why[400];
  for (int i = 0; i < p->nclusters; i++) {
    policy_tri r = policy_eval_cluster(p, i, f, why, sizeof why);
    if (r == POLICY_NO) continue;
    if (r == POLICY_UNKNOWN) {
      out->decided = 0;
      snprintf(out->why, sizeof out->why, "cluster '%s' depends on facts not known yet: %s",
               p->clusters[i].name, why);
      return;
    }
    out->cluster = i;
    snprintf(out->why, sizeof out->why, "%s", why);
    return;
  }
  snprintf(out->why, sizeof out->why, "%s",
           p->nclusters ? "no cluster matched" : "the file lists no clusters");
}

void policy_choose_local(const weft_policy* p, const policy_facts* f, policy_choice* out) {
  out->cluster = -1;
  out->decided = 1;
  out->why[0] = '\0';
  char why[400];
  size_t used = 0;
  for (int i = 0; i < p->nclusters; i++) {
    policy_tri r = policy_eval_cluster(p, i, f, why, sizeof why);
    if (r == POLICY_NO) continue;
    if (r == POLICY_UNKNOWN) {
      /* Noted, then passed over; the first few fit in why. */
      if (used < sizeof out->why / 2) {
        int n = snprintf(out->why + used, sizeof out->why - used,
                         "%scluster '%s' does not match without a communicator (%s)",
                         used ? "; " : "", p->clusters[i].name, why);
        if (n > 0) used += (size_t)n;
        if (used >= sizeof out->why) used = sizeof out->why - 1;
      }
      continue;
    }
    out->cluster = i;
    if (used) snprintf(out->why + used, sizeof out->why - used, "; then matched: %s", why);
    else snprintf(out->why, sizeof out->why, "%s", why);
    return;
  }
  if (used) return;
  snprintf(out->why, sizeof out->why, "%s",
           p->nclusters ? "no cluster matched" : "the file lists no clusters");
}
