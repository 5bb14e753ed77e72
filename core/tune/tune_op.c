/* The whole choice for one operation, asked by plan/ (and weftCommTuneQuery): algorithm,
 * protocol and channels for a collective or a point-to-point transfer. The one owner of every
 * such rule:
 *
 *  - host communicators: the cost model and the tuner plugin (tune_decide);
 *  - device communicators: the rule measured on 2x H200 NVLink (docs/perf-notes.md) stands in
 *    for the cost model, which is NCCL's and describes NCCL's kernels: LL up to 64 KiB, LL128 to
 *    512 KiB where every peer is peer-to-peer, Simple beyond; OneShot for AllReduce up to 64 KiB
 *    where every peer is peer-to-peer, else the ring, unless NCCL_ALGO asks for another (the
 *    logarithmic algorithms only when it leaves nothing else); a channel per 8 KiB (LL),
 *    32 KiB (LL128) or 64 KiB (Simple), up to the communicator's. A
 *    tuner plugin sees the model's table and overrides the rule by editing it or by setting a
 *    channel count (tune_decide_from);
 *  - direct and logarithmic algorithms connect every pair on each channel they use: at most
 *    WEFT_DIRECT_MAX_CHANNELS (applied to a tuner's count too);
 *  - point-to-point: LL up to 16 KiB (when NCCL_PROTO allows LL for AllReduce), a channel per
 *    512 KiB; on devices every peer's channel is a block of its own in one launch, so an
 *    all-to-all of every peer must fit one launch (a function of nranks alone, so both ends of
 *    a transfer cut it alike);
 *  - zero copy (device, the op's buffers in windows every peer mapped): the direct algorithms
 *    read the peers' buffers in place. By default (WEFT_ZERO_COPY=1) only where that measured
 *    faster, on ranks sharing one H200 under graphs: OneShot AllReduce out of place above
 *    64 KiB and up to 256 KiB (0.52-0.67x the copy path's time at 256 KiB). Below, LL's one
 *    store per line beats zero copy's fenced announcement, read and drain; above, 8 channels
 *    reading peers lost to the ring (1.1-2.2x at 1-16 MiB), as did AllGather and in-place
 *    TwoShot. WEFT_ZERO_COPY=2 takes it wherever a direct algorithm can: AllReduce OneShot out
 *    of place up to 256 KiB and TwoShot otherwise (in place, OneShot would overwrite what peers
 *    still read), the other collectives OneShot, every size. Only where NCCL_ALGO allows the
 *    algorithm and NCCL_PROTO allows Simple (whose head/tail counters carry the
 *    announcements); a channel per 64 KiB. A tuner that changes the choice is obeyed, and its
 *    direct choices run zero copy;
 *  - chunking: a step carries as much as one FIFO slot of the protocol holds (tune_chunk_bytes). */
#include "tune/tune.h"

#include "transport/conn.h"
#include "util/check.h"
#include "util/log.h"
#include "util/names.h"

/* The rule's thresholds, as data. */
static const struct {
  size_t ll_max, ll128_max, oneshot_max;
  size_t per_channel[NCCL_NUM_PROTOCOLS]; /* LL, LL128, Simple */
} device_rule = {65536, 512u * 1024u, 65536, {8192, 32768, 65536}};

static const struct {
  size_t min_bytes, oneshot_max, per_channel;
} zc_rule = {65536, 262144, 65536};

static const struct {
  size_t ll_max, bytes_per_channel;
} p2p_rule = {16384, 512u * 1024u};

static size_t divup(size_t a, size_t b) { return (a + b - 1) / b; }

static int clamp_channels(size_t n, int max) {
  return n < 1 ? 1 : (n > (size_t)max ? max : (int)n);
}

/* The algorithm of the device rule: OneShot for small AllReduce where it may run, else the
 * ring; what NCCL_ALGO leaves when it excludes the ring (OneShot, TwoShot, Tree, then the
 * logarithmic algorithms). */
