/* WEFT_COMM_ID_REQUIRE_SECRET=1 (issue 42): an NCCL_COMM_ID on a non-loopback address without
 * WEFT_COMM_SECRET is refused (ncclInvalidUsage, before any socket is opened); with a secret, or
 * on a loopback address, a one-rank communicator inits and its AllReduce copies seeded data.
 * Each case runs in a child (settings are read once a process). Skipped without a non-loopback
 * IPv4 address. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* In a child: init one rank on NCCL_COMM_ID=addr:port, secret or none; exit 0 when the result
 * is want (and, on success, an AllReduce of seeded data gives it back). */
static int run_case(const char* what, const char* addr, const char* secret, ncclResult_t want) {
  fflush(NULL);
  pid_t pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    alarm(30);
    char id[96];
    snprintf(id, sizeof id, "%s:%d", addr, test_free_port());
    setenv("NCCL_COMM_ID", id, 1);
    setenv("WEFT_COMM_ID_REQUIRE_SECRET", "1", 1);
    if (secret)
      setenv("WEFT_COMM_SECRET", secret, 1);
    else
      unsetenv("WEFT_COMM_SECRET");
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    ncclComm_t comm = NULL;
    if (r == ncclSuccess) r = ncclCommInitRank(&comm, 1, uid, 0);
    printf("%s (NCCL_COMM_ID=%s, %s): %s\n", what, id, secret ? "secret" : "no secret",
           ncclGetErrorString(r));
    if (r != want) _exit(1);
    if (r == ncclSuccess) {
      uint64_t st = test_seed(7);
      float s[64], d[64];
      for (int i = 0; i < 64; i++) s[i] = (float)(test_rand(&st) % 100);
      EXPECT_OK(ncclAllReduce(s, d, 64, ncclFloat, ncclSum, comm, NULL));
      for (int i = 0; i < 64; i++) EXPECT(d[i] == s[i]);
      EXPECT_OK(ncclCommDestroy(comm));
    }
    fflush(NULL);
    _exit(0);
  }
  int st = 0;
  EXPECT(waitpid(pid, &st, 0) == pid);
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  test_require_weft_lib();
  char addr[INET_ADDRSTRLEN] = "";
  struct ifaddrs *ifs, *i;
  EXPECT(getifaddrs(&ifs) == 0);
  for (i = ifs; i && !addr[0]; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    const struct sockaddr_in* a = (const struct sockaddr_in*)i->ifa_addr;
    if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
    inet_ntop(AF_INET, &a->sin_addr, addr, sizeof addr);
  }
  freeifaddrs(ifs);
  if (!addr[0]) {
    printf("SKIP: no non-loopback IPv4 address\n");
    return TEST_SKIP_RC;
  }
  int fails = 0;
  fails += run_case("non-loopback, no secret", addr, NULL, ncclInvalidUsage);
  fails += run_case("non-loopback, secret", addr, "launcher-made-19c2", ncclSuccess);
  fails += run_case("loopback, no secret", "127.0.0.1", NULL, ncclSuccess);
  return fails ? 1 : 0;
}
