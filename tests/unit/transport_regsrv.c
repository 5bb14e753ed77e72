/* transport/transport_regsrv: the registration service against a fake importer, over real
 * abstract SOCK_SEQPACKET sockets in this one process (requester on the main thread, server on
 * its own thread).
 *
 * The fake's import() checks what reached it (the descriptor as the requester sent it; for the
 * cuMem kind, that the descriptor it got is the very file the requester passed: same st_dev and
 * st_ino, and the requester's random bytes at the buffer's offset), returns the address
 * 0x100000 * (its call number) + offset and a cookie (its record of the call); release() checks
 * the cookie and the descriptor it comes with and marks the record released. Covered: IMPORT of
 * both kinds (address and id, the server's copy of the descriptor closed afterwards), refusals
 * (no descriptor, wrong key, buffer outside its allocation incl. a wrapping offset + size, size
 * 0, the importer's own refusal with its reason) with the importer not called and no descriptor
 * leaked, RELEASE (right cookie, count down; unknown, repeated and another connection's ids
 * refused), a closing connection releasing its imports (also one that dies with a reply unread:
 * nothing else of this process closed), garbage messages (short, oversized, with one or two
 * descriptors, empty with one: none kept), a reply that comes after the requester gave up
 * (skipped; the next request gets its own reply; the import it made undone by the CANCEL the
 * requester sent, a CANCEL of a refused one changing nothing), connect timing out and waiting
 * for a late server, a second server on the same name refused (its WARN in the output is expected), and
 * regsrv_stop releasing what is still held and freeing the name. Random descriptors, names and
 * keys from a seed printed with every result; WEFT_TEST_SEED=n repeats one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "transport/transport_regsrv.h"
#include "util/clock.h"

static unsigned long long seed;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "FAIL: %s:%d: %s (seed %llu)\n", __FILE__, __LINE__, #cond, seed); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)
#define CHECK_MSG(cond, ...)                                                             \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "FAIL: %s:%d: %s (seed %llu): ", __FILE__, __LINE__, #cond, seed); \
      fprintf(stderr, __VA_ARGS__);                                                      \
      fputc('\n', stderr);                                                               \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}
static void rnd_bytes(void* p, size_t n) {
  unsigned char* b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)rnd();
}

/* ---- the fake importer ---- */

#define MAXREC 128
#define ADDR_STRIDE 0x100000ull

typedef struct {
  int used, released;
  uint64_t addr;
  weft_regsrv_desc desc;
} record;

