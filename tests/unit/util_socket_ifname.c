/* NCCL_SOCKET_IFNAME grammar and host:port parsing. */
#include <string.h>

#include "testutil.h"
#include "util/socket.h"

int main(void) {
  test_require_weft_lib();
  EXPECT(socket_ifname_match("eth", "eth0"));
  EXPECT(socket_ifname_match("ib,eth", "eth1"));
  EXPECT(!socket_ifname_match("ib,eth", "lo"));
  EXPECT(!socket_ifname_match("^eth", "eth0"));
  EXPECT(socket_ifname_match("^eth", "lo"));
  EXPECT(socket_ifname_match("=eth0", "eth0"));
  EXPECT(!socket_ifname_match("=eth0", "eth01"));
  EXPECT(!socket_ifname_match("^=eth0", "eth0"));
  EXPECT(socket_ifname_match("^=eth0", "eth01"));
  EXPECT(socket_ifname_match("eth0:1234", "eth0")); /* port suffix ignored */
  EXPECT(socket_ifname_match("", "anything"));

  weft_sockaddr a;
  char buf[WEFT_SOCKADDR_STRLEN];
  EXPECT_OK(socket_parse_hostport("127.0.0.1:4242", &a));
  EXPECT(a.sa.sa_family == AF_INET && socket_addr_port(&a) == 4242);
  EXPECT(strcmp(socket_addr_str(&a, buf, sizeof buf), "127.0.0.1:4242") == 0);
  EXPECT_OK(socket_parse_hostport("[::1]:80", &a));
  EXPECT(a.sa.sa_family == AF_INET6 && socket_addr_port(&a) == 80);
  EXPECT(strcmp(socket_addr_str(&a, buf, sizeof buf), "[::1]:80") == 0);
  EXPECT_OK(socket_parse_hostport("localhost:1", &a));
  EXPECT_RES(socket_parse_hostport("127.0.0.1", &a), ncclInvalidArgument);
  EXPECT_RES(socket_parse_hostport("127.0.0.1:99999", &a), ncclInvalidArgument);
  EXPECT_RES(socket_parse_hostport("127.0.0.1:12x", &a), ncclInvalidArgument);
  EXPECT_RES(socket_parse_hostport("[::1:80", &a), ncclInvalidArgument);
  EXPECT_RES(socket_parse_hostport(":80", &a), ncclInvalidArgument);
  EXPECT_RES(socket_parse_hostport("", &a), ncclInvalidArgument);

  char names[8][IF_NAMESIZE];
  weft_sockaddr addrs[8];
  int n = 0;
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  EXPECT_OK(socket_find_interfaces(names, addrs, 8, &n));
  EXPECT(n >= 1 && strncmp(names[0], "lo", 2) == 0);
  setenv("NCCL_SOCKET_IFNAME", "=no-such-interface", 1);
  EXPECT_RES(socket_find_interfaces(names, addrs, 8, &n), ncclSystemError);
  return 0;
}
