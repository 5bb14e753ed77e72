/* What CUDA this process can use, found at run time through the driver library (dlopen of
 * libcuda.so.1), so weft builds and runs on machines with no GPU and no driver. */
#ifndef WEFT_TOPO_CUDA_PROBE_H
#define WEFT_TOPO_CUDA_PROBE_H

typedef struct {
  int usable;          /* driver loaded, cuInit succeeded, ≥ 1 device */
  int device_count;
  int driver_version;  /* e.g. 13000; 0 when unknown */
  int runtime_version; /* of a loadable libcudart; 0 when none */
  int current_device;  /* the caller's current device (its context), else 0 */
  char why[128];       /* why not usable */
} weft_cuda_info;

/* Probe (cached after the first call, except current_device which is read each time). */
void cuda_probe(weft_cuda_info* out);

#endif
