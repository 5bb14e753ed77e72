/* Code shared by the host executor (C) and the kernels (CUDA): functions marked WEFT_HD compile
 * as static inline C in host files and as __host__ __device__ in .cu files. */
#ifndef WEFT_UTIL_HD_H
#define WEFT_UTIL_HD_H

#ifdef __CUDACC__
#define WEFT_HD static inline __host__ __device__
#else
#define WEFT_HD static inline
#endif

#endif
