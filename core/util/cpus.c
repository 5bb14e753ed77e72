/* CPUs this process may run on (see cpus.h). */
#include "util/cpus.h"

#include <sched.h>
#include <unistd.h>

long weft_usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}
