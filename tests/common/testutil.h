/* Shared test helpers: assertions that name what failed, the check that weft's libnccl is the
 * one loaded, forking N ranks, and resource counters for leak checks. */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include "nccl.h"

#define TEST_SKIP_RC 77

#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);             \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

#define EXPECT_EQ_INT(a, b)                                                           \
  do {                                                                                \
    long long a_ = (long long)(a), b_ = (long long)(b);                               \
    if (a_ != b_) {                                                                   \
      fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, \
              #a, a_, #b, b_);                                                        \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

#define EXPECT_RES(call, want)                                                        \
  do {                                                                                \
    ncclResult_t r_ = (call);                                                         \
    if (r_ != (want)) {                                                               \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s\n", __FILE__,          \
              __LINE__, #call, (int)r_, ncclGetErrorString(r_), #want);               \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

#define EXPECT_OK(call) EXPECT_RES(call, ncclSuccess)

/* Exit(1) unless ncclGetVersion resolves into weft's build/lib. Call first in main(). */
void test_require_weft_lib(void);

/* Fork n ranks; each runs fn(rank, nranks, &id, arg) with one shared unique id that rank 0
 * creates and hands to the others through a pipe. Returns 0 when every child exited 0 within
 * timeout_s, else prints which rank failed and how, kills the rest and returns 1. */
typedef int (*test_rank_fn)(int rank, int nranks, ncclUniqueId* id, void* arg);
int test_fork_ranks(int n, test_rank_fn fn, void* arg, int timeout_s);

/* Whether probe() returns 1, asked in a forked child so that this process makes no call of
 * its own (a CUDA probe: ranks forked later must find CUDA untouched). */
int test_probe_in_child(int (*probe)(void));

/* Fork n children running fn(rank, nranks, NULL, arg) with no id exchange. Same result rules. */
int test_fork_plain(int n, test_rank_fn fn, void* arg, int timeout_s);

/* Fork+exec n ranks of this same program (/proc/self/exe, the same arguments and the current
 * environment): each starts as a fresh process, with none of the parent's threads, locks or
 * sanitizer state, so the parent may have threads when it calls this (the bootstrap root of an
 * id it made, a communicator of its own), which a plain fork does not allow (ThreadSanitizer
 * refuses threads in a child forked from a multi-threaded process; a lock held by another
 * thread at the fork stays held in the child for ever). Rank r runs fn(r, n, id, copy) inside
 * its test_require_weft_lib(), which every test's main calls first, and exits with fn's
 * result: copy holds arg_bytes (at most 32 KiB) copied from arg (plain data: no pointers), id
 * is a copy of *id (NULL when id is). fn must be a function of the test program itself, and
 * sees only what main sets before test_require_weft_lib, the environment and these: not globals
 * main set later. Same result rules as test_fork_ranks. */
int test_exec_ranks(int n, test_rank_fn fn, const void* arg, size_t arg_bytes,
                    const ncclUniqueId* id, int timeout_s);
/* For test_require_weft_lib: run the rank this process was exec'd as (test_exec_ranks), if it
 * was one; returns when it was not. */
void test_exec_child(void);

/* Wait for n children (pids; an entry becomes 0 once reaped) for up to timeout_s: 0 when each
 * exited 0, else 1 after naming which rank failed and how (those still running are killed). */
int test_wait_children(pid_t* pids, int n, int timeout_s);

/* Read exactly len bytes from fd (retrying short reads and EINTR). Returns the bytes read:
 * len, or fewer when the writer closed or read failed. */
size_t test_read_full(int fd, void* buf, size_t len);

/* Resource counts of this process, for leak checks. */
int test_count_fds(void);
int test_count_threads(void);
/* The thread count once it is at most want, waiting up to 2 s: a thread that was joined, or a
 * detached one that has returned, leaves /proc/self/task a moment later (longer on a loaded
 * machine). More than want after that is a thread left behind. */
int test_settle_threads(int want);
long test_rss_kb(void);
/* This process's shared-memory files: /dev/shm/weft-PID-* (the shm transport's names). */
int test_count_my_shm(void);

/* 1 under AddressSanitizer or ThreadSanitizer, whose quarantine and shadow memory grow the
 * resident size: leak checks by RSS hold only without them (LeakSanitizer checks leaks). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WEFT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WEFT_TEST_SANITIZED 1
#endif
#endif
#ifndef WEFT_TEST_SANITIZED
#define WEFT_TEST_SANITIZED 0
#endif

/* Threads a sanitizer runs of its own that a forked process may start after its first count:
 * ThreadSanitizer's background thread. */
#if defined(__SANITIZE_THREAD__)
#define WEFT_TEST_SANITIZER_THREADS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TEST_SANITIZER_THREADS 1
#endif
#endif
#ifndef WEFT_TEST_SANITIZER_THREADS
#define WEFT_TEST_SANITIZER_THREADS 0
#endif

/* Deterministic per-test random numbers (xorshift); seed from WEFT_TEST_SEED or the given one. */
uint64_t test_seed(uint64_t fallback);
uint64_t test_rand(uint64_t* state);

/* A free TCP port on 127.0.0.1 (bound then released). */
int test_free_port(void);

#endif
