/* The net suite's test tables, one per theme file, in the order they run. */
#ifndef WEFT_CONF_NET_TESTS_H
#define WEFT_CONF_NET_TESTS_H

#include "runner.h"

extern const conf_test net_tests_abi[];
extern const int net_tests_abi_count;
extern const conf_test net_tests_conn[];
extern const int net_tests_conn_count;
extern const conf_test net_tests_data[];
extern const int net_tests_data_count;
extern const conf_test net_tests_mr[];
extern const int net_tests_mr_count;
extern const conf_test net_tests_cuda[];
extern const int net_tests_cuda_count;
extern const conf_test net_tests_stress[];
extern const int net_tests_stress_count;

/* The hidden command a reload test runs in a fresh process (exec'd from the test): load, init,
 * finalize, dlclose, load and init again; argv: PLUGIN VERSION. Prints "RESULT pass|fail|
 * inconclusive REASON" and the plugin's log lines ("LOG …") on stdout. */
#define NET_RELOAD_CHILD_CMD "--net-reload-child"
int net_reload_child_main(int argc, char** argv);
/* The reload test (net_reload.c): runs that command and judges what it printed. */
conf_result net_t_reload(void* arg);

/* Runs the net suite (or the benchmark); argv as given after "net". */
int net_suite_main(int argc, char** argv);
/* The benchmark (--bench). */
int net_bench_run(void);

#endif
