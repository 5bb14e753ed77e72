/* fakeverbs protection domains and memory regions. A key (lkey == rkey, as on mlx5) is
 * (slot << 8 | generation): a deregistered key stops resolving at once, and a stale key is
 * not confused with the next registration in the same slot. Registration checks what the kernel
 * checks: the range is mapped, the length is not 0, remote write implies local write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fv.h"

typedef struct {
  struct ibv_mr mr;
  fv_pd* pd;
  uint64_t iova;
  char* base; /* host address of iova */
  uint64_t len;
  int access;
  void* map; /* dma-buf mapping */
  size_t map_len;
} fv_mr;

static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;
static fv_mr** mr_slots;
static uint32_t mr_nslots;
static uint8_t mr_gen;

FV_EXPORT struct ibv_pd* ibv_alloc_pd(struct ibv_context* context) {
  fv_pd* p = calloc(1, sizeof *p);
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  p->pd.context = context;
  return &p->pd;
}

FV_EXPORT int ibv_dealloc_pd(struct ibv_pd* pd) {
  fv_pd* p = (fv_pd*)pd;
  if (__atomic_load_n(&p->nobjs, __ATOMIC_ACQUIRE) != 0) return EBUSY;
  free(p);
  return 0;
}

static int check_access(int access) {
  int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;
  if (access & ~known) return EINVAL;
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
      !(access & IBV_ACCESS_LOCAL_WRITE))
    return EINVAL;
  return 0;
}

/* Give m a key; 0 on success. */
static int mr_insert(fv_mr* m) {
  pthread_mutex_lock(&mr_lock);
  uint32_t slot = 0;
  while (slot < mr_nslots && mr_slots[slot]) slot++;
  if (slot == mr_nslots) {
    uint32_t n = mr_nslots ? mr_nslots * 2 : 64;
    if (n > (1u << 23)) {
      pthread_mutex_unlock(&mr_lock);
      return ENOMEM;
    }
    fv_mr** s = realloc(mr_slots, n * sizeof *s);
    if (!s) {
      pthread_mutex_unlock(&mr_lock);
      return ENOMEM;
    }
    memset(s + mr_nslots, 0, (n - mr_nslots) * sizeof *s);
    mr_slots = s;
    mr_nslots = n;
  }
  mr_slots[slot] = m;
  m->mr.lkey = m->mr.rkey = ((slot + 1) << 8) | ++mr_gen;
  pthread_mutex_unlock(&mr_lock);
  return 0;
}

static struct ibv_mr* reg_common(struct ibv_pd* pd, void* addr, uint64_t iova, size_t length,
                                 int access, void* map, size_t map_len) {
  fv_pd* p = (fv_pd*)pd;
  int err = 0;
  if (!p || length == 0) err = EINVAL;
  if (!err) err = check_access(access);
  if (!err && fv_fault.fail_reg_mr && fv_count_reg_mr() >= fv_fault.fail_reg_mr) err = ENOMEM;
  if (!err && !map) {
    /* The kernel pins the pages: an unmapped range fails. */
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
    size_t l = (size_t)((uintptr_t)addr + length - a);
    if (msync((void*)a, l, MS_ASYNC) != 0) err = EFAULT;
  }
  fv_mr* m = err ? NULL : calloc(1, sizeof *m);
  if (!err && !m) err = ENOMEM;
  if (!err) {
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = map ? (void*)(uintptr_t)iova : addr;
    m->mr.length = length;
    m->pd = p;
    m->iova = iova;
    m->base = addr;
    m->len = length;
    m->access = access;
    m->map = map;
    m->map_len = map_len;
    err = mr_insert(m);
  }
  if (err) {
    free(m);
    if (map) munmap(map, map_len);
    errno = err;
    return NULL;
  }
  __atomic_add_fetch(&p->nobjs, 1, __ATOMIC_ACQ_REL);
  fv_trace("reg_mr %p+%zu key %#x access %#x", addr, length, m->mr.lkey, access);
  return &m->mr;
}

FV_EXPORT struct ibv_mr* ibv_reg_mr(struct ibv_pd* pd, void* addr, size_t length, int access) {
  return reg_common(pd, addr, (uintptr_t)addr, length, access, NULL, 0);
}

FV_EXPORT struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* pd, void* addr, size_t length,
                                          uint64_t iova, unsigned int access) {
  return reg_common(pd, addr, iova, length, (int)access, NULL, 0);
}

FV_EXPORT struct ibv_mr* ibv_reg_mr_iova(struct ibv_pd* pd, void* addr, size_t length,
                                         uint64_t iova, int access) {
  return reg_common(pd, addr, iova, length, access, NULL, 0);
}

/* A dma-buf is emulated by any mmap-able fd (tests use a memfd): its pages at offset are the
 * memory the MR addresses through iova. A negative fd gives EBADF, which is how callers probe
 * that the kernel supports dma-buf registration. */
FV_EXPORT struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd* pd, uint64_t offset, size_t length,
                                           uint64_t iova, int fd, int access) {
  if (fv_fault.no_dmabuf) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  if (fd < 0) {
    errno = EBADF;
    return NULL;
  }
  if (length == 0) {
    errno = EINVAL;
    return NULL;
  }
  long pg = sysconf(_SC_PAGESIZE);
  uint64_t aligned = offset & ~(uint64_t)(pg - 1);
  size_t map_len = (size_t)(offset - aligned) + length;
  void* map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)aligned);
  if (map == MAP_FAILED) return NULL; /* errno from mmap */
  return reg_common(pd, (char*)map + (offset - aligned), iova, length, access, map, map_len);
}

FV_EXPORT int ibv_dereg_mr(struct ibv_mr* mr) {
  fv_mr* m = (fv_mr*)mr;
  pthread_mutex_lock(&mr_lock);
  uint32_t slot = (m->mr.lkey >> 8) - 1;
  if (slot >= mr_nslots || mr_slots[slot] != m) {
    pthread_mutex_unlock(&mr_lock);
    return EINVAL;
  }
  mr_slots[slot] = NULL;
  pthread_mutex_unlock(&mr_lock);
  fv_trace("dereg_mr key %#x", m->mr.lkey);
  __atomic_sub_fetch(&m->pd->nobjs, 1, __ATOMIC_ACQ_REL);
  if (m->map) munmap(m->map, m->map_len);
  free(m);
  return 0;
}

char* fv_mr_resolve(fv_pd* pd, uint32_t key, uint64_t addr, size_t len, int access, int remote) {
  static char empty;
  if (len == 0) return &empty;
  char* p = NULL;
  pthread_mutex_lock(&mr_lock);
  uint32_t slot = (key >> 8) - 1;
  fv_mr* m = slot < mr_nslots ? mr_slots[slot] : NULL;
  if (m && m->mr.lkey == key && m->pd == pd && (m->access & access) == access &&
      addr >= m->iova && len <= m->len && addr - m->iova <= m->len - len)
    p = m->base + (addr - m->iova);
  pthread_mutex_unlock(&mr_lock);
  if (!p)
    fv_trace("%s key %#x addr %#llx len %zu access %#x refused", remote ? "remote" : "local", key,
             (unsigned long long)addr, len, access);
  return p;
}