static int device_rule_algo(const weft_tune_ask* a, int func, size_t nbytes, unsigned algos) {
  const unsigned one = 1u << WEFT_ALGO_ONESHOT_ID, two = 1u << WEFT_ALGO_TWOSHOT_ID;
  unsigned usable = algos & tune_func_algos((ncclFunc_t)func);
  if (a->nranks > WEFT_DIRECT_MAX_RANKS) usable &= ~(one | two);
  if (func == ncclFuncAllReduce && (usable & one) && a->nranks > 1 &&
      nbytes <= device_rule.oneshot_max && a->all_p2p)
    return WEFT_ALGO_ONESHOT_ID;
  if (usable & (1u << NCCL_ALGO_RING)) return NCCL_ALGO_RING;
  if (usable & one) return WEFT_ALGO_ONESHOT_ID;
  if (usable & two) return WEFT_ALGO_TWOSHOT_ID;
  if ((usable & (1u << NCCL_ALGO_TREE)) || a->nranks > WEFT_LOG_DEV_MAX_RANKS) return NCCL_ALGO_TREE;
  /* The logarithmic ones, where NCCL_ALGO leaves nothing else: recursive doubling for small
   * AllReduce and Rabenseifner beyond when both are allowed; PAT's slot and Binomial are the
   * only log algorithm of their collectives. */
  const unsigned rd = 1u << WEFT_ALGO_RECDOUBLING_ID, rab = 1u << WEFT_ALGO_RABENSEIFNER_ID;
  if ((usable & rd) && (!(usable & rab) || nbytes <= device_rule.oneshot_max))
    return WEFT_ALGO_RECDOUBLING_ID;
  if (usable & rab) return WEFT_ALGO_RABENSEIFNER_ID;
  if (usable & (1u << NCCL_ALGO_PAT)) return NCCL_ALGO_PAT;
  if (usable & (1u << WEFT_ALGO_BINOMIAL_ID)) return WEFT_ALGO_BINOMIAL_ID;
  return NCCL_ALGO_TREE;
}

ncclResult_t tune_device_rule(const weft_tune_ask* a, int func, size_t nbytes,
                              weft_default_choice* r) {
  unsigned algos = a->mask->algo[func], protos = a->mask->proto[func];
  r->algo = device_rule_algo(a, func, nbytes, algos);
  if (!(algos & (1u << r->algo))) {
    WARN("rank %d: NCCL_ALGO leaves no algorithm the device executor has for %s", a->rank,
         weft_func_name(func));
    return ncclInvalidUsage;
  }
  int has_ll = (protos & (1u << NCCL_PROTO_LL)) != 0;
  int has_ll128 = (protos & (1u << NCCL_PROTO_LL128)) != 0; /* P2P everywhere (datapath) */
  int has_simple = (protos & (1u << NCCL_PROTO_SIMPLE)) != 0;
  if (has_ll && (nbytes <= device_rule.ll_max || !(has_ll128 || has_simple)))
    r->proto = NCCL_PROTO_LL;
  else if (has_ll128 && (nbytes <= device_rule.ll128_max || !has_simple))
    r->proto = NCCL_PROTO_LL128;
  else
    r->proto = NCCL_PROTO_SIMPLE;
  for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++)
    r->nchannels[q] = clamp_channels(divup(nbytes, device_rule.per_channel[q]), a->max_channels);
  return ncclSuccess;
}

static int direct_channels(int algo, int nch) {
  int direct = algo == WEFT_ALGO_ONESHOT_ID || algo == WEFT_ALGO_TWOSHOT_ID || algo_is_log(algo);
  return direct && nch > WEFT_DIRECT_MAX_CHANNELS ? WEFT_DIRECT_MAX_CHANNELS : nch;
}

/* Zero copy may run algo on func: a direct algorithm that writes nothing a peer has yet to read
 * (in-place OneShot AllReduce would overwrite its src while peers read it). */
static int zero_copy_safe(int func, int algo, int in_place) {
  return algo == WEFT_ALGO_TWOSHOT_ID ||
         (algo == WEFT_ALGO_ONESHOT_ID && !(func == ncclFuncAllReduce && in_place));
}

/* Zero copy: the direct algorithm for func where the masks allow one; -1 when none. */
static int zero_copy_algo(const weft_tune_ask* a, int func, size_t nbytes) {
  const unsigned one = 1u << WEFT_ALGO_ONESHOT_ID, two = 1u << WEFT_ALGO_TWOSHOT_ID;
  unsigned algos = a->mask->algo[func] & tune_func_algos((ncclFunc_t)func);
  if (!(a->mask->proto[func] & (1u << NCCL_PROTO_SIMPLE)) || a->nranks < 2 ||
      a->nranks > WEFT_DIRECT_MAX_RANKS)
    return -1;
  int one_ok = (algos & one) && zero_copy_safe(func, WEFT_ALGO_ONESHOT_ID, a->in_place);
  if (a->zero_copy < 2) /* where it measured faster */
    return func == ncclFuncAllReduce && one_ok && nbytes > zc_rule.min_bytes &&
                   nbytes <= zc_rule.oneshot_max
               ? WEFT_ALGO_ONESHOT_ID
               : -1;
  if (func == ncclFuncAllReduce) {
    if (one_ok && nbytes <= zc_rule.oneshot_max) return WEFT_ALGO_ONESHOT_ID;
    if (algos & two) return WEFT_ALGO_TWOSHOT_ID;
  }
  return one_ok ? WEFT_ALGO_ONESHOT_ID : -1;
}

