/* libweft-kernel-times.so: the GPU time of each kernel, copy and memset a program runs, read
 * from CUPTI's activity records (the start and end the GPU stamps), for the cases Nsight
 * Compute cannot time: it serialises kernels, so two ranks of one process whose kernels wait on
 * each other never finish under it. Loaded by CUDA itself:
 *
 *   CUDA_INJECTION64_PATH=build/lib/libweft-kernel-times.so weft-perf all_reduce -g 2 ...
 *
 * At exit it prints one line per kernel name (and per copy and memset kind): how many ran,
 * their total, minimum, median, 90th percentile and maximum in microseconds; "[graph]" marks
 * those that ran as nodes of a CUDA graph. WEFT_KT_OUT=FILE writes the report there instead of
 * stderr; WEFT_KT_API=1 also counts the CUDA runtime and driver calls, with their host time.
 * A measuring tool: it links no part of weft and works under any CUDA program. */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KT_KERNEL, KT_COPY, KT_SET, KT_API };
static const char* const kt_kind_name[] = {"kernel", "copy", "memset", "api"};

struct kt_entry {
  int kind;
  int in_graph;
  char* name;
  double* us; /* durations */
  size_t n, cap;
  double total; /* set by the report, before it sorts */
};

/* The table of names: CUPTI hands completed buffers to one of its threads, the report runs at
 * exit; the lock keeps the two apart. */
static pthread_mutex_t kt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kt_entry* kt_tab;
static size_t kt_n, kt_cap;
static size_t kt_dropped;
static int kt_api; /* WEFT_KT_API set and not 0 */

static struct kt_entry* kt_find(int kind, int in_graph, const char* name) {
  for (size_t i = 0; i < kt_n; i++)
    if (kt_tab[i].kind == kind && kt_tab[i].in_graph == in_graph && !strcmp(kt_tab[i].name, name))
      return &kt_tab[i];
  if (kt_n == kt_cap) {
    size_t cap = kt_cap ? 2 * kt_cap : 64;
    struct kt_entry* t = realloc(kt_tab, cap * sizeof *t);
    if (!t) return NULL;
    kt_tab = t;
    kt_cap = cap;
  }
  char* copy = strdup(name);
  if (!copy) return NULL;
  kt_tab[kt_n] = (struct kt_entry){.kind = kind, .in_graph = in_graph, .name = copy};
  return &kt_tab[kt_n++];
}

static void kt_add(int kind, int in_graph, const char* name, uint64_t start, uint64_t end) {
  struct kt_entry* e = kt_find(kind, in_graph, name ? name : "?");
  if (e && e->n == e->cap) {
    size_t cap = e->cap ? 2 * e->cap : 256;
    double* u = realloc(e->us, cap * sizeof *u);
    if (!u) {
      e = NULL;
    } else {
      e->us = u;
      e->cap = cap;
    }
  }
  if (!e) {
    kt_dropped++;
    return;
  }
  e->us[e->n++] = end > start ? (double)(end - start) / 1e3 : 0.0;
}

static const char* copy_kind(uint8_t k) {
  switch (k) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
  default: return "other";
  }
}

static void kt_record(const CUpti_Activity* r) {
  char name[96];
  switch (r->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*)r;
    kt_add(KT_KERNEL, k->graphNodeId != 0, k->name, k->start, k->end);
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6* m = (const CUpti_ActivityMemcpy6*)r;
    snprintf(name, sizeof name, "memcpy %s %llu B", copy_kind(m->copyKind),
             (unsigned long long)m->bytes);
    kt_add(KT_COPY, m->graphNodeId != 0, name, m->start, m->end);
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4* m = (const CUpti_ActivityMemset4*)r;
    snprintf(name, sizeof name, "memset %llu B", (unsigned long long)m->bytes);
    kt_add(KT_SET, m->graphNodeId != 0, name, m->start, m->end);
    break;
  }
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const CUpti_ActivityAPI* a = (const CUpti_ActivityAPI*)r;
    const char* fn = NULL;
    CUpti_CallbackDomain dom = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME
                                   ? CUPTI_CB_DOMAIN_RUNTIME_API
                                   : CUPTI_CB_DOMAIN_DRIVER_API;
    if (cuptiGetCallbackName(dom, a->cbid, &fn) != CUPTI_SUCCESS || !fn) fn = "?";
    kt_add(KT_API, 0, fn, a->start, a->end);
    break;
  }
  default: break;
  }
}

