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

/* Runs the net suite (or the benchmark); argv as given after "net". */
int net_suite_main(int argc, char** argv);
/* The benchmark (--bench). */
int net_bench_run(void);

#endif