static int zero_copy_channels(const weft_tune_ask* a, size_t nbytes) {
  int maxch = a->max_channels < WEFT_DIRECT_MAX_CHANNELS ? a->max_channels
                                                         : WEFT_DIRECT_MAX_CHANNELS;
  return clamp_channels(divup(nbytes, zc_rule.per_channel), maxch);
}

static void p2p_choice(const weft_tune_ask* a, size_t bytes, weft_op_choice* out) {
  out->algo = NCCL_ALGO_RING;
  int ll_ok = (a->mask->proto[ncclFuncAllReduce] & (1u << NCCL_PROTO_LL)) != 0;
  out->proto = bytes <= p2p_rule.ll_max && ll_ok ? NCCL_PROTO_LL : NCCL_PROTO_SIMPLE;
  int maxch = a->max_channels;
  if (a->launch_blocks > 0 && a->nranks > 1) {
    int fit = a->launch_blocks / (2 * (a->nranks - 1));
    if (fit < 1) fit = 1;
    if (maxch > fit) maxch = fit;
  }
  out->nchannels = bytes == 0 ? 0 : clamp_channels(divup(bytes, p2p_rule.bytes_per_channel), maxch);
}

/* CollNet: whether the plugin reduces the op's (type, operator), as every rank agreed. */
static int collnet_pair_ok(const weft_tune* t, const weft_tune_ask* a) {
  if (a->dtype < 0 || a->dtype >= ncclNumTypes || a->redop < ncclSum || a->redop > ncclMin)
    return 0;
  return (t->collnet_pairs >> (a->dtype * ncclNumOps + a->redop)) & 1;
}

/* The host's mask for func without CollNetChain where it cannot run (no usable plugin, or the
 * op's type and operator unsupported), in *tmp. CollNetDirect is never in the executor's caps
 * (weft's CollNet has the chain's shape, algo/algo_collnet.h). A mask that allowed nothing else
 * falls back to every algorithm. An INFO line says why where a plugin was usable or the mask
 * was emptied (not for queries). */
static const weft_algo_proto_mask* collnet_mask(const weft_tune* t, const weft_tune_ask* a,
                                                int func, size_t nbytes,
                                                weft_algo_proto_mask* tmp) {
  const unsigned cn = (1u << NCCL_ALGO_COLLNET_DIRECT) | (1u << NCCL_ALGO_COLLNET_CHAIN);
  if (func != ncclFuncAllReduce || !(a->mask->algo[func] & cn)) return a->mask;
  int plugin = t && t->collnet_pairs, usable = plugin && collnet_pair_ok(t, a);
  unsigned caps = t ? t->caps.algos : ~0u;
  *tmp = *a->mask;
  if (!usable) tmp->algo[func] &= ~(1u << NCCL_ALGO_COLLNET_CHAIN);
  int emptied = (tmp->algo[func] & caps & tune_func_algos(ncclFuncAllReduce)) == 0;
  if (emptied) tmp->algo[func] = ~cn;
  if (!a->quiet && (emptied || (plugin && !usable))) {
    const char* tail = emptied ? "; NCCL_ALGO allowed nothing else, so the model chooses" : "";
    if (usable)
      INFO(NCCL_TUNING, "rank %d: AllReduce of %zu bytes: CollNetDirect not available (weft "
           "runs CollNetChain)%s", a->rank, nbytes, tail);
    else if (!plugin)
      INFO(NCCL_TUNING, "rank %d: AllReduce of %zu bytes: CollNet not used: no usable CollNet "
           "plugin on every rank%s", a->rank, nbytes, tail);
    else
      INFO(NCCL_TUNING, "rank %d: AllReduce of %zu bytes: CollNet not used: the plugin does not "
           "reduce %s with operator %d%s", a->rank, nbytes,
           dtype_name((ncclDataType_t)a->dtype), a->redop, tail);
  }
  return tmp;
}

