/* The kernels (included once per datatype: device_kernel_<type>.cu): each block runs its work items in order; a work item walks the steps algo.h
 * generates (the same generator the host executor uses) and executes each step, the primitive
 *   out = f(src?, recv slots…) → dst?, send slots…
 * over the connection FIFOs of conn.h with the Simple or the LL protocol.
 *
 * Simple: one thread per connection waits (receive: tail > step; send: head + NSTEPS > step),
 * the block moves the step in 16-byte packs, then one thread publishes sizes and tail (after a
 * system-scope fence, since the reader is a peer GPU, the host or the proxy) and head.
 * LL: every thread moves 8-byte payloads as 16-byte lines {data, flag, data, flag}; a reader
 * polls each line until both flags equal step + 1, so no fence and no tail wait is needed
 * (except when a proxy delivers the bytes: WEFT_CONN_LL_TAIL).
 * Every wait is bounded (dev_sync.cuh); a block that gives up skips the rest of its work and the
 * host reports the communicator failed. */
#ifndef WEFT_DEVICE_KERNEL_CUH
#define WEFT_DEVICE_KERNEL_CUH

#include <stdint.h>
#include <string.h>

#include "device/dev_sync.cuh"
#include "device/dev_types.cuh"
#include "device/device.h"

#define NT 512 /* threads per block */
#define UNROLL 4
#define PROTO_LL 0
#define PROTO_LL128 1
#define PROTO_SIMPLE 2

static_assert(sizeof(weft_dev_launch) <= 32000, "a launch fits the kernel parameter space");

/* A block's view of the connections of the work item it runs: the device work item's roles
 * (WEFT_DEV_MAX_CONNS), not the host's (WEFT_ALGO_MAX_CONNS, twice as many), or a thread per
 * role reads past weft_dev_work.conns into the fields after it. */
#define NC WEFT_DEV_MAX_CONNS
static_assert(NC == sizeof(((weft_dev_work*)0)->conns) / sizeof(uint32_t),
              "one role per entry of the device work item's connections");
struct ConnState {
  weft_fifo_ctrl* ctrl[NC];
  char* buff[NC];
  uint64_t step_bytes[NC];
  uint64_t step[NC];
  uint64_t head[NC]; /* last head seen (send side) */
  int32_t flags[NC];
  int32_t host_mem[NC];
  weft_prim prim;  /* the step: thread 0 works it out, every thread reads it after wait_step */
  /* Zero copy (alg.zero_copy, WEFT_ZC_*). Windows: the peers' sendbuff [0] and recvbuff [1]
   * by direct receive role. Registered buffers: this rank's sendbuff and recvbuff as the peer
   * of each direct send role reaches them (NULL: it cannot, this rank copies to it), and
   * zc_rd, per receive role, where the current step reads what the peer posted (NULL: the
   * slot). */
  char* zc_in[2][WEFT_PRIM_MAX_PEERS];
  char* zc_rd[NC];
  int zc;
  int zc_need_dst; /* registered TwoShot AllReduce: a peer reads recvbuff too */
  int wait_failed; /* set by thread 0 in wait_step, read after its barrier */
  int data_failed; /* set while data moves (LL reads), read after post_step's barrier */
};

template <int DT> struct Red {
  typename Ty<DT>::T scalar;
  int pre;    /* PreMulSum */
  int post_n; /* SumPostDiv divisor, 0: none */
};

/* Out of line: inlined into every step loop of every kernel it would grow the code by a
 * tenth (and the instruction cache's load with it). */
static __device__ __noinline__ void prim_at(const weft_algo* a, int st, uint64_t pc,
                                            weft_prim* out) {
  algo_prim(a, st, pc, out);
}

/* ---- waits ---- */

/* Thread 0 waits for every connection of the step (it also published the previous step, so
 * it reads the step counters it wrote itself); the barrier then releases the block. Two
 * barriers a step in all: this one and post_step's. */
