/* Prometheus text-format metrics of one communicator (metrics.c), kept beside the trace. */
#ifndef WEFT_TRACE_METRICS_H
#define WEFT_TRACE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_NFUNCS 16   /* distinct collective names per communicator */
#define METRICS_NBUCKETS 41 /* message size buckets: <= 2^0 ... <= 2^40 bytes */

typedef struct {
  uint64_t count, bytes, time_us;
} metrics_cell;

typedef struct {
  const char* func[METRICS_NFUNCS]; /* the profiler's own static strings */
  metrics_cell cell[METRICS_NFUNCS][METRICS_NBUCKETS];
  uint64_t last_write_us;
} metrics_t;

/* A finished collective: its function, count and datatype as the Coll event says, its time. */
void metrics_add(metrics_t* m, const char* func, const char* dtype, size_t count, int nranks,
                 uint64_t dur_us);
/* Write the communicator's file into WEFT_METRICS_DIR (nothing when unset): atomically (a
 * temporary file renamed), as node_exporter's textfile collector wants. */
void metrics_write(const metrics_t* m, uint64_t comm_id, const char* comm_name, int rank,
                   int nranks);
/* The file is also rewritten every WEFT_METRICS_INTERVAL_S seconds (default 10; 0: only at
 * finalize and exit) from a collective's stop: 1 when it is time. */
int metrics_due(metrics_t* m, uint64_t now_us);

#endif