enum { KT_BUFFER_BYTES = 8 << 20, KT_ALIGN = 8 };

static void CUPTIAPI kt_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = aligned_alloc(KT_ALIGN, KT_BUFFER_BYTES);
  *size = *buffer ? KT_BUFFER_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI kt_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer,
                                         size_t size, size_t valid) {
  (void)size;
  CUpti_Activity* r = NULL;
  pthread_mutex_lock(&kt_lock);
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) kt_record(r);
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) == CUPTI_SUCCESS) kt_dropped += lost;
  pthread_mutex_unlock(&kt_lock);
  free(buffer);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double total_of(const struct kt_entry* e) {
  double t = 0;
  for (size_t i = 0; i < e->n; i++) t += e->us[i];
  return t;
}

static int cmp_entry(const void* a, const void* b) {
  const struct kt_entry *x = a, *y = b;
  if (x->kind != y->kind) return x->kind - y->kind;
  return (x->total < y->total) - (x->total > y->total);
}

static void kt_report(void) {
  cuptiActivityFlushAll(1);
  const char* path = getenv("WEFT_KT_OUT");
  FILE* out = path && *path ? fopen(path, "w") : stderr;
  if (!out) {
    fprintf(stderr, "weft-kernel-times: cannot write %s\n", path);
    out = stderr;
  }
  pthread_mutex_lock(&kt_lock);
  for (size_t i = 0; i < kt_n; i++) kt_tab[i].total = total_of(&kt_tab[i]);
  qsort(kt_tab, kt_n, sizeof *kt_tab, cmp_entry);
  fprintf(out, "# weft-kernel-times: GPU time per kernel, copy and memset (CUPTI), in us%s\n",
          kt_api ? "; api: host time per CUDA call" : "");
  fprintf(out, "# %-6s %8s %12s %9s %9s %9s %9s  %s\n", "kind", "count", "total", "min", "median",
          "p90", "max", "name");
  for (size_t i = 0; i < kt_n; i++) {
    struct kt_entry* e = &kt_tab[i];
    if (!e->n) continue;
    qsort(e->us, e->n, sizeof *e->us, cmp_double);
    fprintf(out, "  %-6s %8zu %12.3f %9.3f %9.3f %9.3f %9.3f  %s%s\n", kt_kind_name[e->kind],
            e->n, e->total, e->us[0], e->us[e->n / 2], e->us[(e->n * 9) / 10],
            e->us[e->n - 1], e->name, e->in_graph ? " [graph]" : "");
  }
  if (kt_dropped)
    fprintf(out, "# %zu records dropped (out of memory or CUPTI buffers)\n", kt_dropped);
  pthread_mutex_unlock(&kt_lock);
  if (out != stderr) fclose(out);
}

/* CUDA calls this when CUDA_INJECTION64_PATH names the library. */
int InitializeInjection(void);
int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(kt_buffer_requested, kt_buffer_completed) != CUPTI_SUCCESS) {
    fprintf(stderr, "weft-kernel-times: cuptiActivityRegisterCallbacks failed\n");
    return 0;
  }
  int ok = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS &&
           cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS &&
           cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS;
  const char* api = getenv("WEFT_KT_API");
  kt_api = api && *api && strcmp(api, "0");
  if (ok && kt_api)
    ok = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS &&
         cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS;
  if (!ok) fprintf(stderr, "weft-kernel-times: cuptiActivityEnable failed\n");
  atexit(kt_report);
  return 1;
}