static __device__ int wait_step(ConnState& s, const weft_prim& p, const weft_dev_comm& c,
                                int need_tail) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < p.nrecv; i++) {
      int r = p.recv[i];
      if (!need_tail && !(s.flags[r] & WEFT_CONN_LL_TAIL)) continue;
      uint64_t seen;
      if (wait_counter(&s.ctrl[r]->tail, s.step[r] + 1, c, &seen) != WAIT_OK) {
        s.wait_failed = 1;
      } else if (s.zc == WEFT_ZC_REGISTERED) { /* after tail (acquire): the post is there */
        int slot = (int)(s.step[r] % WEFT_NSTEPS);
        uint64_t tag = ld_acquire_sys(&s.ctrl[r]->zc_post[slot].tag);
        s.zc_rd[r] = p.zc_from && tag == s.step[r] + 1
                         ? (char*)ld_acquire_sys(&s.ctrl[r]->zc_post[slot].buf[p.zc_from - 1])
                         : NULL;
      }
    }
    for (int i = 0; i < p.nsend && !s.wait_failed; i++) {
      int k = p.send[i];
      if (s.step[k] < s.head[k] + WEFT_NSTEPS) continue;
      uint64_t seen;
      if (wait_counter(&s.ctrl[k]->head, s.step[k] + 1 - WEFT_NSTEPS, c, &seen) != WAIT_OK)
        s.wait_failed = 1;
      else
        s.head[k] = seen;
    }
  }
  __syncthreads();
  return s.wait_failed;
}

/* Registered buffers: whether the peer of direct send role k reads this rank's data in place
 * (else this rank copies into its slot). */
static __device__ __forceinline__ int zc_send_in_place(const ConnState& s, int k) {
  int d = k - WEFT_DIRECT_SEND_ROLE0;
  if (d < 0 || d >= WEFT_PRIM_MAX_PEERS || !s.zc_in[0][d]) return 0;
  return !s.zc_need_dst || s.zc_in[1][d] != NULL;
}

/* After the data moved: publish sizes and tail to readers, head to writers.
 * Simple: the slot's bytes must be visible before tail, so a system-scope fence precedes it.
 * LL: the lines carry their own flags; only a reader that waits for tail (a proxy, on host
 * memory) needs sizes and tail, and it needs the fence too. Head needs no fence: the slot's
 * bytes were all read (their values are already stored) before the barrier. */
static __device__ int post_step(ConnState& s, const weft_prim& p, size_t bytes, int proto) {
  __syncthreads();
  int failed = s.data_failed;
  if (threadIdx.x == 0 && !failed) {
    int host = 0;
    for (int i = 0; i < p.nsend; i++)
      if (s.host_mem[p.send[i]]) host = 1;
    int publish = proto == PROTO_SIMPLE || host;
    if (publish && p.nsend) {
      /* Bytes on the wire, for a proxy: LL sends whole lines, flags included. */
      size_t wire = proto == PROTO_LL ? (bytes ? (bytes + 7) / 8 : 1) * 16 : bytes;
      for (int i = 0; i < p.nsend; i++) {
        int k = p.send[i];
        int slot = (int)(s.step[k] % WEFT_NSTEPS);
        if (s.zc == WEFT_ZC_REGISTERED && zc_send_in_place(s, k)) {
          int d = k - WEFT_DIRECT_SEND_ROLE0;
          st_volatile_u64(&s.ctrl[k]->zc_post[slot].buf[0], (uint64_t)s.zc_in[0][d]);
          st_volatile_u64(&s.ctrl[k]->zc_post[slot].buf[1], (uint64_t)s.zc_in[1][d]);
          st_volatile_u64(&s.ctrl[k]->zc_post[slot].tag, s.step[k] + 1);
        }
        st_volatile_u64(&s.ctrl[k]->sizes[slot], wire);
      }
      __threadfence_system();
    }
    for (int i = 0; i < p.nsend; i++) {
      int k = p.send[i];
      if (publish) st_volatile_u64(&s.ctrl[k]->tail, s.step[k] + 1);
      s.step[k]++;
    }
    for (int i = 0; i < p.nrecv; i++) {
      int r = p.recv[i];
      st_volatile_u64(&s.ctrl[r]->head, s.step[r] + 1);
      s.step[r]++;
    }
  }
  /* No barrier: only thread 0 reads the counters before the next step's barrier. */
  return failed;
}

