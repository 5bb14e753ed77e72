/* weft's statement of the proxy GIN contract (abi/gin/gin_proxy_v2_30.h) against NVIDIA's
 * 2.30.7 header (nccl_device/gin/proxy/gin_proxy_device_host_common.h), compiled together:
 *  - the per-context struct: size and every field's offset and size;
 *  - descriptors: on random fields (seed argv[1]), one built through NVIDIA's bitfields the way
 *    its kernels fill them and one built by weft's ncclGinProxyV2_30Build must be the same 128
 *    bytes, and weft's decoders must read back every field from NVIDIA's.
 * Prints one line per failure and "ok N" at the end; exit 1 on any failure. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "nccl_device/gin/proxy/gin_proxy_device_host_common.h"

#include "gin/gin_proxy_v2_30.h"

static int failures = 0, checks = 0;
#define CHECK(cond, ...)                \
  do {                                  \
    checks++;                           \
    if (!(cond)) {                      \
      failures++;                       \
      std::printf("FAIL: " __VA_ARGS__); \
      std::printf("\n");                \
    }                                   \
  } while (0)

#define SAME_FIELD(nv, weft, f)                                                          \
  CHECK(offsetof(nv, f) == offsetof(weft, f) && sizeof(((nv*)0)->f) == sizeof(((weft*)0)->f), \
        "%s.%s: NVIDIA offset %zu size %zu, weft offset %zu size %zu", #weft, #f,         \
        offsetof(nv, f), sizeof(((nv*)0)->f), offsetof(weft, f), sizeof(((weft*)0)->f))

static uint64_t state;
static uint64_t rnd(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
static uint64_t bitsOf(int n) { return n == 64 ? rnd() : rnd() & ((UINT64_C(1) << n) - 1); }

/* NVIDIA's kernel-side fill, written against NVIDIA's union members (fields as in its buildGfd). */
static void nvidiaBuild(ncclGinProxyGfd_t* gfd, const ncclGinProxyV2_30Fields* f) {
  std::memset(gfd, 0, sizeof *gfd);
  for (int i = 0; i < ncclGinProxyGfdQwords; i++) gfd->qword[i].flag.v = 1;
  gfd->qword[ncclGinProxyGfdHeader].header.version = NCCL_GIN_PROXY_GFD_VERSION;
  gfd->qword[ncclGinProxyGfdHeader].header.size = f->size;
  gfd->qword[ncclGinProxyGfdHeaderExt].headerExt.op = (uint16_t)f->op;
  if (f->op & ncclGinProxyOpFlush) return;
  if (f->op & ncclGinProxyOpWithInline) {
    gfd->qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow = (uint32_t)f->value;
    gfd->qword[ncclGinProxyGfdInlineLow].inlineLow.inlineValLow2 = (uint16_t)(f->value >> 32);
    gfd->qword[ncclGinProxyGfdInlineHigh].inlineHigh.inlineValHigh = (uint16_t)(f->value >> 48);
  } else {
    gfd->qword[ncclGinProxyGfdSrcOff].srcOff.srcOff = f->src_off;
    gfd->qword[ncclGinProxyGfdSrcHandle].srcHandle.srcHandle = f->src_handle;
  }
  gfd->qword[ncclGinProxyGfdDstOff].dstOff.dstOff = f->dst_off;
  gfd->qword[ncclGinProxyGfdDstHandle].dstHandle.dstHandle = f->dst_handle;
  gfd->qword[ncclGinProxyGfdCompletion].completion.counterId = f->counter_id;
  gfd->qword[ncclGinProxyGfdCompletion].completion.signalId = f->signal_id;
  gfd->qword[ncclGinProxyGfdCompletion].completion.signalValLow = (uint16_t)f->signal_value;
  gfd->qword[ncclGinProxyGfdSignalVal].signalVal.signalValLow2 = (uint16_t)(f->signal_value >> 16);
  gfd->qword[ncclGinProxyGfdSignalVal].signalVal.signalValHigh = (uint32_t)(f->signal_value >> 32);
  gfd->qword[ncclGinProxyGfdSignalVal].signalVal.isStrongSignal = f->strong ? 1 : 0;
}

