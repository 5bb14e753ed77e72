/* What the fixture plugins (kind_fixture.c) record, exported as fixture_stats for the loader
 * tests (kindload_test.c), which read it through their own dlopen of the fixture. */
#ifndef WEFT_KIND_FIXTURE_H
#define WEFT_KIND_FIXTURE_H

#include <stdint.h>

typedef struct {
  int inits;
  int finalizes;
  uint64_t last_comm_id;
  uint64_t last_mr_flags; /* regMrSym's mrFlags, last call */
  int regs;
} fixture_stats_t;

#endif