/* ---- Simple: packs of 16 bytes, elements for what is left ---- */

template <int DT> static __device__ __forceinline__ uint4 pre_pack(uint4 v, const Red<DT>& r) {
  uint64_t a = ((uint64_t)v.y << 32) | v.x, b = ((uint64_t)v.w << 32) | v.z;
  a = premul_word<DT>(a, r.scalar);
  b = premul_word<DT>(b, r.scalar);
  return make_uint4((uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32));
}
template <int DT> static __device__ __forceinline__ uint4 post_pack(uint4 v, int n) {
  uint64_t a = ((uint64_t)v.y << 32) | v.x, b = ((uint64_t)v.w << 32) | v.z;
  a = postdiv_word<DT>(a, n);
  b = postdiv_word<DT>(b, n);
  return make_uint4((uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32));
}
template <int DT, int OP> static __device__ __forceinline__ uint4 combine_pack(uint4 v, uint4 w) {
  uint64_t a = ((uint64_t)v.y << 32) | v.x, b = ((uint64_t)v.w << 32) | v.z;
  uint64_t c = ((uint64_t)w.y << 32) | w.x, d = ((uint64_t)w.w << 32) | w.z;
  a = combine_word<DT, OP>(a, c);
  b = combine_word<DT, OP>(b, d);
  return make_uint4((uint32_t)a, (uint32_t)(a >> 32), (uint32_t)b, (uint32_t)(b >> 32));
}

/* ins[] in reduction order (algo.h); ins[srci] is the local source (pre applies to it; -1:
 * none), every other input is a receive slot (read volatile: a peer GPU or the host wrote it). */
template <int DT, int OP>
static __device__ void simple_move(const char* const* ins, int nin, int srci, char* const* outs,
                                   int nout, size_t bytes, int pre, int post_n,
                                   const Red<DT>& r) {
  const int src0 = srci == 0;
  typedef typename Ty<DT>::T T;
  uintptr_t align = 0;
  for (int i = 0; i < nin; i++) align |= (uintptr_t)ins[i];
  for (int i = 0; i < nout; i++) align |= (uintptr_t)outs[i];
  size_t done = 0;
  if ((align & 15) == 0) {
    size_t npack = bytes / 16;
    for (size_t base = threadIdx.x; base < npack; base += (size_t)NT * UNROLL) {
      uint4 acc[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        size_t i = base + (size_t)u * NT;
        if (i < npack)
          acc[u] = src0 ? ((const uint4*)ins[0])[i] : ld_volatile_16((const uint4*)ins[0] + i);
      }
      if (src0 && pre) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u] = pre_pack<DT>(acc[u], r);
      }
      for (int k = 1; k < nin; k++) {
        uint4 in[UNROLL];
        if (k == srci) {
#pragma unroll
          for (int u = 0; u < UNROLL; u++) {
            size_t i = base + (size_t)u * NT;
            if (i < npack) in[u] = ((const uint4*)ins[k])[i];
          }
          if (pre) {
#pragma unroll
            for (int u = 0; u < UNROLL; u++) in[u] = pre_pack<DT>(in[u], r);
          }
        } else {
#pragma unroll
          for (int u = 0; u < UNROLL; u++) {
            size_t i = base + (size_t)u * NT;
            if (i < npack) in[u] = ld_volatile_16((const uint4*)ins[k] + i);
          }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u] = combine_pack<DT, OP>(acc[u], in[u]);
      }
      if (post_n) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc[u] = post_pack<DT>(acc[u], post_n);
      }
      for (int o = 0; o < nout; o++) {
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
          size_t i = base + (size_t)u * NT;
          if (i < npack) ((uint4*)outs[o])[i] = acc[u];
        }
      }
    }
    done = npack * 16;
  }
  /* What is left (or everything, unaligned): element by element. Byte copies use T = uint8. */
  size_t esz = sizeof(T);
  for (size_t e = done / esz + threadIdx.x; e < bytes / esz; e += NT) {
    T v = src0 ? ((const T*)ins[0])[e] : ((const volatile T*)ins[0])[e];
    if (src0 && pre) v = Ty<DT>::premul(v, r.scalar);
    for (int k = 1; k < nin; k++) {
      if (k != srci) {
        v = combine<DT, OP>(v, ((const volatile T*)ins[k])[e]);
        continue;
      }
      T x = ((const T*)ins[k])[e];
      v = combine<DT, OP>(v, pre ? Ty<DT>::premul(x, r.scalar) : x);
    }
    if (post_n) v = Ty<DT>::postdiv(v, post_n);
    for (int o = 0; o < nout; o++) ((T*)outs[o])[e] = v;
  }
}

