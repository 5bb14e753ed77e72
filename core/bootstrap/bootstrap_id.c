/* The unique id: making one (and the root that serves it), building one from NCCL_COMM_ID, and
 * checking one handed in by the user. An id is a weft_bootstrap_id in the first bytes of the
 * 128-byte ncclUniqueId; every other byte is zero. */
#include <string.h>
#include <unistd.h>

#include "bootstrap/bootstrap_internal.h"
#include "util/check.h"
#include "util/log.h"
#include "util/param.h"

_Static_assert(sizeof(weft_bootstrap_id) <= sizeof(ncclUniqueId),
               "the bootstrap id must fit in an ncclUniqueId");

#define BS_MAX_IFS 16

static void id_encode(const weft_bootstrap_id* id, ncclUniqueId* out) {
  memset(out, 0, sizeof *out);
  memcpy(out->internal, id, sizeof *id);
}

/* Listen on addr and hand the socket to a new root thread. */
static ncclResult_t start_root(weft_bootstrap_id* id, const weft_sockaddr* addr) {
  int fd = -1;
  WEFT_CHECK(socket_listen(addr, &fd, &id->addr));
  ncclResult_t res;
  WEFT_CHECK_GOTO(socket_set_nonblocking(fd, 1), res, fail_close);
  WEFT_CHECK_GOTO(bs_root_start(id, fd), res, fail_close);
  return ncclSuccess;
fail_close:
  close(fd);
  return res;
}

ncclResult_t bootstrap_get_unique_id(ncclUniqueId* out) {
  WEFT_ARG_NONNULL("ncclGetUniqueId", out);
  char names[BS_MAX_IFS][IF_NAMESIZE];
  weft_sockaddr addrs[BS_MAX_IFS];
  int n = 0;
  WEFT_CHECK(socket_find_interfaces(names, addrs, BS_MAX_IFS, &n));
  weft_bootstrap_id id;
  memset(&id, 0, sizeof id);
  do {
    WEFT_CHECK(bs_random(&id.magic, sizeof id.magic));
  } while (id.magic == 0 || id.magic == WEFT_COMM_ID_MAGIC);
  WEFT_CHECK(bs_random(&id.secret, sizeof id.secret));
  WEFT_CHECK(bs_root_add_shared(&id, &addrs[0]));
  char a[WEFT_SOCKADDR_STRLEN];
  INFO(NCCL_BOOTSTRAP, "bootstrap: unique id root listening on %s (%s)",
       socket_addr_str(&id.addr, a, sizeof a), names[0]);
  id_encode(&id, out);
  return ncclSuccess;
}

/* Every rank derives the same secret from the same NCCL_COMM_ID text and WEFT_COMM_SECRET
 * (FNV-1a, then a splitmix64 finalizer so nearby strings give unrelated secrets). Without
 * WEFT_COMM_SECRET, anyone who knows host:port computes it too. */
static uint64_t secret_from_text(const char* text, const char* shared) {
  uint64_t h = 0xcbf29ce484222325ull;
  const char* salt = "weft-comm-id:";
  for (const char* p = salt; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  for (const char* p = text; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  h = (h ^ 0xffu) * 0x100000001b3ull; /* separator: "a:1"+"2" and "a:12"+"" differ */
  for (const char* p = shared; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

ncclResult_t bootstrap_id_from_env(int rank, ncclUniqueId* out) {
  WEFT_ARG_NONNULL("bootstrap_id_from_env", out);
  if (!param_is_set(WEFT_PARAM_COMM_ID) || *param_str(WEFT_PARAM_COMM_ID) == '\0') {
    WARN("bootstrap: NCCL_COMM_ID is not set");
    return ncclInvalidArgument;
  }
  const char* text = param_str(WEFT_PARAM_COMM_ID);
  weft_bootstrap_id id;
  memset(&id, 0, sizeof id);
  if (socket_parse_hostport(text, &id.addr) != ncclSuccess) {
    WARN("bootstrap: NCCL_COMM_ID='%s' is not a usable host:port", text);
    return ncclInvalidArgument;
  }
  if (socket_addr_port(&id.addr) == 0) {
    WARN("bootstrap: NCCL_COMM_ID='%s' needs a non-zero port", text);
    return ncclInvalidArgument;
  }
  id.magic = WEFT_COMM_ID_MAGIC;
  const char* shared = param_str(WEFT_PARAM_COMM_SECRET);
  if ((!shared || !*shared) && param_int(WEFT_PARAM_COMM_ID_REQUIRE_SECRET) &&
      !socket_addr_is_loopback(&id.addr)) {
    WARN("bootstrap: NCCL_COMM_ID='%s' is not a loopback address and WEFT_COMM_SECRET is not "
         "set: refused (WEFT_COMM_ID_REQUIRE_SECRET=1); give every rank the same secret",
         text);
    return ncclInvalidUsage;
  }
  if (!shared || !*shared) {
    shared = "";
    WARN_ONCE("bootstrap: the NCCL_COMM_ID rendezvous at %s is not authenticated: anyone who "
              "can reach that address can take a rank's place; have the launcher give every "
              "rank the same WEFT_COMM_SECRET", text);
  }
  id.secret = secret_from_text(text, shared);
  if (rank == 0) {
    weft_sockaddr want = id.addr;
    WEFT_CHECK(start_root(&id, &want));
    char a[WEFT_SOCKADDR_STRLEN];
    INFO(NCCL_BOOTSTRAP, "bootstrap: NCCL_COMM_ID root listening on %s",
         socket_addr_str(&id.addr, a, sizeof a));
  }
  id_encode(&id, out);
  return ncclSuccess;
}

ncclResult_t bootstrap_id_decode(const ncclUniqueId* in, weft_bootstrap_id* out) {
  WEFT_ARG_NONNULL("bootstrap_id_decode", in);
  weft_bootstrap_id id;
  memcpy(&id, in->internal, sizeof id);
  const char* bad = NULL;
  int fam = id.addr.sa.sa_family;
  if (id.magic == 0)
    bad = "magic is zero (an id that was never filled in?)";
  else if (fam != AF_INET && fam != AF_INET6)
    bad = "root address has an unknown family";
  else if (socket_addr_port(&id.addr) == 0)
    bad = "root address has port 0";
  for (size_t i = sizeof id; !bad && i < sizeof in->internal; i++)
    if (in->internal[i] != 0) bad = "bytes after the id are not zero";
  if (bad) {
    WARN("bootstrap: invalid unique id: %s", bad);
    return ncclInvalidArgument;
  }
  *out = id;
  return ncclSuccess;
}
