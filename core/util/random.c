/* Random ids (random.h). The only state is the fallback's counter, an atomic. */
#include "util/random.h"

#include <sys/random.h>
#include <unistd.h>

#include "util/clock.h"

uint64_t weft_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v && v != 0) return v;
  static uint64_t counter;
  uint64_t z = clock_ns() ^ ((uint64_t)getpid() << 32) ^
               __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 1;
}