int main(int argc, char** argv) {
  uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  state = seed ? seed : 1;
  std::printf("seed %llu\n", (unsigned long long)seed);

  typedef ncclGinProxyGpuCtx_t nv;
  typedef ncclGinProxyGpuCtx_v2_30_t wt;
  CHECK(sizeof(nv) == sizeof(wt), "sizeof ncclGinProxyGpuCtx: NVIDIA %zu, weft %zu", sizeof(nv),
        sizeof(wt));
  SAME_FIELD(nv, wt, nranks);
  SAME_FIELD(nv, wt, queueSize);
  SAME_FIELD(nv, wt, queues);
  SAME_FIELD(nv, wt, pis);
  SAME_FIELD(nv, wt, cis);
  SAME_FIELD(nv, wt, counters);
  SAME_FIELD(nv, wt, signals);
  SAME_FIELD(nv, wt, signalOffsets);
  SAME_FIELD(nv, wt, lastIssuedGet);
  SAME_FIELD(nv, wt, lastVisibleGet);
  CHECK(sizeof(ncclGinProxyGfd_t) == sizeof(ncclGinProxyGfd_v2_30_t), "sizeof GFD");
  CHECK(NCCL_GIN_PROXY_GFD_VERSION == NCCL_GIN_PROXY_V2_30_GFD_VERSION, "GFD version");
  CHECK(NCCL_GIN_PROXY_VERSION == NCCL_GIN_PROXY_V2_30_NET_DEVICE_VERSION, "proxy version");
  const struct { unsigned nv, weft; const char* name; } ops[] = {
    {ncclGinProxyOpPut, NCCL_GIN_PROXY_V2_30_OP_PUT, "Put"},
    {ncclGinProxyOpWithInline, NCCL_GIN_PROXY_V2_30_OP_WITH_INLINE, "WithInline"},
    {ncclGinProxyOpWithCounter, NCCL_GIN_PROXY_V2_30_OP_WITH_COUNTER, "WithCounter"},
    {ncclGinProxyOpWithSignalInc, NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_INC, "WithSignalInc"},
    {ncclGinProxyOpWithSignalAdd, NCCL_GIN_PROXY_V2_30_OP_WITH_SIGNAL_ADD, "WithSignalAdd"},
    {ncclGinProxyOpVASignal, NCCL_GIN_PROXY_V2_30_OP_VA_SIGNAL, "VASignal"},
    {ncclGinProxyOpGet, NCCL_GIN_PROXY_V2_30_OP_GET, "Get"},
    {ncclGinProxyOpFlush, NCCL_GIN_PROXY_V2_30_OP_FLUSH, "Flush"}};
  for (const auto& o : ops)
    CHECK(o.nv == o.weft, "op %s: NVIDIA %#x, weft %#x", o.name, o.nv, o.weft);
  const int qidx[][2] = {
    {ncclGinProxyGfdHeader, NCCL_GIN_PROXY_V2_30_Q_HEADER},
    {ncclGinProxyGfdInlineLow, NCCL_GIN_PROXY_V2_30_Q_INLINE_LOW},
    {ncclGinProxyGfdInlineHigh, NCCL_GIN_PROXY_V2_30_Q_INLINE_HIGH},
    {ncclGinProxyGfdSrcOff, NCCL_GIN_PROXY_V2_30_Q_SRC_OFF},
    {ncclGinProxyGfdSrcHandle, NCCL_GIN_PROXY_V2_30_Q_SRC_HANDLE},
    {ncclGinProxyGfdVASignalOff, NCCL_GIN_PROXY_V2_30_Q_VA_SIGNAL_OFF},
    {ncclGinProxyGfdVASignalHandle, NCCL_GIN_PROXY_V2_30_Q_VA_SIGNAL_HANDLE},
    {ncclGinProxyGfdDstOff, NCCL_GIN_PROXY_V2_30_Q_DST_OFF},
    {ncclGinProxyGfdDstHandle, NCCL_GIN_PROXY_V2_30_Q_DST_HANDLE},
    {ncclGinProxyGfdCompletion, NCCL_GIN_PROXY_V2_30_Q_COMPLETION},
    {ncclGinProxyGfdSignalVal, NCCL_GIN_PROXY_V2_30_Q_SIGNAL_VAL},
    {ncclGinProxyGfdHeaderExt, NCCL_GIN_PROXY_V2_30_Q_HEADER_EXT},
    {ncclGinProxyGfdQwords, NCCL_GIN_PROXY_V2_30_QWORDS}};
  for (const auto& q : qidx) CHECK(q[0] == q[1], "qword index: NVIDIA %d, weft %d", q[0], q[1]);

  const unsigned opChoices[] = {
    ncclGinProxyOpPut,
    ncclGinProxyOpPut | ncclGinProxyOpWithSignalInc,
    ncclGinProxyOpPut | ncclGinProxyOpWithSignalAdd | ncclGinProxyOpWithCounter,
    ncclGinProxyOpPut | ncclGinProxyOpWithInline | ncclGinProxyOpWithSignalAdd,
    ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd,
    ncclGinProxyOpGet,
    ncclGinProxyOpFlush};
  const int rounds = 20000;
  for (int i = 0; i < rounds; i++) {
    ncclGinProxyV2_30Fields f;
    std::memset(&f, 0, sizeof f);
    f.op = opChoices[rnd() % (sizeof opChoices / sizeof opChoices[0])];
    f.size = bitsOf(57);
    f.value = bitsOf(64);
    f.src_off = bitsOf(63);
    f.src_handle = bitsOf(63);
    f.dst_off = bitsOf(63);
    f.dst_handle = bitsOf(63);
    f.counter_id = (uint32_t)bitsOf(23);
    f.signal_id = (uint32_t)bitsOf(24);
    f.signal_value = bitsOf(64);
    f.strong = (int)(rnd() & 1);
    ncclGinProxyGfd_t nvg;
    ncclGinProxyGfd_v2_30_t wg;
    nvidiaBuild(&nvg, &f);
    ncclGinProxyV2_30Build(&wg, &f);
    if (std::memcmp(&nvg, &wg, sizeof wg) != 0) {
      for (int q = 0; q < 16; q++) {
        uint64_t a;
        std::memcpy(&a, &nvg.qword[q], 8);
        CHECK(a == wg.qword[q], "round %d op %#x qword %d: NVIDIA %016llx, weft %016llx", i, f.op,
              q, (unsigned long long)a, (unsigned long long)wg.qword[q]);
      }
      continue;
    }
    ncclGinProxyGfd_v2_30_t d;
    std::memcpy(&d, &nvg, sizeof d);
    CHECK(ncclGinProxyV2_30Op(&d) == f.op, "round %d: op", i);
    CHECK(ncclGinProxyV2_30Version(&d) == NCCL_GIN_PROXY_GFD_VERSION, "round %d: version", i);
    CHECK(ncclGinProxyV2_30Size(&d) == f.size, "round %d: size", i);
    if (f.op & ncclGinProxyOpFlush) continue;
    if (f.op & ncclGinProxyOpWithInline) {
      CHECK(ncclGinProxyV2_30Inline(&d) == f.value, "round %d: inline value", i);
    } else {
      CHECK(ncclGinProxyV2_30Word63(&d, NCCL_GIN_PROXY_V2_30_Q_SRC_OFF) == f.src_off,
            "round %d: srcOff", i);
      CHECK(ncclGinProxyV2_30Word63(&d, NCCL_GIN_PROXY_V2_30_Q_SRC_HANDLE) == f.src_handle,
            "round %d: srcHandle", i);
    }
    CHECK(ncclGinProxyV2_30Word63(&d, NCCL_GIN_PROXY_V2_30_Q_DST_OFF) == f.dst_off,
          "round %d: dstOff", i);
    CHECK(ncclGinProxyV2_30Word63(&d, NCCL_GIN_PROXY_V2_30_Q_DST_HANDLE) == f.dst_handle,
          "round %d: dstHandle", i);
    CHECK(ncclGinProxyV2_30CounterId(&d) == f.counter_id, "round %d: counterId", i);
    CHECK(ncclGinProxyV2_30SignalId(&d) == f.signal_id, "round %d: signalId", i);
    CHECK(ncclGinProxyV2_30SignalValue(&d) == f.signal_value, "round %d: signal value", i);
    CHECK(ncclGinProxyV2_30Strong(&d) == f.strong, "round %d: strong", i);
    for (int q = 0; q < 16; q++) CHECK((d.qword[q] & 1) == 1, "round %d: valid bit %d", i, q);
  }
  std::printf("%s %d checks, %d failed (seed %llu)\n", failures ? "FAILED" : "ok", checks,
              failures, (unsigned long long)seed);
  return failures ? 1 : 0;
}