template <int DT, int OP>
static __device__ int simple_step(ConnState& s, const weft_prim& ps, size_t elem,
                                  const Red<DT>& r, const weft_dev_comm& c) {
  if (wait_step(s, ps, c, 1)) return 1;
  const weft_prim p = ps; /* after the barrier: thread 0 wrote it before */
  size_t bytes = p.nelem * elem;
  const char* ins[1 + WEFT_PRIM_MAX_PEERS];
  char* outs[1 + WEFT_PRIM_MAX_PEERS];
  int nin = 0, nout = 0, srci = -1;
  for (int i = 0; i < p.nrecv; i++) {
    if (p.src && i == p.src_at) ins[srci = nin++] = p.src;
    int k = p.recv[i];
    if (p.zc_from && s.zc == WEFT_ZC_WINDOWS)
      ins[nin++] = s.zc_in[p.zc_from - 1][k] + p.zc_off;
    else if (p.zc_from && s.zc == WEFT_ZC_REGISTERED && s.zc_rd[k])
      ins[nin++] = s.zc_rd[k] + p.zc_off;
    else
      ins[nin++] = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k];
  }
  if (p.src && srci < 0) ins[srci = nin++] = p.src;
  if (p.dst) outs[nout++] = p.dst;
  for (int i = 0; i < p.nsend && s.zc != WEFT_ZC_WINDOWS; i++) { /* windows: a send announces */
    int k = p.send[i];
    if (s.zc == WEFT_ZC_REGISTERED && zc_send_in_place(s, k)) continue; /* it posts instead */
    outs[nout++] = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k];
  }
  if (nin > 0 && nout > 0 && bytes > 0)
    simple_move<DT, OP>(ins, nin, srci, outs, nout, bytes, p.pre && r.pre, p.post ? r.post_n : 0,
                        r);
  return post_step(s, p, bytes, PROTO_SIMPLE);
}

/* ---- LL: 8 payload bytes per 16-byte line ---- */

static __device__ __forceinline__ uint64_t load8(const char* p, size_t n, int is_volatile) {
  if (n >= 8 && ((uintptr_t)p & 7) == 0)
    return is_volatile ? *(const volatile uint64_t*)p : *(const uint64_t*)p;
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 8; i++) v |= (uint64_t)(uint8_t)p[i] << (8 * i);
  return v;
}
static __device__ __forceinline__ void store8(char* p, size_t n, uint64_t v) {
  if (n >= 8 && ((uintptr_t)p & 7) == 0) {
    *(uint64_t*)p = v;
    return;
  }
  for (size_t i = 0; i < n && i < 8; i++) p[i] = (char)(v >> (8 * i));
}

