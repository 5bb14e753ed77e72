/* Per-communicator collective metrics in Prometheus' text exposition format, for
 * node_exporter's textfile collector or any scraper that reads a file. For each collective
 * name and message-size bucket (the largest power of two >= the message's bytes): how many
 * finished, their bytes and time, and from those the mean algorithm bandwidth (bytes / time)
 * and bus bandwidth (nccl-tests' factors: AllReduce 2(n-1)/n, AllGather, ReduceScatter and
 * AlltoAll (n-1)/n, the rest 1). A collective's bytes are nccl-tests' size: count x datatype
 * size, times nranks for AllGather and ReduceScatter (whose count is per rank). Its time is the
 * Coll event's, start to stop, in the executor's own timing (host mode: the launch to the end
 * of the host executor's work; device mode: to the end of the enqueue or the kernel, as the
 * core reports it). Memory is fixed: METRICS_NFUNCS x METRICS_NBUCKETS cells. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"

static size_t dtype_bytes(const char* d) {
  if (!d) return 0;
  static const struct {
    const char* name;
    size_t bytes;
  } t[] = {{"ncclInt8", 1},     {"ncclUint8", 1},     {"ncclInt32", 4},       {"ncclUint32", 4},
           {"ncclInt64", 8},    {"ncclUint64", 8},    {"ncclFloat16", 2},     {"ncclFloat32", 4},
           {"ncclFloat64", 8},  {"ncclBfloat16", 2},  {"ncclFloat8e4m3", 1},  {"ncclFloat8e5m2", 1}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (strcmp(t[i].name, d) == 0) return t[i].bytes;
  return 0;
}

static double bus_factor(const char* f, int n) {
  if (n <= 1) return 1.0;
  if (strcmp(f, "AllReduce") == 0) return 2.0 * (n - 1) / n;
  if (!strcmp(f, "AllGather") || !strcmp(f, "ReduceScatter") || !strcmp(f, "AlltoAll"))
    return (double)(n - 1) / n;
  return 1.0;
}

void metrics_add(metrics_t* m, const char* func, const char* dtype, size_t count, int nranks,
                 uint64_t dur_us) {
  if (!func) return;
  int fi = -1;
  for (int i = 0; i < METRICS_NFUNCS && fi < 0; i++) {
    if (m->func[i] == NULL) m->func[i] = func;
    if (m->func[i] == func || strcmp(m->func[i], func) == 0) fi = i;
  }
  if (fi < 0) return; /* more names than cells: not counted */
  uint64_t bytes = (uint64_t)count * dtype_bytes(dtype);
  if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter")) bytes *= (uint64_t)nranks;
  int b = 0;
  while (b < METRICS_NBUCKETS - 1 && ((uint64_t)1 << b) < bytes) b++;
  metrics_cell* c = &m->cell[fi][b];
  c->count++;
  c->bytes += bytes;
  c->time_us += dur_us;
}

int metrics_due(metrics_t* m, uint64_t now_us) {
  const char* s = getenv("WEFT_METRICS_DIR");
  if (!s || !*s) return 0;
  const char* iv = getenv("WEFT_METRICS_INTERVAL_S");
  long secs = iv && *iv ? strtol(iv, NULL, 10) : 10;
  if (secs <= 0) return 0;
  if (m->last_write_us == 0) m->last_write_us = now_us;
  if (now_us - m->last_write_us < (uint64_t)secs * 1000000u) return 0;
  m->last_write_us = now_us;
  return 1;
}

/* A label value: backslash, quote and newline escaped, as the format requires. */
static void label(FILE* f, const char* s) {
  for (; s && *s; s++) {
    if (*s == '\\' || *s == '"') fprintf(f, "\\%c", *s);
    else if (*s == '\n') fputs("\\n", f);
    else fputc(*s, f);
  }
}

typedef enum { M_COUNT, M_BYTES, M_SECONDS, M_ALGBW, M_BUSBW, M_AVG } which;
static const struct {
  const char *name, *type, *help;
} metric[] = {
    {"weft_collective_total", "counter", "collectives finished, by name and message size bucket"},
    {"weft_collective_bytes_total", "counter", "bytes of the collectives finished (nccl-tests' size)"},
    {"weft_collective_seconds_total", "counter", "time in the collectives finished (start to stop)"},
    {"weft_collective_algbw_bytes_per_second", "gauge", "mean algorithm bandwidth: bytes / time"},
    {"weft_collective_busbw_bytes_per_second", "gauge", "mean bus bandwidth: algbw x nccl-tests' factor"},
    {"weft_collective_avg_seconds", "gauge", "mean time per collective"},
};

void metrics_write(const metrics_t* m, uint64_t comm_id, const char* comm_name, int rank,
                   int nranks) {
  const char* dir = getenv("WEFT_METRICS_DIR");
  if (!dir || !*dir) return;
  char host[64] = "host";
  gethostname(host, sizeof host - 1);
  char path[1024], tmp[1100];
  snprintf(path, sizeof path, "%s/weft-%s-%d-%016" PRIx64 "-r%d.prom", dir, host, (int)getpid(),
           comm_id, rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "weft-trace: cannot write %s: %s\n", tmp, strerror(errno));
    return;
  }
  for (int k = 0; k < (int)(sizeof metric / sizeof metric[0]); k++) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metric[k].name, metric[k].help, metric[k].name,
            metric[k].type);
    for (int fi = 0; fi < METRICS_NFUNCS && m->func[fi]; fi++)
      for (int b = 0; b < METRICS_NBUCKETS; b++) {
        const metrics_cell* c = &m->cell[fi][b];
        if (!c->count) continue;
        double secs = (double)c->time_us / 1e6;
        double v = 0;
        switch ((which)k) {
          case M_COUNT: v = (double)c->count; break;
          case M_BYTES: v = (double)c->bytes; break;
          case M_SECONDS: v = secs; break;
          case M_ALGBW: v = secs > 0 ? (double)c->bytes / secs : 0; break;
          case M_BUSBW: v = secs > 0 ? (double)c->bytes / secs * bus_factor(m->func[fi], nranks) : 0; break;
          case M_AVG: v = secs / (double)c->count; break;
        }
        fprintf(f, "%s{comm=\"0x%016" PRIx64 "\",comm_name=\"", metric[k].name, comm_id);
        label(f, comm_name);
        fprintf(f, "\",host=\"");
        label(f, host);
        fprintf(f, "\",rank=\"%d\",nranks=\"%d\",collective=\"", rank, nranks);
        label(f, m->func[fi]);
        fprintf(f, "\",size_le_bytes=\"%" PRIu64 "\"} %.9g\n", (uint64_t)1 << b, v);
      }
  }
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "weft-trace: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
  }
}
