/* The reference profiler plugin's record of events (ref_profiler.c), as the tests read it:
 * every event the core started, in start order, normalised over the ABI versions. */
#ifndef WEFT_TEST_REF_PROFILER_H
#define WEFT_TEST_REF_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#define REF_MAX_STATES 8
#define REF_NET_DATA 64 /* bytes of a NetPlugin descriptor kept */

typedef struct ref_event {
  uint64_t type;                 /* ncclProfile* bit */
  const struct ref_event* parent; /* parentObj as a record (NULL: none or not one of ours) */
  const struct ref_event* group;  /* v5/v6 Coll/P2p parentGroup */
  int rank;
  char func[32];                 /* v1: the index mapped back to NCCL's name */
  char dtype[32], algo[32], proto[32];
  uint64_t seq;
  size_t count;
  int root, peer, nchannels, channel, depth;
  uint64_t ptimer_start, ptimer_stop;
  int nstates;
  int states[REF_MAX_STATES];
  int stopped;                   /* stopEvent calls */
  int after_stop_state;          /* a state recorded after stopEvent */
  size_t trans_size;             /* ProxyStep (v4+): transSize of its last state */
  size_t chunk;                  /* ProxyOp: chunkSize (bytes per step) */
  int64_t net_id;                /* NetPlugin: the plugin id (type | version) */
  int net_updates;               /* NetPlugin (v4+): ncclProfilerNetPluginUpdate states */
  /* NetPlugin: the plugin's descriptor as start gave it, then as its last update did (only
   * the types the tests know: socket, IB, weft's OFI; zero otherwise) */
  unsigned char net_data[REF_NET_DATA];
  char net_provider[32]; /* weft's OFI: the provider name the descriptor pointed to */
} ref_event;

typedef struct {
  int version;
  int inits, finalizes;          /* successful init / finalize calls */
  int last_mask;                 /* the mask init left */
  int nevents;
  const ref_event* events;
  char comm_name[64];
  int nranks, rank, nnodes;      /* v4+: what init got */
} ref_summary;

/* Exported by each reference plugin library. */
typedef void (*ref_profiler_summary_fn)(ref_summary* out);
#define REF_SUMMARY_SYMBOL "ref_profiler_summary"

#endif