/* Wait until line l of a receive slot carries flag; 0 when the wait gave up. */
static __device__ __forceinline__ int ll_read(const char* line, uint32_t flag,
                                              const weft_dev_comm& c, uint64_t* out) {
  uint64_t start = 0;
  for (uint32_t spins = 0;; spins++) {
    uint4 v = ld_volatile_16(line);
    if (v.y == flag && v.w == flag) {
      *out = ((uint64_t)v.z << 32) | v.x;
      return 1;
    }
    if (spins == 0) start = global_timer_ns();
    if ((spins & 1023) == 1023 && wait_give_up(start, c) != WAIT_OK) return 0;
  }
}

template <int DT, int OP>
static __device__ int ll_step(ConnState& s, const weft_prim& ps, size_t elem, const Red<DT>& r,
                              const weft_dev_comm& c) {
  if (wait_step(s, ps, c, 0)) return 1;
  const weft_prim p = ps; /* after the barrier: thread 0 wrote it before */
  size_t bytes = p.nelem * elem;
  size_t nlines = bytes ? (bytes + 7) / 8 : 1;
  int pre = p.pre && r.pre, post_n = p.post ? r.post_n : 0;
  for (size_t l = threadIdx.x; l < nlines; l += blockDim.x) {
    size_t off = l * 8, n = off < bytes ? bytes - off : 0;
    uint64_t acc = 0, sv = 0;
    int have = 0;
    if (p.src) {
      sv = load8(p.src + off, n, 0);
      if (pre) sv = premul_word<DT>(sv, r.scalar);
      if (p.src_at == 0) acc = sv, have = 1;
    }
    for (int i = 0; i < p.nrecv; i++) {
      int k = p.recv[i];
      const char* line = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k] + l * 16;
      uint64_t v;
      if (!ll_read(line, (uint32_t)(s.step[k] + 1), c, &v)) {
        s.data_failed = 1;
        v = 0;
      }
      acc = have ? combine_word<DT, OP>(acc, v) : v;
      have = 1;
      if (p.src && i + 1 == p.src_at) acc = combine_word<DT, OP>(acc, sv); /* its place */
    }
    if (post_n) acc = postdiv_word<DT>(acc, post_n);
    if (p.dst && n) store8(p.dst + off, n, acc);
    for (int i = 0; i < p.nsend; i++) {
      int k = p.send[i];
      uint32_t flag = (uint32_t)(s.step[k] + 1);
      char* line = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k] + l * 16;
      st_volatile_16(line, make_uint4((uint32_t)acc, flag, (uint32_t)(acc >> 32), flag));
    }
  }
  return post_step(s, p, bytes, PROTO_LL);
}

/* ---- LL128: 120 payload bytes per 128-byte line, the flag in the line's last word ---- */

/* Eight lanes of a warp own a line, 16 bytes each; lane 7 of the eight holds one data word and
 * the flag. A warp moves four lines per instruction, so each line is written by one store
 * instruction and read by one load instruction. */
