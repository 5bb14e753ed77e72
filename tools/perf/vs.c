/* --vs: the coordinator and the group side of the turns (see vs.h for the design).
 *
 * Each group talks to the coordinator over one socketpair. Group to coordinator, a header
 * {type, len} and len bytes: HELLO (which library was loaded: label, file, version; sent once,
 * before the ranks start), ROW (a struct perf_result, as soon as a row is measured), WAIT
 * (the group's turn is over; it waits for the next). Coordinator to group: one GO byte. A
 * group that is gone shows as EOF: every process of the group holds the socket, so EOF means
 * the whole group has exited. */
#include "vs.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { VS_HELLO = 1, VS_ROW = 2, VS_WAIT = 3 };
enum { VS_GO = 'g' };

struct vs_hdr {
  uint32_t type, len;
};

struct vs_hello {
  char label[16];
  char path[PATH_MAX];
  int version;
};

static int vs_send(int fd, uint32_t type, const void* buf, size_t len) {
  struct vs_hdr h = {type, (uint32_t)len};
  return perf_write_all(fd, &h, sizeof h) || (len && perf_write_all(fd, buf, len)) ? -1 : 0;
}

/* --- the group side -------------------------------------------------------------------------- */

int perf_vs_turn(struct perf_proc* p) {
  const struct perf_setup* s = p->s;
  if (s->vs_fd < 0) return 0;
  /* Every process has finished its part of the turn before the root says so. */
  if (perf_chan_barrier(p->ch)) return -1;
  double failed = 0;
  if (p->is_root_proc) {
    fflush(stdout);
    char go = 0;
    if (vs_send(s->vs_fd, VS_WAIT, NULL, 0) || perf_read_all(s->vs_fd, &go, 1) || go != VS_GO) {
      perf_rank_error(p, "--vs: lost the coordinator");
      failed = 1;
    }
  }
  /* The others wait here, blocked on the side channel, and learn how the wait ended. */
  if (p->ch->allreduce(p->ch, &failed, 1, PERF_CHAN_MAX)) return -1;
  return failed > 0 ? -1 : 0;
}

void perf_vs_row(struct perf_proc* p, const struct perf_result* r) {
  if (p->s->vs_fd < 0 || !p->is_root_proc) return;
  (void)vs_send(p->s->vs_fd, VS_ROW, r, sizeof *r); /* a lost coordinator shows at the turn */
}

/* --- the coordinator ------------------------------------------------------------------------ */

enum group_state { G_RUNNING, G_WAITING, G_GONE };

struct group {
  int idx;               /* 0: A, 1: B */
  const char* requested; /* --lib / --vs; NULL: weft beside the executable */
  pid_t pid;
  int fd;    /* the coordinator's end */
  FILE* out; /* the group's stdout, captured */
  enum group_state state;
  int have_hello;
  struct vs_hello hello;
  char label[24];
  int rows;
  int killed; /* stopped by the coordinator (because the other failed) */
  int status; /* waitpid's */
};

/* In the forked group process: load the library, say which, run the ranks. Never returns. */
static void group_main(struct perf_setup* s, struct group* g, int child_fd, struct group* other,
                       int np, pid_t coordinator) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != coordinator) _exit(PERF_EXIT_FAIL);
  close(other->fd);
  if (other->out) fclose(other->out);
  close(g->fd);
  fflush(stdout);
  if (dup2(fileno(g->out), STDOUT_FILENO) < 0) {
    fprintf(stderr, "weft-perf: --vs: capturing the output: %s\n", strerror(errno));
    _exit(PERF_EXIT_FAIL);
  }
  fclose(g->out);
  static struct perf_nccl lib; /* the stubs point here: lives as long as the process */
  char err[512];
  if (perf_nccl_load(&lib, g->requested, err, sizeof err)) {
    fprintf(stderr, "weft-perf: --vs: library %c: %s\n", g->idx ? 'B' : 'A', err);
    exit(PERF_EXIT_USAGE);
  }
  struct vs_hello hello = {.version = lib.version};
  snprintf(hello.label, sizeof hello.label, "%s", perf_nccl_label(&lib));
  snprintf(hello.path, sizeof hello.path, "%s", lib.path);
  if (vs_send(child_fd, VS_HELLO, &hello, sizeof hello)) exit(PERF_EXIT_FAIL);
  s->lib = &lib;
  s->lib_label = perf_nccl_label(&lib);
  s->vs_fd = child_fd;
  s->vs_lib = g->idx;
  int rc = np == 1 ? perf_rank_run(0, 1, perf_chan_local(), s)
                   : perf_launch_fork(np, 0, perf_rank_run, s);
  fflush(stdout);
  exit(rc);
}

