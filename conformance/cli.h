/* The command-line plumbing the suites share (net_main.c, kind_main.c, tuner_tests.c,
 * profiler_tests.c): the options every suite takes, --abi's value, the exported table versions
 * as the header line and the JSON report list them, and the header line of a suite whose
 * plugin exports numbered tables. What each suite adds (its own options, its usage text, its
 * gate) stays with it. */
#ifndef WEFT_CONF_CLI_H
#define WEFT_CONF_CLI_H

#include <stddef.h>

#include "runner.h"

/* argv[*i] when it is an option every suite takes (--filter GLOB, --json FILE, --timeout S,
 * --list, -v or --verbose): into opt, *i moved onto its value, and 1; else 0 (one that lacks
 * its value included: the suite reports it as it reports any unknown argument). */
int conf_common_option(conf_options* opt, int argc, char** argv, int* i);

/* The plugin at path, opened RTLD_NOW|RTLD_LOCAL in this process once a throw-away child has
 * shown that it survives doing so (conf_probe_dlopen): its handle, or NULL with why in err. */
void* conf_open_plugin(const char* path, char* err, size_t len);

/* --abi's value, "vN" or "N", when N is within lo..hi: N; else 0, said on stderr. */
int conf_abi_option(const char* value, int lo, int hi);

/* The versions lo..hi whose bit is set in exported: "v6 v7" into words and "6, 7" into json
 * (either may be NULL). */
void conf_version_lists(unsigned exported, int lo, int hi, char* words, size_t wlen, char* json,
                        size_t jlen);

/* "# weft-conformance SUITE PATH: " and then "not loadable", "no usable version", or the table's
 * name (its first field), the exported versions (words) and the one under test, with after_words
 * and after_version (either may be NULL) where the suite says more. */
void conf_print_table_line(const char* suite, const char* path, int loaded, int version,
                           const void* table, const char* words, const char* after_words,
                           const char* after_version);

#endif
