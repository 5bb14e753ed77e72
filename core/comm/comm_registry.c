/* The communicators alive in this process: a guarded set of handles. A handle is looked up
 * here before any field of it is read, so a destroyed (freed) handle is reported as such
 * instead of being read (comm_check.c), a group drops a communicator destroyed under it, and
 * the hang report (SIGUSR1) can visit every communicator. This and the plugin registry and
 * log sink are the process-wide state weft keeps; each is guarded by its own lock. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "comm/comm.h"
#include "util/check.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Open addressing on the pointer; NULL is empty, TOMB a removed entry. */
#define TOMB ((struct ncclComm*)(uintptr_t)1)
static struct ncclComm** slots;
static size_t nslots, nused, nlive;

static size_t slot_of(const struct ncclComm* c, size_t n) {
  uint64_t h = (uint64_t)(uintptr_t)c * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (n - 1);
}

/* Under reg_lock: the slot holding c, or (size_t)-1. */
static size_t find(const struct ncclComm* c) {
  if (nslots == 0) return (size_t)-1;
  for (size_t i = slot_of(c, nslots), k = 0; k < nslots; i = (i + 1) & (nslots - 1), k++) {
    if (slots[i] == c) return i;
    if (slots[i] == NULL) return (size_t)-1;
  }
  return (size_t)-1;
}

static int grow(void) {
  size_t n = nslots ? nslots * 2 : 64;
  while (nlive * 2 >= n) n *= 2;
  struct ncclComm** s = calloc(n, sizeof *s);
  if (!s) return 0;
  for (size_t i = 0; i < nslots; i++) {
    struct ncclComm* c = slots[i];
    if (c == NULL || c == TOMB) continue;
    size_t j = slot_of(c, n);
    while (s[j]) j = (j + 1) & (n - 1);
    s[j] = c;
  }
  free(slots);
  slots = s;
  nslots = n;
  nused = nlive;
  return 1;
}

ncclResult_t comm_registry_add(struct ncclComm* comm) {
  pthread_mutex_lock(&reg_lock);
  if ((nused + 1) * 2 > nslots && !grow()) {
    pthread_mutex_unlock(&reg_lock);
    WARN("rank %d: out of memory registering a communicator", comm->rank);
    return ncclSystemError;
  }
  size_t i = slot_of(comm, nslots);
  while (slots[i] != NULL && slots[i] != TOMB) i = (i + 1) & (nslots - 1);
  if (slots[i] == NULL) nused++;
  slots[i] = comm;
  nlive++;
  pthread_mutex_unlock(&reg_lock);
  return ncclSuccess;
}

void comm_registry_remove(struct ncclComm* comm) {
  pthread_mutex_lock(&reg_lock);
  size_t i = find(comm);
  if (i != (size_t)-1) {
    slots[i] = TOMB;
    nlive--;
  }
  if (nlive == 0) { /* the last one gone: give the table back (leak checkers see none) */
    free(slots);
    slots = NULL;
    nslots = nused = 0;
  }
  pthread_mutex_unlock(&reg_lock);
}

int comm_registry_live(const struct ncclComm* comm) {
  pthread_mutex_lock(&reg_lock);
  int live = find(comm) != (size_t)-1;
  pthread_mutex_unlock(&reg_lock);
  return live;
}

void comm_registry_visit(void (*fn)(struct ncclComm* comm, void* arg), void* arg) {
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nslots; i++)
    if (slots[i] != NULL && slots[i] != TOMB) fn(slots[i], arg);
  pthread_mutex_unlock(&reg_lock);
}