static struct {
  pthread_mutex_t mu;
  int ncalls;    /* import() calls, refused ones included */
  int nreleases; /* release() calls */
  record rec[MAXREC + 1]; /* by call number, from 1 */
  /* What the next import() must see (set by the main thread before each request). */
  weft_regsrv_desc want;
  int want_fd;            /* 1: a descriptor of want_st, holding want_bytes; 0: fd == -1 */
  struct stat want_st;
  const unsigned char* want_bytes; /* the file's whole contents (want.alloc bytes) */
  int got_fd;             /* the descriptor the last import() got */
  int fail;               /* refuse the next import() with fail_why */
  char fail_why[64];
  int delay_ms;           /* sleep this long in the next import() */
  char err[512];          /* the first thing the server thread's callbacks found wrong */
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void fake_err(const char* what) { /* under F.mu */
  if (!F.err[0]) snprintf(F.err, sizeof F.err, "%s", what);
}

static int fake_import(void* ctx, const weft_regsrv_desc* d, int fd, uint64_t* addr,
                       void** mapping, char* why, size_t whylen) {
  if (ctx != &F) {
    pthread_mutex_lock(&F.mu);
    fake_err("import: wrong ctx");
    pthread_mutex_unlock(&F.mu);
  }
  pthread_mutex_lock(&F.mu);
  int delay = F.delay_ms;
  F.delay_ms = 0;
  pthread_mutex_unlock(&F.mu);
  if (delay > 0) usleep((useconds_t)delay * 1000);

  pthread_mutex_lock(&F.mu);
  int n = ++F.ncalls;
  F.got_fd = fd;
  if (n > MAXREC) fake_err("import: too many calls for the fake");
  if (memcmp(d, &F.want, sizeof *d) != 0) fake_err("import: the descriptor is not what was sent");
  if (F.want_fd) {
    struct stat st;
    if (fd < 0) {
      fake_err("import: no descriptor came with the cuMem kind");
    } else if (fstat(fd, &st) != 0 || st.st_dev != F.want_st.st_dev ||
               st.st_ino != F.want_st.st_ino) {
      fake_err("import: the descriptor is not the requester's file");
    } else {
      int fl = fcntl(fd, F_GETFD);
      if (fl < 0 || !(fl & FD_CLOEXEC)) fake_err("import: the received descriptor is not CLOEXEC");
      size_t len = d->size < 4096 ? (size_t)d->size : 4096;
      unsigned char buf[4096];
      if (pread(fd, buf, len, (off_t)d->offset) != (ssize_t)len ||
          memcmp(buf, F.want_bytes + d->offset, len) != 0)
        fake_err("import: the file's bytes at the offset are not the requester's");
    }
  } else if (fd != -1) {
    fake_err("import: a descriptor came though none was sent");
  }
  if (F.fail) {
    F.fail = 0;
    snprintf(why, whylen, "%s", F.fail_why);
    pthread_mutex_unlock(&F.mu);
    return 0;
  }
  if (n <= MAXREC) {
    record* r = &F.rec[n];
    r->used = 1;
    r->addr = ADDR_STRIDE * (uint64_t)n + d->offset;
    r->desc = *d;
    *addr = r->addr;
    *mapping = r;
  }
  pthread_mutex_unlock(&F.mu);
  return 1;
}

static void fake_release(void* ctx, const weft_regsrv_desc* d, void* mapping) {
  pthread_mutex_lock(&F.mu);
  F.nreleases++;
  record* r = mapping;
  if (ctx != &F) fake_err("release: wrong ctx");
  if (r < &F.rec[1] || r > &F.rec[MAXREC]) {
    fake_err("release: a cookie the fake never gave");
  } else if (!r->used) {
    fake_err("release: the cookie of a refused import");
  } else if (r->released) {
    fake_err("release: the same import released twice");
  } else {
    if (memcmp(d, &r->desc, sizeof *d) != 0) fake_err("release: not the import's descriptor");
    r->released = 1;
  }
  pthread_mutex_unlock(&F.mu);
}

static const weft_regsrv_ops OPS = {fake_import, fake_release, &F};

/* Fail if a callback found something wrong. */
#define FAKE_OK()                                                                 \
  do {                                                                            \
    pthread_mutex_lock(&F.mu);                                                    \
    char e_[sizeof F.err];                                                        \
    memcpy(e_, F.err, sizeof e_);                                                 \
    pthread_mutex_unlock(&F.mu);                                                  \
    CHECK_MSG(e_[0] == '\0', "the fake importer found: %s", e_);                  \
  } while (0)

static int fake_get(int* field) {
  pthread_mutex_lock(&F.mu);
  int v = *field;
  pthread_mutex_unlock(&F.mu);
  return v;
}
static int rec_released(int n) {
  pthread_mutex_lock(&F.mu);
  int v = F.rec[n].released;
  pthread_mutex_unlock(&F.mu);
  return v;
}

static void expect_next(const weft_regsrv_desc* d, const unsigned char* bytes,
                        const struct stat* st) {
  pthread_mutex_lock(&F.mu);
  F.want = *d;
  F.want_fd = bytes != NULL;
  F.want_bytes = bytes;
  if (st) F.want_st = *st;
  F.got_fd = -2;
  pthread_mutex_unlock(&F.mu);
}

/* ---- helpers ---- */

static int count_fds(void) {
  DIR* dir = opendir("/proc/self/fd");
  CHECK(dir != NULL);
  int n = 0;
  for (struct dirent* e; (e = readdir(dir));)
    if (e->d_name[0] != '.') n++;
  closedir(dir);
  return n;
}

/* How many descriptors of this process refer to the file st describes. */
static int count_refs(const struct stat* st) {
  DIR* dir = opendir("/proc/self/fd");
  CHECK(dir != NULL);
  int n = 0;
  for (struct dirent* e; (e = readdir(dir));) {
    struct stat o;
    if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(dir) && fstat(atoi(e->d_name), &o) == 0 &&
        o.st_dev == st->st_dev && o.st_ino == st->st_ino)
      n++;
  }
  closedir(dir);
  return n;
}

static int fd_closed(int fd) { return fcntl(fd, F_GETFD) == -1 && errno == EBADF; }

/* A file of alloc random bytes (*bytes: its contents), its fd. */
static int make_file(size_t alloc, unsigned char** bytes, struct stat* st) {
  int fd = memfd_create("weft-regsrv-test", MFD_CLOEXEC);
  if (fd < 0) {
    char path[] = "/tmp/weft_regsrv_XXXXXX";
    fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
  }
  *bytes = malloc(alloc);
  CHECK(*bytes != NULL);
  rnd_bytes(*bytes, alloc);
  CHECK(write(fd, *bytes, alloc) == (ssize_t)alloc);
  CHECK(fstat(fd, st) == 0);
  return fd;
}

static weft_regsrv_desc ipc_desc(void) {
  weft_regsrv_desc d;
  memset(&d, 0, sizeof d);
  d.how = WEFT_REGSRV_IPC;
  d.offset = rnd() % (1ull << 30);
  d.size = 1 + rnd() % (1ull << 28);
  d.alloc = rnd(); /* ignored for IPC */
  rnd_bytes(d.handle, sizeof d.handle);
  return d;
}