template <int DT, int OP>
static __device__ int ll128_step(ConnState& s, const weft_prim& ps, size_t elem,
                                 const Red<DT>& r, const weft_dev_comm& c) {
  if (wait_step(s, ps, c, 0)) return 1;
  const weft_prim p = ps; /* after the barrier: thread 0 wrote it before */
  size_t bytes = p.nelem * elem;
  size_t nlines = bytes ? (bytes + WEFT_LL128_LINE_PAYLOAD - 1) / WEFT_LL128_LINE_PAYLOAD : 1;
  int pre = p.pre && r.pre, post_n = p.post ? r.post_n : 0;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  int j = lane & 7, flagger = j == 7;
  for (size_t base = (size_t)warp * 4; base < nlines; base += (size_t)nwarps * 4) {
    size_t line = base + (size_t)(lane >> 3);
    int active = line < nlines;
    size_t off = line * WEFT_LL128_LINE_PAYLOAD + (size_t)j * 16;
    size_t n0 = active && off < bytes ? (bytes - off < 8 ? bytes - off : 8) : 0;
    size_t n1 = !flagger && active && off + 8 < bytes ? (bytes - off - 8 < 8 ? bytes - off - 8 : 8)
                                                       : 0;
    uint64_t a0 = 0, a1 = 0, s0 = 0, s1 = 0;
    int have = 0;
    if (p.src) {
      s0 = load8(p.src + off, n0, 0);
      s1 = load8(p.src + off + 8, n1, 0);
      if (pre) {
        s0 = premul_word<DT>(s0, r.scalar);
        s1 = premul_word<DT>(s1, r.scalar);
      }
      if (p.src_at == 0) a0 = s0, a1 = s1, have = 1;
    }
    for (int i = 0; i < p.nrecv; i++) {
      int k = p.recv[i];
      const char* lp = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k] +
                       line * WEFT_LL128_LINE_BYTES + (size_t)j * 16;
      uint64_t flag = s.step[k] + 1, v0 = 0, v1 = 0, start = 0;
      for (uint32_t spins = 0;; spins++) {
        if (active) ld_volatile_2u64(lp, &v0, &v1);
        int mine = !active || v1 == flag; /* meaningful in lane 7 of each eight */
        int ok = __shfl_sync(0xffffffffu, mine, lane | 7);
        if (__all_sync(0xffffffffu, ok)) break;
        if (spins == 0) start = global_timer_ns();
        if ((spins & 1023) != 1023) continue;
        int why = lane == 0 ? wait_give_up(start, c) : WAIT_OK; /* one lane asks, all follow */
        if (__shfl_sync(0xffffffffu, why, 0) != WAIT_OK) {
          s.data_failed = 1;
          v0 = v1 = 0;
          break;
        }
      }
      a0 = have ? combine_word<DT, OP>(a0, v0) : v0;
      if (!flagger) a1 = have ? combine_word<DT, OP>(a1, v1) : v1;
      have = 1;
      if (p.src && i + 1 == p.src_at) { /* the local source at its place */
        a0 = combine_word<DT, OP>(a0, s0);
        if (!flagger) a1 = combine_word<DT, OP>(a1, s1);
      }
    }
    if (post_n) {
      a0 = postdiv_word<DT>(a0, post_n);
      a1 = postdiv_word<DT>(a1, post_n);
    }
    if (p.dst) {
      if (n0) store8(p.dst + off, n0, a0);
      if (n1) store8(p.dst + off + 8, n1, a1);
    }
    for (int i = 0; i < p.nsend; i++) {
      int k = p.send[i];
      char* lp = s.buff[k] + (s.step[k] % WEFT_NSTEPS) * s.step_bytes[k] +
                 line * WEFT_LL128_LINE_BYTES + (size_t)j * 16;
      uint64_t flag = s.step[k] + 1;
      __syncwarp(); /* the eight lanes of a line store in one instruction */
      if (active) st_volatile_2u64(lp, a0, flagger ? flag : a1);
    }
  }
  return post_step(s, p, bytes, PROTO_LL128);
}

/* ---- work items ---- */