static int group_start(struct perf_setup* s, struct group* g, struct group* other, int np) {
  int sv[2];
  g->out = tmpfile();
  if (!g->out) {
    fprintf(stderr, "weft-perf: --vs: a temporary file for the output: %s\n", strerror(errno));
    return -1;
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
    fprintf(stderr, "weft-perf: --vs: socketpair: %s\n", strerror(errno));
    return -1;
  }
  g->fd = sv[0];
  fflush(stdout);
  fflush(stderr);
  pid_t me = getpid();
  g->pid = fork();
  if (g->pid < 0) {
    fprintf(stderr, "weft-perf: --vs: fork: %s\n", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    g->fd = -1;
    return -1;
  }
  if (g->pid == 0) group_main(s, g, sv[1], other, np, me);
  close(sv[1]);
  g->state = G_RUNNING;
  return 0;
}

/* A row of both libraries has arrived for the same point: one line of progress on a
 * terminal (the tables come at the end). */
static void progress(const struct perf_results* rs, const struct group* g) {
  if (g[0].rows != g[1].rows || !isatty(STDERR_FILENO)) return;
  const struct perf_result *a = NULL, *b = NULL;
  for (int i = rs->n - 1; i >= 0 && (!a || !b); i--) {
    if (!a && rs->r[i].lib == 0) a = &rs->r[i];
    if (!b && rs->r[i].lib == 1) b = &rs->r[i];
  }
  if (!a || !b) return;
  char label[96];
  double tr, br;
  perf_result_test_label(a, label, sizeof label);
  perf_half_ratio(&a->oop, &b->oop, &tr, &br);
  fprintf(stderr, "weft-perf --vs: %s %zu B: busbw A %.2f, B %.2f GB/s; time A/B %.2f\n", label,
          a->size, a->oop.busbw, b->oop.busbw, tr);
}

/* Reads what the group sends until it waits for a turn or is gone. */
static void serve(struct group* g, struct group* all, struct perf_results* rs) {
  while (g->state == G_RUNNING) {
    struct vs_hdr h;
    if (perf_read_all(g->fd, &h, sizeof h)) {
      g->state = G_GONE;
      break;
    }
    int ok = 0;
    if (h.type == VS_WAIT && h.len == 0) {
      g->state = G_WAITING;
      ok = 1;
    } else if (h.type == VS_HELLO && h.len == sizeof g->hello) {
      ok = perf_read_all(g->fd, &g->hello, sizeof g->hello) == 0;
      g->hello.label[sizeof g->hello.label - 1] = '\0';
      g->hello.path[sizeof g->hello.path - 1] = '\0';
      g->have_hello = ok;
    } else if (h.type == VS_ROW && h.len == sizeof(struct perf_result)) {
      struct perf_result r;
      ok = perf_read_all(g->fd, &r, sizeof r) == 0;
      if (ok) {
        r.lib = g->idx;
        perf_results_add(rs, &r);
        g->rows++;
        progress(rs, all);
      }
    }
    if (!ok) {
      fprintf(stderr, "weft-perf: --vs: library %c sent a malformed message; stopping it\n",
              g->idx ? 'B' : 'A');
      kill(g->pid, SIGKILL);
      g->state = G_GONE;
    }
  }
}

static int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return PERF_EXIT_FAIL;
}

