/* The kernel of devcomm_interop, written once against NCCL's device API and compiled twice:
 * against weft's nccl_device.h (devcomm_interop_main.cu) and NVIDIA's 2.30.7 one
 * (devcomm_interop_nvidia.cu). INTEROP_KERNEL and INTEROP_LAUNCH name it per header.
 *
 * Each round, every rank writes its input for the round into its own copy of the window, the
 * ranks meet at the LSA barrier, each block adds every rank's input for its slice (read through
 * ncclGetLsaPointer) into this rank's running sum, and the ranks meet again before the next
 * round overwrites the inputs. Block 0 also reports where the pointer functions point. */
#include <stdint.h>

#define INTEROP_ELEMS_PER_BLOCK 1024
#define INTEROP_IN_OFFSET (64 << 10)   /* inputs, then sums, after the resource buffers */
#define INTEROP_POINTERS 10

/* The input of rank r in round k at element i: small integers, so float sums are exact. */
__host__ __device__ inline float interopInput(uint32_t seed, int r, int k, int i) {
  uint32_t h = seed ^ (uint32_t)(r * 0x9e3779b1u) ^ (uint32_t)(k * 0x85ebca77u) ^ (uint32_t)i;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return (float)(h % 1000u);
}

__global__ void INTEROP_KERNEL(ncclWindow_t win, ncclDevComm comm, uint32_t seed, int round0,
                               int rounds, uintptr_t* pointers) {
  ncclCoopCta cta;
  ncclLsaBarrierSession<ncclCoopCta> bar{cta, comm, ncclTeamLsa(comm), comm.lsaBarrier,
                                         blockIdx.x};
  int elems = INTEROP_ELEMS_PER_BLOCK * gridDim.x;
  float* in = (float*)ncclGetLocalPointer(win, INTEROP_IN_OFFSET);
  float* sum = in + elems;
  for (int k = round0; k < round0 + rounds; k++) {
    for (int i = blockIdx.x * INTEROP_ELEMS_PER_BLOCK + threadIdx.x;
         i < (blockIdx.x + 1) * INTEROP_ELEMS_PER_BLOCK; i += blockDim.x)
      in[i] = interopInput(seed, comm.lsaRank, k, i);
    bar.sync(cta, cuda::memory_order_acq_rel); /* every rank's inputs of round k are written */
    for (int peer = 0; peer < comm.lsaSize; peer++) {
      float* peerIn = (float*)ncclGetLsaPointer(win, INTEROP_IN_OFFSET, peer);
      for (int i = blockIdx.x * INTEROP_ELEMS_PER_BLOCK + threadIdx.x;
           i < (blockIdx.x + 1) * INTEROP_ELEMS_PER_BLOCK; i += blockDim.x)
        sum[i] += peerIn[i];
    }
    bar.sync(cta, cuda::memory_order_acq_rel); /* every rank has read them */
  }
  if (blockIdx.x == 0 && threadIdx.x < 32) {
    int other = 1 - comm.lsaRank;
    ncclWindow_t found = ncclFindWindow(ncclCoopWarp(), comm, (char*)in + 100);
    if (threadIdx.x == 0) {
      pointers[0] = (uintptr_t)ncclGetLocalPointer(win, 8);
      pointers[1] = (uintptr_t)ncclGetLsaPointer(win, 8, 0);
      pointers[2] = (uintptr_t)ncclGetLsaPointer(win, 8, 1);
      pointers[3] = (uintptr_t)ncclGetPeerPointer(win, 8, other);
      pointers[4] = (uintptr_t)ncclGetPeerPointer(win, 8, ncclTeamWorld(comm), other);
      pointers[5] = (uintptr_t)found;
      pointers[6] = (uintptr_t)ncclGetResourceBufferLocalPointer(comm, comm.lsaBarrier.bufHandle);
      pointers[7] = (uintptr_t)ncclGetResourceBufferLsaPointer(comm, comm.lsaBarrier.bufHandle,
                                                               other);
      pointers[8] = (uintptr_t)ncclGetResourceBufferPeerPointer(
          comm, comm.lsaBarrier.bufHandle, ncclTeamLsa(comm), other);
      ncclTeam rail = ncclTeamRail(comm);
      pointers[9] = (uintptr_t)(rail.nRanks * 10000 + rail.rank * 100 + rail.stride);
    }
  }
}

/* Launches the kernel for one rank; devComm holds the 2.30 layout's bytes. */
void INTEROP_LAUNCH(ncclWindow_t win, void const* devComm, uint32_t seed, int round0, int rounds,
                    uintptr_t* pointers, int blocks, cudaStream_t stream) {
  ncclDevComm comm;
  static_assert(sizeof comm == 240, "the 2.30 layout");
  memcpy(&comm, devComm, sizeof comm);
  INTEROP_KERNEL<<<blocks, 256, 0, stream>>>(win, comm, seed, round0, rounds, pointers);
}
