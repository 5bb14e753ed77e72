/* The tuner suite (tuner_tests.c). */
#ifndef WEFT_CONF_TUNER_TESTS_H
#define WEFT_CONF_TUNER_TESTS_H

/* argv as given after "tuner": PLUGIN.so [options]. */
int tuner_suite_main(int argc, char** argv);

#endif