static weft_regsrv_desc fd_desc(size_t alloc) {
  weft_regsrv_desc d;
  memset(&d, 0, sizeof d);
  d.how = WEFT_REGSRV_FD;
  d.alloc = alloc;
  d.offset = rnd() % (alloc / 2);
  d.size = 1 + rnd() % (alloc - d.offset); /* offset + size <= alloc */
  rnd_bytes(d.handle, sizeof d.handle);
  return d;
}

#define TMO 5000 /* ms: every request that should be answered */

/* IMPORT that must succeed: checks the address the fake computed and returns the id. */
static uint64_t import_ok(int conn, uint64_t key, const weft_regsrv_desc* d, int fd,
                          const unsigned char* bytes, const struct stat* st, int* callno) {
  expect_next(d, bytes, st);
  int before = fake_get(&F.ncalls);
  uint64_t addr = 0, id = 0;
  char why[256] = "";
  int ok = regsrv_import(conn, key, d, fd, TMO, &addr, &id, why, sizeof why);
  CHECK_MSG(ok == 1, "import refused: %s", why);
  FAKE_OK();
  int after = fake_get(&F.ncalls);
  CHECK(after == before + 1);
  CHECK_MSG(addr == ADDR_STRIDE * (uint64_t)after + d->offset, "addr 0x%llx, want 0x%llx",
            (unsigned long long)addr,
            (unsigned long long)(ADDR_STRIDE * (uint64_t)after + d->offset));
  CHECK(id != 0);
  if (callno) *callno = after;
  return id;
}

/* IMPORT that must be refused with why containing want (NULL: any reason); called says
 * whether the importer must have been called. No descriptor may stay open in this process. */
static void import_refused(int conn, uint64_t key, const weft_regsrv_desc* d, int fd,
                           const char* want, int called, const unsigned char* bytes,
                           const struct stat* st) {
  expect_next(d, bytes, st);
  int before = fake_get(&F.ncalls), fds = count_fds();
  uint64_t addr = 0xdead, id = 0xbeef;
  char why[256] = "";
  int ok = regsrv_import(conn, key, d, fd, TMO, &addr, &id, why, sizeof why);
  CHECK_MSG(ok == 0, "accepted (addr 0x%llx id %llu), expected a refusal naming \"%s\"",
            (unsigned long long)addr, (unsigned long long)id, want ? want : "");
  CHECK(why[0] != '\0');
  CHECK_MSG(!want || strstr(why, want), "why \"%s\" does not mention \"%s\"", why, want);
  CHECK_MSG(strstr(why, "refused") != NULL, "why \"%s\": not a refusal by the service", why);
  CHECK(addr == 0xdead && id == 0xbeef); /* untouched on refusal */
  FAKE_OK();
  CHECK(fake_get(&F.ncalls) == before + (called ? 1 : 0));
  CHECK_MSG(count_fds() == fds, "descriptors open: %d before, %d after", fds, count_fds());
}