template <int DT, int OP>
static __device__ int run_work(ConnState& s, const weft_dev_work& w, const weft_dev_comm& c) {
  typedef typename Ty<DT>::T T;
  /* One thread per connection role: the loads overlap instead of queueing. */
  if (threadIdx.x == 0) s.wait_failed = s.data_failed = 0;
  if (threadIdx.x < NC) {
    int k = threadIdx.x;
    uint32_t ix = w.conns[k];
    if (ix) {
      const weft_dev_conn* d = c.conns + (ix - 1);
      s.ctrl[k] = d->ctrl;
      s.buff[k] = d->buff;
      s.step_bytes[k] = d->step_bytes;
      s.step[k] = d->step;
      s.head[k] = d->head_seen;
      s.flags[k] = d->flags;
      s.host_mem[k] = d->host_mem;
    }
  }
  const weft_algo& a = w.alg;
  if (threadIdx.x == 0) {
    s.zc = a.zero_copy;
    s.zc_need_dst = a.func == WEFT_FN_ALLREDUCE && a.algo == WEFT_ALGO_TWOSHOT_ID;
  }
  if (a.zero_copy && threadIdx.x >= 32 && threadIdx.x < 32 + 2 * WEFT_PRIM_MAX_PEERS) {
    int t = threadIdx.x - 32, which = t / WEFT_PRIM_MAX_PEERS, k = t % WEFT_PRIM_MAX_PEERS;
    /* k: the peer of direct receive role k, and of send role WEFT_DIRECT_SEND_ROLE0 + k */
    int q = (a.rank + k + 1) % a.nranks;
    if (a.zero_copy == WEFT_ZC_REGISTERED) {
      char* b = k < a.nranks - 1 && a.zc.peers[which] ? a.zc.peers[which][q] : NULL;
      s.zc_in[which][k] = b ? b + a.zc.off[which] : NULL;
    } else if (k < a.nranks - 1 && a.zc.peers[which]) {
      s.zc_in[which][k] = a.zc.peers[which][q] + a.zc.off[which] +
                          (which == 0 ? (uint64_t)q * a.zc.src_stride : 0);
    }
  }
  Red<DT> r;
  r.pre = w.redop == WEFT_DRED_PREMULSUM;
  r.post_n = w.redop == WEFT_DRED_SUMPOSTDIV ? w.nranks_div : 0;
  if (w.scalar_ptr)
    r.scalar = *(const T*)w.scalar_ptr; /* read when the kernel runs, in stream order */
  else
    memcpy(&r.scalar, &w.scalar, sizeof(T));
  __syncthreads();
  uint64_t n = a.npc[0] > a.npc[1] ? a.npc[0] : a.npc[1];
  int nstreams = a.npc[1] ? 2 : 1;
  /* A tree's two streams interleave step by step: up i, then down i. Up i only needs the
   * children's up i, down i only the parent's down i, so no rank waits on itself. */
  int failed = 0; /* the steps' answers, the same in every thread */
  for (uint64_t pc = 0; pc < n && !failed; pc++) {
    for (int st = 0; st < nstreams && !failed; st++) {
      if (pc >= a.npc[st]) continue; /* the only case algo_prim has no step for */
      /* One thread works the step out (its divisions are a long chain: every warp doing it
       * only queues them); the others read it from shared memory after wait_step's barrier,
       * and thread 0 writes the next only after post_step's. Working it out during the
       * previous step instead, on a thread that also moves data, measured slower from 8 KiB. */
      if (threadIdx.x == 0) prim_at(&a, st, pc, &s.prim);
      if (w.proto == PROTO_LL)
        failed = ll_step<DT, OP>(s, s.prim, a.elem, r, c);
      else if (w.proto == PROTO_LL128)
        failed = ll128_step<DT, OP>(s, s.prim, a.elem, r, c);
      else
        failed = simple_step<DT, OP>(s, s.prim, a.elem, r, c);
    }
  }
  if (a.zero_copy && !failed) {
    /* Zero copy: peers read this rank's buffers until they publish head for every step they
     * were sent; the next operation may write them only after that. */
    if (threadIdx.x == 0) {
      for (int k = WEFT_DIRECT_SEND_ROLE0; k < NC && !s.wait_failed; k++) {
        uint64_t seen;
        if (!w.conns[k] || s.head[k] >= s.step[k]) continue;
        if (wait_counter(&s.ctrl[k]->head, s.step[k], c, &seen) != WAIT_OK)
          s.wait_failed = 1;
        else
          s.head[k] = seen;
      }
    }
    __syncthreads();
    failed = s.wait_failed;
  }
  __syncthreads();
  if (threadIdx.x < NC && w.conns[threadIdx.x]) {
    weft_dev_conn* d = c.conns + (w.conns[threadIdx.x] - 1);
    d->step = s.step[threadIdx.x];
    d->head_seen = s.head[threadIdx.x];
  }
  __syncthreads();
  return failed;
}

