/* How many CPUs this process may run on. */
#ifndef WEFT_UTIL_CPUS_H
#define WEFT_UTIL_CPUS_H

/* The CPUs of this process's affinity mask (taskset, cgroup cpusets, mpirun --bind-to), else
 * the online ones; at least 1. Host mode shares them among the ranks of this host. */
long weft_usable_cpus(void);

#endif