/* Send len bytes of data with n descriptors riding along as one SCM_RIGHTS header. */
static ssize_t send_fds(int conn, const void* data, size_t len, const int* fds, int n) {
  char cbuf[CMSG_SPACE(2 * sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec iov = {(void*)data, len};
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = cbuf;
  m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
  struct cmsghdr* h = CMSG_FIRSTHDR(&m);
  h->cmsg_level = SOL_SOCKET;
  h->cmsg_type = SCM_RIGHTS;
  h->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
  memcpy(CMSG_DATA(h), fds, (size_t)n * sizeof(int));
  return sendmsg(conn, &m, MSG_NOSIGNAL);
}

static int wait_imports(weft_regsrv* s, int want, int ms) {
  uint64_t end = clock_ms() + (uint64_t)ms;
  while (regsrv_imports(s) != want && clock_ms() < end) usleep(1000);
  return regsrv_imports(s) == want;
}

/* Wait for conn to have something (a reply or its close); recv it: its size, 0 closed. */
static ssize_t recv_any(int conn, void* buf, size_t len) {
  struct pollfd p = {conn, POLLIN, 0};
  CHECK(poll(&p, 1, TMO) == 1);
  return recv(conn, buf, len, MSG_DONTWAIT);
}

static uint64_t proc_id;
static void name_of(char name[WEFT_REGSRV_NAME_MAX], size_t* len, uint64_t comm, int rank) {
  regsrv_name(name, len, proc_id, comm, rank);
  CHECK(name[0] == '\0' && *len > 1 && *len <= WEFT_REGSRV_NAME_MAX);
}

typedef struct {
  const char* name;
  size_t len;
  uint64_t key;
  int delay_ms;
  weft_regsrv* s;
  ncclResult_t res;
} late_start;

static void* start_late(void* arg) {
  late_start* l = arg;
  usleep((useconds_t)l->delay_ms * 1000);
  l->res = regsrv_start(l->name, l->len, l->key, 1, &OPS, &l->s);
  return NULL;
}

int main(void) {
  test_require_weft_lib();
  const char* env_seed = getenv("WEFT_TEST_SEED");
  seed = env_seed && *env_seed ? strtoull(env_seed, NULL, 0)
                               : (unsigned long long)time(NULL) * 1000003ull ^
                                     (unsigned long long)getpid() << 20 ^ clock_ns();
  rng_state = seed | 1;
  proc_id = (uint64_t)getpid() << 32 ^ rnd(); /* parallel runs, even of one seed, apart */
  uint64_t comm = rnd(), key = rnd(), badkey = key ^ (1ull << (rnd() % 64));
  char name[WEFT_REGSRV_NAME_MAX], why[256];
  size_t len;
  name_of(name, &len, comm, 0);
  {
    char other[WEFT_REGSRV_NAME_MAX];
    size_t olen;
    name_of(other, &olen, comm, 1);
    CHECK(olen != len || memcmp(other, name, len) != 0); /* ranks get names of their own */
  }

  weft_regsrv* s = NULL;
  CHECK(regsrv_start(name, len, key, 0, &OPS, &s) == ncclSuccess && s != NULL);
  CHECK(regsrv_imports(s) == 0);
  {
    weft_regsrv* dup = NULL;
    CHECK(regsrv_start(name, len, key, 0, &OPS, &dup) != ncclSuccess); /* name in use */
  }

  int c = regsrv_connect(name, len, TMO, why, sizeof why);
  CHECK_MSG(c >= 0, "connect: %s", why);

  /* 1. IMPORT of the IPC kind: address as computed, handle and desc intact (the fake checks),
   * no descriptor given to the importer. */
  weft_regsrv_desc d1 = ipc_desc();
  int n1;
  uint64_t id1 = import_ok(c, key, &d1, -1, NULL, NULL, &n1);
  CHECK(fake_get(&F.got_fd) == -1);
  CHECK(regsrv_imports(s) == 1);

  /* 2. IMPORT of the cuMem kind with its descriptor: the importer got this very file (the fake
   * checks st_dev/st_ino and the bytes at the offset); the server closed its copy; ours is open. */
  const size_t alloc = 1u << 16;
  unsigned char* bytes;
  struct stat st;
  int mfd = make_file(alloc, &bytes, &st);
  weft_regsrv_desc d2 = fd_desc(alloc);
  int fds = count_fds(), n2;
  uint64_t id2 = import_ok(c, key, &d2, mfd, bytes, &st, &n2);
  int got = fake_get(&F.got_fd);
  CHECK(got >= 0 && got != mfd);
  CHECK_MSG(fd_closed(got), "the server kept its copy of the descriptor (%d)", got);
  CHECK(count_fds() == fds);
  CHECK(fcntl(mfd, F_GETFD) >= 0);
  CHECK(id2 != id1);
  CHECK(regsrv_imports(s) == 2);
  /* The whole allocation, offset 0, is fine too. */
  weft_regsrv_desc d2b = d2;
  d2b.offset = 0;
  d2b.size = alloc;
  int n2b;
  uint64_t id2b = import_ok(c, key, &d2b, mfd, bytes, &st, &n2b);
  CHECK(id2b != id1 && id2b != id2);
  CHECK(regsrv_imports(s) == 3);

  /* 3. The cuMem kind without its descriptor: refused before the importer. */
  import_refused(c, key, &d2, -1, "descriptor", 0, NULL, NULL);
  /* 4. Another communicator's key: refused, for either kind, the descriptor not leaked. */
  import_refused(c, badkey, &d1, -1, "communicator", 0, NULL, NULL);
  import_refused(c, badkey, &d2, mfd, "communicator", 0, bytes, &st);
  /* 5. Buffers outside their allocation, and empty ones. */
  {
    weft_regsrv_desc b = d2;
    b.offset = alloc - 8;
    b.size = 9; /* one byte past the end */
    import_refused(c, key, &b, mfd, "allocation", 0, bytes, &st);
    b.offset = alloc + 1;
    b.size = 1; /* starts past the end */
    import_refused(c, key, &b, mfd, "allocation", 0, bytes, &st);
    b.offset = 8;
    b.size = UINT64_MAX - 4; /* offset + size wraps to 3 */
    import_refused(c, key, &b, mfd, "allocation", 0, bytes, &st);
    b.offset = 0;
    b.size = 0;
    import_refused(c, key, &b, mfd, NULL, 0, bytes, &st);
    weft_regsrv_desc e = d1;
    e.size = 0;
    import_refused(c, key, &e, -1, NULL, 0, NULL, NULL);
    e = d1;
    e.how = 7; /* neither kind */
    import_refused(c, key, &e, -1, NULL, 0, NULL, NULL);
  }
  /* 6. The importer's own refusal reaches the requester with its reason; the descriptor that
   * came with it is closed; nothing is held. */
  pthread_mutex_lock(&F.mu);
  snprintf(F.fail_why, sizeof F.fail_why, "fake cannot map it (%llu)",
           (unsigned long long)(rnd() % 100000));
  F.fail = 1;
  pthread_mutex_unlock(&F.mu);
  import_refused(c, key, &d2, mfd, F.fail_why, 1, bytes, &st);
  CHECK(fake_get(&F.nreleases) == 0);
  CHECK(regsrv_imports(s) == 3);

  /* 7. RELEASE: the right cookie, the count down; unknown, repeated and wrong-key refused. */
  CHECK(regsrv_release(c, badkey, id1, TMO, why, sizeof why) == 0 && strstr(why, "communicator"));
  CHECK(regsrv_imports(s) == 3 && fake_get(&F.nreleases) == 0);
  CHECK_MSG(regsrv_release(c, key, id1, TMO, why, sizeof why) == 1, "release: %s", why);
  FAKE_OK();
  CHECK(fake_get(&F.nreleases) == 1 && rec_released(n1) && !rec_released(n2) &&
        !rec_released(n2b));
  CHECK(regsrv_imports(s) == 2);
  why[0] = '\0';
  CHECK(regsrv_release(c, key, id1, TMO, why, sizeof why) == 0 && why[0]); /* again */
  why[0] = '\0';
  CHECK(regsrv_release(c, key, id1 + id2 + id2b + 1000, TMO, why, sizeof why) == 0 && why[0]);
  CHECK(strstr(why, "refused") != NULL);
  CHECK(fake_get(&F.nreleases) == 1 && regsrv_imports(s) == 2);
  /* Another connection cannot release this one's import. */
  int c2 = regsrv_connect(name, len, TMO, why, sizeof why);
  CHECK_MSG(c2 >= 0, "connect: %s", why);
  CHECK(regsrv_release(c2, key, id2, TMO, why, sizeof why) == 0);
  CHECK(fake_get(&F.nreleases) == 1 && regsrv_imports(s) == 2);
  /* A release sent without waiting (timeout 0, as weft deregisters) takes effect, and its
   * answer does not reach the next request on that connection: an import then a synchronous
   * release of it both get their own replies. */
  {
    uint64_t idc = import_ok(c2, key, &d1, -1, NULL, NULL, NULL);
    CHECK(regsrv_imports(s) == 3);
    CHECK_MSG(regsrv_release(c2, key, idc, 0, why, sizeof why) == 1, "release, unwaited: %s",
              why);
    CHECK_MSG(wait_imports(s, 2, 5000), "imports %d after an unwaited release, want 2",
              regsrv_imports(s));
    uint64_t idd = import_ok(c2, key, &d1, -1, NULL, NULL, NULL);
    CHECK(idd != idc && regsrv_imports(s) == 3);
    /* Many unwaited releases (of no import: each answered with a refusal) must not fill the
     * service's side of the connection with unread answers: it would end the connection and
     * release idd with it. */
    for (int i = 0; i < 5000; i++)
      CHECK_MSG(regsrv_release(c2, key, idd + 100000 + (uint64_t)i, 0, why, sizeof why) == 1,
                "unwaited release %d: %s", i, why);
    usleep(100000);
    CHECK_MSG(regsrv_imports(s) == 3, "imports %d after 5000 unwaited releases, want 3",
              regsrv_imports(s));
    CHECK_MSG(regsrv_release(c2, key, idd, TMO, why, sizeof why) == 1, "release: %s", why);
    CHECK(regsrv_imports(s) == 2);
    CHECK(fake_get(&F.nreleases) == 3);
  }

  /* A reply that comes after the requester gave up is skipped: the next request on the
   * connection gets its own. The late import succeeded, and the CANCEL the requester sent when
   * it gave up has the server undo it (served right after it, before the next request). */
  {
    pthread_mutex_lock(&F.mu);
    F.delay_ms = 1000;
    pthread_mutex_unlock(&F.mu);
    weft_regsrv_desc dl = ipc_desc();
    expect_next(&dl, NULL, NULL);
    uint64_t addr = 0, id = 0, t0 = clock_ms();
    why[0] = '\0';
    CHECK(regsrv_import(c2, key, &dl, -1, 100, &addr, &id, why, sizeof why) == 0);
    CHECK_MSG(why[0] && clock_ms() - t0 < 900, "why \"%s\" after %llu ms", why,
              (unsigned long long)(clock_ms() - t0));
    /* The server is still in the late import: this request waits behind it. */
    weft_regsrv_desc dn = ipc_desc();
    int late = fake_get(&F.ncalls) + 1;
    uint64_t late_addr = ADDR_STRIDE * (uint64_t)late + dl.offset;
    uint64_t t1 = clock_ms();
    /* expect_next would race with the late import still checking dl: wait for it first. */
    while (fake_get(&F.ncalls) < late && clock_ms() - t1 < (uint64_t)TMO) usleep(1000);
    CHECK(fake_get(&F.ncalls) == late);
    FAKE_OK();
    int nn;
    import_ok(c2, key, &dn, -1, NULL, NULL, &nn);
    CHECK(nn == late + 1);
    CHECK(ADDR_STRIDE * (uint64_t)nn + dn.offset != late_addr);
    CHECK_MSG(rec_released(late) && regsrv_imports(s) == 3 && fake_get(&F.nreleases) == 4,
              "after a timed-out import: late import released %d, imports %d, releases %d",
              rec_released(late), regsrv_imports(s), fake_get(&F.nreleases));
    /* A CANCEL names a request: one of no import (refused, or unknown) changes nothing. */
    weft_regsrv_desc dr = ipc_desc();
    pthread_mutex_lock(&F.mu);
    F.delay_ms = 300;
    F.fail = 1;
    snprintf(F.fail_why, sizeof F.fail_why, "fake refuses the slow one");
    pthread_mutex_unlock(&F.mu);
    expect_next(&dr, NULL, NULL);
    int refused_call = fake_get(&F.ncalls) + 1;
    CHECK(regsrv_import(c2, key, &dr, -1, 50, &addr, &id, why, sizeof why) == 0);
    t1 = clock_ms();
    while (fake_get(&F.ncalls) < refused_call && clock_ms() - t1 < (uint64_t)TMO) usleep(1000);
    FAKE_OK();
    weft_regsrv_desc dm = ipc_desc();
    int nm;
    uint64_t idm = import_ok(c2, key, &dm, -1, NULL, NULL, &nm); /* after the CANCEL's refusal */
    CHECK(regsrv_imports(s) == 4 && fake_get(&F.nreleases) == 4 && !rec_released(nn));
    CHECK_MSG(regsrv_release(c2, key, idm, TMO, why, sizeof why) == 1, "release: %s", why);
    CHECK(rec_released(nm) && regsrv_imports(s) == 3);
    /* 8. Closing a connection releases what it imported (dn's). */
    close(c2);
    CHECK_MSG(wait_imports(s, 2, 5000), "imports %d after the close, want 2", regsrv_imports(s));
    FAKE_OK();
    CHECK(rec_released(late) && rec_released(nn) && fake_get(&F.nreleases) == 6);
  }
  /* 8. A connection with two imports closes: both released, with their cookies; the first
   * connection's are untouched. */
  {
    int c3 = regsrv_connect(name, len, TMO, why, sizeof why);
    CHECK_MSG(c3 >= 0, "connect: %s", why);
    weft_regsrv_desc a = ipc_desc(), b = fd_desc(alloc);
    int na, nb;
    import_ok(c3, key, &a, -1, NULL, NULL, &na);
    import_ok(c3, key, &b, mfd, bytes, &st, &nb);
    CHECK(regsrv_imports(s) == 4);
    int rel = fake_get(&F.nreleases);
    close(c3);
    CHECK_MSG(wait_imports(s, 2, 5000), "imports %d after the close, want 2", regsrv_imports(s));
    FAKE_OK();
    CHECK(rec_released(na) && rec_released(nb) && fake_get(&F.nreleases) == rel + 2);
    CHECK(!rec_released(n2) && !rec_released(n2b));
  }
  /* The same when the peer dies with a reply it never read. */
  {
    int c4 = regsrv_connect(name, len, TMO, why, sizeof why);
    CHECK_MSG(c4 >= 0, "connect: %s", why);
    weft_regsrv_desc a = ipc_desc();
    int na;
    import_ok(c4, key, &a, -1, NULL, NULL, &na);
    CHECK(send(c4, "junk", 4, MSG_NOSIGNAL) == 4);
    struct pollfd p = {c4, POLLIN, 0};
    CHECK(poll(&p, 1, TMO) == 1); /* the refusal is there, unread */
    int rel = fake_get(&F.nreleases);
    close(c4);
    CHECK_MSG(wait_imports(s, 2, 5000), "imports %d after the close, want 2", regsrv_imports(s));
    FAKE_OK();
    CHECK(rec_released(na) && fake_get(&F.nreleases) == rel + 1);
  }
  /* ... and such a death closes nothing but the connection: not the descriptor number that an
   * earlier cuMem import came with (closed by the server then, and free to be reused since). */
  {
    weft_regsrv_desc a = fd_desc(alloc);
    uint64_t ida = import_ok(c, key, &a, mfd, bytes, &st, NULL);
    int was = fake_get(&F.got_fd);
    CHECK(was >= 0 && fd_closed(was));
    int mine = dup2(mfd, was); /* that number is ours now */
    CHECK(mine == was);
    int c5 = regsrv_connect(name, len, TMO, why, sizeof why);
    CHECK_MSG(c5 >= 0, "connect: %s", why);
    weft_regsrv_desc b = ipc_desc();
    import_ok(c5, key, &b, -1, NULL, NULL, NULL);
    CHECK(send(c5, "junk", 4, MSG_NOSIGNAL) == 4);
    struct pollfd p = {c5, POLLIN, 0};
    CHECK(poll(&p, 1, TMO) == 1);
    close(c5);
    CHECK_MSG(wait_imports(s, 3, 5000), "imports %d after the close, want 3", regsrv_imports(s));
    FAKE_OK();
    CHECK_MSG(!fd_closed(mine),
              "the server closed descriptor %d of this process (its copy of an earlier import "
              "was %d) when a peer died with a reply unread", mine, was);
    close(mine);
    CHECK(regsrv_release(c, key, ida, TMO, why, sizeof why) == 1);
    CHECK(regsrv_imports(s) == 2);
  }

  /* 9. Garbage: the server answers or closes, leaks no descriptor, and goes on serving. */
  {
    int calls = fake_get(&F.ncalls), rel = fake_get(&F.nreleases);
    int g = regsrv_connect(name, len, TMO, why, sizeof why);
    CHECK_MSG(g >= 0, "connect: %s", why);
    unsigned char big[8192], buf[8192];
    rnd_bytes(big, sizeof big);
    int open_conn = 1;
    ssize_t r;
    CHECK(send(g, "\x01\x02\x03\x04\x05", 5, MSG_NOSIGNAL) == 5);
    r = recv_any(g, buf, sizeof buf);
    CHECK(r >= 0);
    open_conn = r > 0;
    if (open_conn) {
      CHECK(send(g, big, sizeof big, MSG_NOSIGNAL) == (ssize_t)sizeof big);
      r = recv_any(g, buf, sizeof buf);
      CHECK(r >= 0);
      open_conn = r > 0;
    }
    if (open_conn) { /* a short message with a descriptor riding along */
      int fds0 = count_fds();
      CHECK(send_fds(g, big, 16, &mfd, 1) == 16);
      r = recv_any(g, buf, sizeof buf);
      CHECK(r >= 0);
      open_conn = r > 0;
      if (open_conn) /* answered: the server is done with the message and its descriptor */
        CHECK_MSG(count_fds() == fds0 && count_refs(&st) == 1,
                  "descriptors %d before the garbage, %d after; %d refer to the file passed",
                  fds0, count_fds(), count_refs(&st));
    }
    if (open_conn) { /* two descriptors in one message: neither kept */
      unsigned char* xbytes;
      struct stat xst;
      int x = make_file(4096, &xbytes, &xst);
      int two[2] = {x, mfd};
      CHECK(send_fds(g, big, 16, two, 2) == 16);
      r = recv_any(g, buf, sizeof buf);
      CHECK(r >= 0);
      open_conn = r > 0;
      close(x);
      if (open_conn)
        CHECK_MSG(count_refs(&xst) == 0 && count_refs(&st) == 1,
                  "two descriptors in one message: %d and %d copies left (want 0 and 1)",
                  count_refs(&xst), count_refs(&st));
      free(xbytes);
    }
    CHECK(fake_get(&F.ncalls) == calls && fake_get(&F.nreleases) == rel);
    if (open_conn) { /* still a working connection */
      weft_regsrv_desc a = ipc_desc();
      uint64_t ida = import_ok(g, key, &a, -1, NULL, NULL, NULL);
      CHECK(regsrv_release(g, key, ida, TMO, why, sizeof why) == 1);
    }
    close(g);
    /* An empty message with a descriptor (on SEQPACKET, a read of 0 bytes like a close's): the
     * server answers or closes, and keeps no copy of the descriptor. */
    {
      calls = fake_get(&F.ncalls);
      rel = fake_get(&F.nreleases);
      unsigned char* xbytes;
      struct stat xst;
      int x = make_file(4096, &xbytes, &xst);
      int g0 = regsrv_connect(name, len, TMO, why, sizeof why);
      CHECK_MSG(g0 >= 0, "connect: %s", why);
      CHECK(send_fds(g0, NULL, 0, &x, 1) == 0);
      CHECK(recv_any(g0, buf, sizeof buf) >= 0);
      close(g0);
      close(x);
      uint64_t end = clock_ms() + 5000;
      while (count_refs(&xst) != 0 && clock_ms() < end) usleep(1000);
      CHECK_MSG(count_refs(&xst) == 0, "the server kept %d copies of a descriptor that came "
                "with an empty message", count_refs(&xst));
      free(xbytes);
      CHECK(fake_get(&F.ncalls) == calls && fake_get(&F.nreleases) == rel);
    }
    /* A new connection works; so does the first one. */
    int g2 = regsrv_connect(name, len, TMO, why, sizeof why);
    CHECK_MSG(g2 >= 0, "connect: %s", why);
    weft_regsrv_desc a = ipc_desc();
    uint64_t ida = import_ok(g2, key, &a, -1, NULL, NULL, NULL);
    CHECK(regsrv_imports(s) == 3);
    CHECK(regsrv_release(g2, key, ida, TMO, why, sizeof why) == 1);
    close(g2);
    weft_regsrv_desc b = ipc_desc();
    uint64_t idb = import_ok(c, key, &b, -1, NULL, NULL, NULL);
    CHECK(regsrv_release(c, key, idb, TMO, why, sizeof why) == 1);
    CHECK(wait_imports(s, 2, 5000));
    FAKE_OK();
  }

  /* 7 (end). Release what c still holds, one by one. */
  {
    int rel = fake_get(&F.nreleases);
    CHECK(regsrv_release(c, key, id2, TMO, why, sizeof why) == 1);
    CHECK(rec_released(n2) && !rec_released(n2b) && regsrv_imports(s) == 1);
    CHECK(regsrv_release(c, key, id2b, TMO, why, sizeof why) == 1);
    CHECK(rec_released(n2b) && regsrv_imports(s) == 0 && fake_get(&F.nreleases) == rel + 2);
    FAKE_OK();
  }

  /* 11. regsrv_stop releases what is still held (before it returns), closes the connections
   * and frees the name. */
  {
    weft_regsrv_desc a = ipc_desc(), b = fd_desc(alloc);
    int na, nb;
    import_ok(c, key, &a, -1, NULL, NULL, &na);
    import_ok(c, key, &b, mfd, bytes, &st, &nb);
    CHECK(regsrv_imports(s) == 2);
    int rel = fake_get(&F.nreleases);
    regsrv_stop(s);
    s = NULL;
    FAKE_OK();
    CHECK(rec_released(na) && rec_released(nb) && fake_get(&F.nreleases) == rel + 2);
    /* The connection is gone: a request fails at once, not at its timeout. */
    weft_regsrv_desc e = ipc_desc();
    uint64_t addr, id, t0 = clock_ms();
    why[0] = '\0';
    CHECK(regsrv_import(c, key, &e, -1, TMO, &addr, &id, why, sizeof why) == 0 && why[0]);
    CHECK_MSG(clock_ms() - t0 < TMO / 2, "a request to a stopped service took %llu ms",
              (unsigned long long)(clock_ms() - t0));
    close(c);
    /* 10. Nobody serves the name now: connect gives up after its timeout, saying why. */
    t0 = clock_ms();
    why[0] = '\0';
    CHECK(regsrv_connect(name, len, 200, why, sizeof why) == -1);
    uint64_t took = clock_ms() - t0;
    CHECK(why[0] != '\0');
    CHECK_MSG(took >= 150 && took < 1200, "connect to nobody returned after %llu ms",
              (unsigned long long)took);
    /* The name can be served again. */
    CHECK(regsrv_start(name, len, key, 0, &OPS, &s) == ncclSuccess);
    CHECK(regsrv_imports(s) == 0);
    regsrv_stop(s);
  }
  /* 10. A server that starts while a requester is already trying is reached. */
  {
    char n2name[WEFT_REGSRV_NAME_MAX];
    size_t n2len;
    name_of(n2name, &n2len, comm ^ 1, 3);
    late_start l = {n2name, n2len, key, 150, NULL, ncclInternalError};
    pthread_t t;
    uint64_t t0 = clock_ms();
    CHECK(pthread_create(&t, NULL, start_late, &l) == 0);
    int cl = regsrv_connect(n2name, n2len, TMO, why, sizeof why);
    uint64_t took = clock_ms() - t0;
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(l.res == ncclSuccess);
    CHECK_MSG(cl >= 0, "connect to a late server: %s", why);
    CHECK(took >= 100);
    weft_regsrv_desc a = ipc_desc();
    int na;
    import_ok(cl, key, &a, -1, NULL, NULL, &na);
    CHECK(regsrv_imports(l.s) == 1);
    regsrv_stop(l.s);
    CHECK(rec_released(na));
    close(cl);
  }

  FAKE_OK();
  int calls = fake_get(&F.ncalls), rels = fake_get(&F.nreleases);
  /* Every successful import was released exactly once (the fake refuses doubles). */
  int held = 0;
  for (int i = 1; i <= calls && i <= MAXREC; i++)
    if (F.rec[i].used && !F.rec[i].released) held++;
  CHECK(held == 0);
  close(mfd);
  free(bytes);
  printf("transport_regsrv: %d import calls (%d releases) served as expected, refusals, garbage, "
         "closes, stop and connect timing checked (seed %llu)\n",
         calls, rels, seed);
  return 0;
}