static void print_capture(const struct group* g) {
  printf("# ======== %c = %s: %s ========\n", g->idx ? 'B' : 'A', g->label,
         g->have_hello  ? g->hello.path
         : g->requested ? g->requested
                        : "weft");
  if (!g->out) return;
  rewind(g->out);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, g->out)) > 0) fwrite(buf, 1, n, stdout);
  fflush(stdout);
}

/* JSON "summary": per library and collective, the mean busbw over all half rows and the
 * half rows with wrong elements, as each group's table footer says. */
static void json_summaries(struct perf_json* j, const struct perf_results* rs,
                           const struct group* g) {
  for (int lib = 0; lib < 2; lib++)
    for (int c = 0; c < PERF_NCOLLS; c++) {
      double sum = 0;
      int n = 0, oob = 0;
      for (int i = 0; i < rs->n; i++) {
        const struct perf_result* r = &rs->r[i];
        if (r->lib != lib || r->coll != c) continue;
        sum += r->oop.busbw + r->ip.busbw;
        n += 2;
        oob += (r->oop.reported && r->oop.wrong) + (r->ip.reported && r->ip.wrong);
      }
      if (n) perf_json_coll_summary(j, g[lib].label, perf_colls[c].name, sum / n, oob);
    }
}

static int write_json(struct perf_json* j, const struct perf_setup* s, const struct group* g,
                      const struct perf_results* rs, const struct perf_pairs* pairs, int np) {
  perf_json_describe_run(j, s, np, s->nlocal, s->be->name);
  for (int k = 0; k < 2; k++)
    perf_json_library(j, g[k].label, g[k].have_hello ? g[k].hello.path : "",
                      g[k].have_hello ? g[k].hello.version : 0);
  for (int lib = 0; lib < 2; lib++)
    for (int i = 0; i < rs->n; i++) {
      if (rs->r[i].lib != lib) continue;
      struct perf_row row;
      perf_result_row(&rs->r[i], g[lib].label, &row);
      perf_json_row(j, &row);
    }
  for (int i = 0; i < pairs->n; i++) {
    struct perf_row a, b;
    perf_result_row(pairs->a[i], g[0].label, &a);
    perf_result_row(pairs->b[i], g[1].label, &b);
    perf_json_compare(j, &a, &b);
  }
  json_summaries(j, rs, g);
  return perf_json_close(j);
}