ncclResult_t tune_op(weft_tune* t, const weft_tune_ask* a, int func, size_t nbytes,
                     weft_op_choice* out) {
  *out = (weft_op_choice){.algo = NCCL_ALGO_RING, .proto = NCCL_PROTO_SIMPLE};
  if (func == ncclFuncSend || func == ncclFuncRecv) {
    p2p_choice(a, nbytes, out);
    return ncclSuccess;
  }
  if (func < ncclFuncBroadcast || func > ncclFuncAllReduce) return ncclSuccess;
  weft_decision d; /* tune_decide logs it at NCCL_DEBUG_SUBSYS=TUNING */
  if (a->device) {
    int zc = a->zero_copy ? zero_copy_algo(a, func, nbytes) : -1;
    if (zc >= 0 && t == NULL) {
      *out = (weft_op_choice){.algo = zc, .proto = NCCL_PROTO_SIMPLE, .zero_copy = 1,
                              .nchannels = zero_copy_channels(a, nbytes)};
      if (!a->quiet)
        INFO(NCCL_TUNING, "rank %d: %s of %zu bytes: %s zero copy on %d channel(s)", a->rank,
             weft_func_name(func), nbytes, tune_algo_name(out->algo), out->nchannels);
      return ncclSuccess;
    }
    weft_default_choice r;
    WEFT_CHECK(tune_device_rule(a, func, nbytes, &r));
    if (zc >= 0) { /* a tuner: the zero-copy choice is the default it may change */
      r.algo = zc;
      r.proto = NCCL_PROTO_SIMPLE;
      for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) r.nchannels[q] = zero_copy_channels(a, nbytes);
    }
    if (t == NULL) {
      out->algo = r.algo;
      out->proto = r.proto;
      out->nchannels = direct_channels(r.algo, r.nchannels[r.proto]);
      if (!a->quiet)
        INFO(NCCL_TUNING, "rank %d: %s of %zu bytes: %s/%s on %d channel(s)", a->rank,
             weft_func_name(func), nbytes, tune_algo_name(out->algo), tune_proto_name(out->proto),
             out->nchannels);
      return ncclSuccess;
    }
    WEFT_CHECK(tune_decide_from(t, a->mask, (ncclFunc_t)func, nbytes, 1, 0, a->quiet, &r, &d));
  } else {
    weft_algo_proto_mask tmp;
    const weft_algo_proto_mask* mask = collnet_mask(t, a, func, nbytes, &tmp);
    WEFT_CHECK(tune_decide(t, mask, (ncclFunc_t)func, nbytes, 1, 0, a->quiet, &d));
    if (d.algo == NCCL_ALGO_COLLNET_CHAIN) d.nchannels = 1; /* one CollNet group */
  }
  out->algo = d.algo;
  out->proto = d.proto;
  out->nchannels = direct_channels(d.algo, clamp_channels((size_t)(d.nchannels < 1 ? 1 : d.nchannels),
                                                          a->max_channels));
  out->predicted_us = d.predicted_us;
  /* Under a tuner, its direct choices on windows run zero copy (with Simple's counters). */
  if (a->device && a->zero_copy && d.proto == NCCL_PROTO_SIMPLE &&
      zero_copy_safe(func, d.algo, a->in_place))
    out->zero_copy = 1;
  return ncclSuccess;
}

double tune_estimate_us(const weft_tune* t, const weft_algo_proto_mask* mask, int func,
                        size_t nbytes, int algo, int proto, int nchannels) {
  if (t == NULL || func < ncclFuncBroadcast || func > ncclFuncAllReduce) return 0;
  double us = -1;
  if (algo >= 0 && algo < WEFT_NUM_ALGORITHMS && proto >= 0 && proto < NCCL_NUM_PROTOCOLS)
    us = tune_model_time(&t->model, (ncclFunc_t)func, algo, proto, nbytes,
                         nchannels < 1 ? 1 : nchannels, 1);
  if (us >= 0) return us;
  weft_choice c;
  double best = 0;
  if (tune_choose(&t->model, mask, &t->caps, (ncclFunc_t)func, nbytes, &c, &best) != ncclSuccess)
    return 0;
  return best;
}

size_t tune_chunk_bytes(int proto, size_t step_bytes, int host_signature) {
  size_t payload = proto == NCCL_PROTO_LL128 ? conn_payload_max_ll128(step_bytes)
                                             : conn_payload_max(step_bytes, proto == NCCL_PROTO_LL);
  /* Host mode: an op's first step on each connection leads with its signature (conn.h). */
  if (host_signature) payload = payload > WEFT_CONN_SIG_BYTES ? payload - WEFT_CONN_SIG_BYTES : 0;
  return payload;
}