static __device__ int func_reduces(int func) {
  return func == WEFT_FN_ALLREDUCE || func == WEFT_FN_REDUCE || func == WEFT_FN_REDUCESCATTER;
}

/* Separate functions, not inlined into one another: ptxas then allocates each on its own (one
 * kernel inlining every type and op takes it many minutes and gigabytes). */
static __device__ __noinline__ int run_copy(ConnState& s, const weft_dev_work& w,
                                            const weft_dev_comm& c) {
  return run_work<DT_UINT8, OP_SUM>(s, w, c); /* a copy: bytes are bytes */
}

template <int DT, int OP>
static __device__ __noinline__ int run_reduce(ConnState& s, const weft_dev_work& w,
                                              const weft_dev_comm& c) {
  return run_work<DT, OP>(s, w, c);
}

/* One kernel per datatype, operator and parameter size; copies (Broadcast, AllGather, Send,
 * Recv) ride along in any of them. */
template <int DT, int OP, typename LT>
__global__ void __launch_bounds__(NT, 1) weft_kernel(const __grid_constant__ LT L) {
  __shared__ ConnState s;
  int b = blockIdx.x;
  unsigned long long* prof = L.comm.prof_ts;
  if (prof && threadIdx.x == 0) prof[2 * b] = global_timer_ns();
  for (int i = L.block_first[b]; i < L.block_end[b]; i++) {
    const weft_dev_work& w = L.works[i];
    int failed = func_reduces(w.alg.func) ? run_reduce<DT, OP>(s, w, L.comm)
                                          : run_copy(s, w, L.comm);
    if (failed) break; /* the connections are out of step: the host reports the comm failed */
  }
  if (prof) {
    __syncthreads(); /* every thread's part is done */
    if (threadIdx.x == 0) {
      prof[2 * b + 1] = global_timer_ns();
      __threadfence_system();
    }
  }
}

template <int DT, int OP>
static int launch_kernel(const weft_dev_launch* l, cudaStream_t st) {
  dim3 grid(l->nblocks), block(NT);
  if (l->nworks <= WEFT_DEV_SMALL && l->nblocks <= WEFT_DEV_SMALL) {
    weft_dev_launch_small sl;
    sl.comm = l->comm;
    sl.nblocks = l->nblocks;
    sl.nworks = l->nworks;
    memcpy(sl.block_first, l->block_first, sizeof sl.block_first);
    memcpy(sl.block_end, l->block_end, sizeof sl.block_end);
    memcpy(sl.works, l->works, sizeof(weft_dev_work) * (size_t)l->nworks);
    weft_kernel<DT, OP, weft_dev_launch_small><<<grid, block, 0, st>>>(sl);
  } else {
    weft_kernel<DT, OP, weft_dev_launch><<<grid, block, 0, st>>>(*l);
  }
  return (int)cudaGetLastError();
}

/* The launcher each datatype's file defines: the kernel of op (a WEFT_DRED_* value). */
#define WEFT_DEFINE_LAUNCHER(NAME, DT)                                     \
  extern "C" int NAME(int redop, const weft_dev_launch* l, void* stream) { \
    cudaStream_t st = (cudaStream_t)stream;                                \
    switch (redop) {                                                       \
      case WEFT_DRED_PROD: return launch_kernel<DT, OP_PROD>(l, st);       \
      case WEFT_DRED_MAX: return launch_kernel<DT, OP_MAX>(l, st);         \
      case WEFT_DRED_MIN: return launch_kernel<DT, OP_MIN>(l, st);         \
      default: return launch_kernel<DT, OP_SUM>(l, st);                    \
    }                                                                      \
  }

#endif
