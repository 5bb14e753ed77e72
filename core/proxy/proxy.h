/* The proxy: one thread per communicator that moves FIFO slots of net connections through the
 * net plugin, so that the executor sees a net connection exactly as a shared-memory one.
 *
 *  send side: once the executor has published step s (tail > s), isend slot s; when test()
 *             reports it complete, publish head = s + 1 (the slot is free again);
 *  recv side: keep an irecv posted for every free slot (posted < head + WEFT_NSTEPS) that a
 *             launched operation will consume; when test() completes one (and, for slots in
 *             GPU memory, the plugin's iflush of it completed too), store its size and
 *             publish tail = s + 1.
 * A NULL request from isend/irecv means "try again later". A plugin error is stored in the
 * connection's error field (the executor fails the operation waiting on it) and logged once.
 *
 * The thread sleeps on a condition variable while no operation is in flight and no send is
 * left to flush; while working it backs off (spin, yield, sleep) when nothing moved. */
#ifndef WEFT_PROXY_H
#define WEFT_PROXY_H

#include "nccl.h"
#include "plugin/net.h"
#include "transport/conn.h"
#include "transport/transport.h"

struct ncclComm;
typedef struct weft_proxy weft_proxy;

/* How a connection failure that no operation will see (device mode: the kernels wait on it) is
 * reported: the communicator's owner fails it. peer: the connection's; what: the plugin call. */
typedef void (*weft_proxy_fail_fn)(struct ncclComm* comm, ncclResult_t res, int peer,
                                   const char* what);

/* Start the thread (idle until activated); at most max_conns connections will be added. */
ncclResult_t proxy_create(struct ncclComm* comm, weft_net* net, int max_conns,
                          weft_proxy_fail_fn on_fail, weft_proxy** out);
/* Hand a connected net connection to the proxy; net_comm is its plugin send or recv comm,
 * mhandle the registration of conn->buff and flush a WEFT_NET_FLUSH_* (receives only). */
ncclResult_t proxy_add_conn(weft_proxy* p, weft_conn* conn, void* net_comm, void* mhandle,
                            int flush);
/* Launched operations will consume nsteps more steps of receive connection conn (receives are
 * posted only for those). */
void proxy_expect_recvs(weft_proxy* p, weft_conn* conn, uint64_t nsteps);
/* Profiler (ProxyOp/ProxyStep asked for): the next nsteps steps that conn moves belong to one
 * operation's share on a channel; the proxy reports a ProxyOp under parent (its Coll/P2p event;
 * state ProxyOpInProgress when its first step moves) and a ProxyStep per step (NCCL's states:
 * send SendGPUWait and SendPeerWait, both over at once since the data is there, then SendWait
 * while the plugin moves it; receive RecvWait, then RecvFlushWait once received (while GPU
 * memory is flushed), RecvGPUWait once published; each with its bytes). Called in launch
 * order (the order in which a connection's steps move), before proxy_expect_recvs of the same
 * launch; a send's attribution assumes the activation mask does not change while operations
 * are in flight. */
void proxy_prof_expect(weft_proxy* p, weft_conn* conn, uint64_t nsteps, void* parent, int peer);
/* Operations that may use net connections are in flight / have ended. */
void proxy_activate(weft_proxy* p);
void proxy_deactivate(weft_proxy* p);
/* Wait (bounded) until every published send step has left through the plugin. Returns
 * ncclSuccess, the first connection error, or ncclRemoteError on timeout/abort. */
ncclResult_t proxy_drain(weft_proxy* p, int timeout_ms);
/* Stop and join the thread (idempotent): nothing calls the plugin for it any more, so the
 * connections' plugin comms may be closed; its profiler events stay open until proxy_destroy. */
void proxy_stop(weft_proxy* p);
/* Stop the thread if still running, end the ProxyStep/ProxyOp events still open (an abort) and
 * free the proxy; the plugin comms are not closed here. Called after they are, so that the
 * NetPlugin events a plugin ends when its comm closes end before their ProxyStep parents. */
void proxy_destroy(weft_proxy* p);

#endif
