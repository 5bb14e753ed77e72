/* The NetPlugin events of a prof_tree run over a net plugin (prof_net_check.c). */
#ifndef WEFT_TEST_PROF_NET_CHECK_H
#define WEFT_TEST_PROF_NET_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "ref_profiler.h"

#define PROF_NET_MAX_RANKS 8

/* What each rank's events say moved, shared between the forked ranks and the parent. */
typedef struct {
  int checked[PROF_NET_MAX_RANKS]; /* the rank's lengths are exact (v4+, or the socket net) */
  uint64_t sent[PROF_NET_MAX_RANKS], recvd[PROF_NET_MAX_RANKS];
  int nevents[PROF_NET_MAX_RANKS];
} prof_net_totals;

/* The plugin id of weft's "sock", "ib" or "ofi" net (exits 2 on another name). */
int64_t prof_net_want_id(const char* which);
/* The length of a NetPlugin descriptor of plugin id (socket, IB or weft's OFI) and whether it
 * is a send (*is_send), its fields checked for sanity; provider: an OFI descriptor's provider
 * name as copied at start. Exits 1 on a bad field or an unknown type. */
size_t prof_net_descr(int64_t id, const void* data, const char* provider, int* is_send);

/* With PROF_EXPECT_NET=sock|ib|ofi: the rank's NetPlugin events carry that plugin's id and a
 * descriptor of its type, each hangs off a ProxyStep (which has at least one), receive lengths
 * add up to the bytes each receive step moved and send lengths stay within each send step;
 * the totals go to out. With PROF_EXPECT_NET=none, or an ABI before v3: there are ProxySteps
 * and no NetPlugin event. Unset: nothing is checked. Exits 1 on the first mismatch. */
void prof_net_check(const ref_summary* s, int rank, prof_net_totals* out);

/* In the parent, after the ranks: what each rank sent is what its peer (rank ^ 1) received.
 * Returns 0, or 1 with the mismatch on stderr. */
int prof_net_check_totals(const prof_net_totals* t, int nranks);

#endif
