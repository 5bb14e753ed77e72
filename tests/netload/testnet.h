/* What the netload test plugins record, read by the tests through dlsym("testnet_stats").
 * Shared by testnet_plugin.c (built several times with different TESTNET_* options) and the
 * tests. */
#ifndef WEFT_TESTS_NETLOAD_TESTNET_H
#define WEFT_TESTS_NETLOAD_TESTNET_H

#include <stdint.h>

typedef struct {
  int init_calls;      /* the plugin's own init, any version */
  int finalize_calls;  /* v11 finalize */
  int devices_calls;
  int listen_calls, connect_calls, accept_calls;
  int regmr_calls, isend_calls, irecv_calls, test_calls, close_calls;
  long long last_regmr_size;
  long long last_isend_size;
  int last_irecv_n;
  long long last_irecv_sizes[4];
  void* last_irecv_request_in; /* *request when irecv was entered */
  int last_traffic_class;      /* v10: connect's config; v11: init's config */
  uint64_t last_comm_id;       /* v11 init */
  int logger_given, profiler_given;
} testnet_stats_t;

#define TESTNET_DUMMY_SIZE 12345 /* props.speed of every test plugin */

#endif