int perf_vs_run(struct perf_setup* s, int np) {
  const struct perf_opts* o = s->o;
  struct group g[2] = {{.idx = 0, .requested = o->lib, .fd = -1},
                       {.idx = 1, .requested = o->vs, .fd = -1}};
  struct perf_results rs = {0};
  struct perf_json* json = NULL;
  int rc = PERF_EXIT_FAIL;
  if (o->json && !(json = perf_json_open(o->json, s->argc, s->argv))) {
    fprintf(stderr, "weft-perf: cannot write %s\n", o->json);
    return PERF_EXIT_USAGE;
  }
  printf("# weft-perf --vs: A = %s, B = %s\n", o->lib ? o->lib : "weft (beside this executable)",
         o->vs);
  printf("# Each library runs in processes of its own (%s, %d rank%s); they take turns, one\n",
         s->launcher, np * s->nlocal, np * s->nlocal == 1 ? "" : "s");
  printf("# size at a time (A B, B A, ...), so drift hits both alike. A's output, B's output\n");
  printf("# and the comparison follow when both are done.\n");
  perf_print_nvls(stdout, s);
  printf("#\n");
  fflush(stdout);

  if (group_start(s, &g[0], &g[1], np) || group_start(s, &g[1], &g[0], np)) {
    for (int k = 0; k < 2; k++)
      if (g[k].pid > 0) kill(g[k].pid, SIGKILL);
    goto reap;
  }
  /* Up to the first wait: library loaded, header printed. A library that cannot even start
   * ends the run before anything is measured. Then turns until both are gone. */
  serve(&g[0], g, &rs);
  serve(&g[1], g, &rs);
  for (int k = 0; k < 2; k++)
    if (g[k].state == G_GONE && g[1 - k].state == G_WAITING) {
      kill(g[1 - k].pid, SIGKILL);
      g[1 - k].killed = 1;
      g[1 - k].state = G_GONE;
    }
  for (int round = 0;; round++) {
    int any = 0;
    for (int k = 0; k < 2; k++) {
      struct group* x = &g[round % 2 ? 1 - k : k];
      if (x->state != G_WAITING) continue;
      char go = VS_GO;
      x->state = perf_write_all(x->fd, &go, 1) ? G_GONE : G_RUNNING;
      serve(x, g, &rs);
      any = 1;
    }
    if (!any) break;
  }
reap:
  for (int k = 0; k < 2; k++) {
    if (g[k].fd >= 0) close(g[k].fd);
    g[k].status = 1 << 8; /* exit code 1 when it never ran */
    if (g[k].pid > 0)
      while (waitpid(g[k].pid, &g[k].status, 0) < 0 && errno == EINTR) {
      }
    snprintf(g[k].label, sizeof g[k].label, "%s", g[k].have_hello ? g[k].hello.label : "?");
  }
  if (!strcmp(g[0].label, g[1].label)) /* weft against weft: tell them apart */
    snprintf(g[1].label + strlen(g[1].label), sizeof g[1].label - strlen(g[1].label), "#2");

  print_capture(&g[0]);
  print_capture(&g[1]);
  struct perf_pairs pairs;
  if (perf_pairs_make(&rs, &pairs)) {
    fprintf(stderr, "weft-perf: --vs: out of memory\n");
    memset(&pairs, 0, sizeof pairs);
  }
  printf("# ======== comparison ========\n");
  for (int k = 0; k < 2; k++) {
    char ver[32] = "?";
    if (g[k].have_hello) perf_nccl_version_text(g[k].hello.version, ver, sizeof ver);
    printf("# %c = %s: %s (version %s)\n", k ? 'B' : 'A', g[k].label,
           g[k].have_hello  ? g[k].hello.path
           : g[k].requested ? g[k].requested
                            : "weft",
           ver);
  }
  perf_compare_print(stdout, &pairs, g[0].label, g[1].label);

  /* The exit code: the first library's own failure; one stopped because of the other's
   * failure counts only when nothing else failed. */
  rc = PERF_EXIT_OK;
  for (int pass = 0; pass < 2 && rc == PERF_EXIT_OK; pass++)
    for (int k = 0; k < 2 && rc == PERF_EXIT_OK; k++)
      if (g[k].killed == pass) rc = exit_code(g[k].status);
  for (int k = 0; k < 2; k++)
    if (g[k].killed)
      fprintf(stderr, "weft-perf: --vs: library %c (%s) stopped: the other could not start\n",
              k ? 'B' : 'A', g[k].label);
    else if (exit_code(g[k].status) != PERF_EXIT_OK)
      fprintf(stderr, "weft-perf: --vs: library %c (%s) ended with exit code %d\n", k ? 'B' : 'A',
              g[k].label, exit_code(g[k].status));
  if (rs.dropped) fprintf(stderr, "weft-perf: --vs: out of memory: %d rows dropped\n", rs.dropped);
  if (o->plot) {
    char title[96];
    const char* labels[2] = {g[0].label, g[1].label};
    snprintf(title, sizeof title, "weft-perf: %s vs %s, %d ranks", g[0].label, g[1].label,
             np * s->nlocal);
    if (perf_plot_png(&rs, labels, o->plot, title) == 0) {
      printf("# plot: busbw and time per call against size written to %s\n#\n", o->plot);
    } else {
      fprintf(stderr, "weft-perf: cannot write the plot %s: %s\n", o->plot, strerror(errno));
      if (rc == PERF_EXIT_OK) rc = PERF_EXIT_FAIL;
    }
  }
  if (json) {
    if (write_json(json, s, g, &rs, &pairs, np)) {
      fprintf(stderr, "weft-perf: writing %s failed\n", o->json);
      if (rc == PERF_EXIT_OK) rc = PERF_EXIT_FAIL;
    }
    json = NULL;
  }
  fflush(stdout);
  perf_pairs_free(&pairs);
  for (int k = 0; k < 2; k++)
    if (g[k].out) fclose(g[k].out);
  perf_results_free(&rs);
  return rc;
}
