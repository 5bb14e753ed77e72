/* The reload test: a communicator's plugin is dlclose'd when the last communicator using it is
 * destroyed (NCCL 2.28 and weft do so) and loaded and initialised again for the next one. The
 * test must see a first load, so it runs in a fresh process: the test child execs this program
 * with a hidden command (NET_RELOAD_CHILD_CMD), whose process loads, inits, finalizes and
 * dlcloses the plugin, then loads and inits it again, and prints what happened. A library that
 * stays loaded after dlclose (RTLD_NODELETE, or C++ unique symbols) keeps its state from the
 * first load; the second init must still work, and the verdict says which case it was. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net_suite.h"
#include "net_tests.h"

/* ---- the fresh process ---- */

/* One load: dlopen, the table, init, devices, finalize. CONF_PASS, or the reason recorded. */
static conf_result load_once(net_ctx* c, int v, void** dl_out, int* ndev) {
  void* dl = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) return conf_fail("dlopen failed: %s", dlerror());
  *dl_out = dl;
  c->raw[v] = dlsym(dl, net_shim_symbol(v));
  if (c->raw[v] == NULL) return conf_fail("%s is not exported", net_shim_symbol(v));
  nt_plugin p;
  CONF_TRY(nt_init_table(&p, v));
  NT_CALL_SETUP("devices", p.api->devices(ndev));
  return nt_close(&p);
}

int net_reload_child_main(int argc, char** argv) {
  if (argc < 2) return 2;
  static net_ctx ctx;
  ctx.path = argv[0];
  ctx.version = atoi(argv[1]);
  ctx.call_limit_s = 1.0;
  ctx.wait_s = 10.0;
  nt_ctx = &ctx;
  setvbuf(stdout, NULL, _IOLBF, 0);
  conf_log_to(stdout, "LOG ");
  if (ctx.version < WEFT_NET_MIN_VERSION || ctx.version > WEFT_NET_MAX_VERSION) return 2;

  void* dl = NULL;
  int ndev1 = -1, ndev2 = -1;
  if (load_once(&ctx, ctx.version, &dl, &ndev1) != CONF_PASS) {
    printf("RESULT inconclusive the first load did not get through init: %s\n", conf_reason());
    return 0;
  }
  if (dlclose(dl) != 0) {
    printf("RESULT fail dlclose failed: %s\n", dlerror());
    return 0;
  }
  void* still = dlopen(ctx.path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (still) dlclose(still);
  const char* how = still ? "the library stayed loaded after dlclose (RTLD_NODELETE or C++ unique "
                            "symbols), so its state from the first load carried over"
                          : "the library was unloaded and loaded afresh";
  conf_clear_reason();
  if (load_once(&ctx, ctx.version, &dl, &ndev2) != CONF_PASS) {
    printf("RESULT fail after finalize, dlclose and a new dlopen: %s (%s)\n", conf_reason(), how);
    return 0;
  }
  if (ndev2 != ndev1) {
    printf("RESULT fail devices reported %d after the reload, %d on the first load (%s)\n", ndev2,
           ndev1, how);
    return 0;
  }
  printf("RESULT pass %s\n", how);
  return 0;
}

/* ---- the test, in the runner's child ---- */

conf_result net_t_reload(void* arg) {
  (void)arg;
  char ver[16];
  snprintf(ver, sizeof ver, "%d", nt_ctx->version);
  int fds[2];
  if (pipe(fds) != 0) return conf_inconclusive("pipe failed: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return conf_inconclusive("fork failed: %s", strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    if (conf_result_fd >= 0) close(conf_result_fd);
    dup2(fds[1], 1);
    close(fds[1]);
    char* args[] = {"weft-conformance", NET_RELOAD_CHILD_CMD, (char*)nt_ctx->path, ver, NULL};
    execv("/proc/self/exe", args);
    printf("RESULT inconclusive cannot run a fresh weft-conformance: %s\n", strerror(errno));
    _exit(0);
  }
  close(fds[1]);
  conf_stage_set("the reload process (init after dlclose)");
  FILE* in = fdopen(fds[0], "r");
  char line[1400];
  char result[1400] = "";
  while (in && fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "LOG ", 4) == 0)
      conf_log_line(line + 4);
    else if (strncmp(line, "RESULT ", 7) == 0)
      snprintf(result, sizeof result, "%s", line + 7);
  }
  if (in) fclose(in);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    char sig[96];
    return conf_fail("the reload process was killed by %s (%s)",
                     conf_signal_name(WTERMSIG(status), sig, sizeof sig),
                     result[0] ? result : "before it reported");
  }
  if (strncmp(result, "pass ", 5) == 0) {
    conf_note("%s", result + 5);
    return CONF_PASS;
  }
  if (strncmp(result, "fail ", 5) == 0) return conf_fail("%s", result + 5);
  if (strncmp(result, "inconclusive ", 13) == 0) return conf_inconclusive("%s", result + 13);
  return conf_inconclusive("the reload process exited with status %d without a result",
                           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
