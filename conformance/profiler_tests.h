/* The profiler suite (profiler_tests.c). */
#ifndef WEFT_CONF_PROFILER_TESTS_H
#define WEFT_CONF_PROFILER_TESTS_H

/* argv as given after "profiler": PLUGIN.so [options]. */
int profiler_suite_main(int argc, char** argv);

#endif
