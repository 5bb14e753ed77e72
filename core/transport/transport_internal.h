/* Shared by the files of transport/: a connection's full state (the executor's weft_conn plus
 * what the transport holds), the table, the setup message and the per-transport steps. */
#ifndef WEFT_TRANSPORT_INTERNAL_H
#define WEFT_TRANSPORT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "nccl_net.h"
#include "transport/transport.h"

#define SHM_NAME_MAX 64
#define WEFT_IPC_HANDLE_BYTES 64 /* sizeof(cudaIpcMemHandle_t), checked in transport_p2p.c */

typedef struct tconn {
  weft_conn conn; /* first: the executor's view */
  weft_conn_key key;
  weft_conn_why why; /* the operation of this rank it was made for */
  size_t slot; /* index in the table (and in the device table) */
  int transport;
  /* shm */
  void* map;
  size_t map_bytes;
  char shm_name[SHM_NAME_MAX]; /* receiver: name still to unlink ("" once done) */
  /* net */
  int dev;
  void* listen_comm;
  void* net_comm; /* send or receive comm */
  void* mhandle;
  void* mem;      /* local control block (+ slots, unless they are in GPU memory) */
  void* gdr_mem;  /* device mode, GPUDirect: the slots, in GPU memory (cudaMalloc) */
  int gdr_flush;  /* receive side: WEFT_NET_FLUSH_* */
  int gdr_dmabuf; /* registered through regMrDmaBuf */
  /* plugins cast the handle to their own struct (8-byte fields): keep it aligned as NCCL's */
  _Alignas(16) unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  /* device mode */
  void* p2p_mem;           /* p2p receiver: cudaMalloc'd control block + slots */
  void* p2p_ipc;           /* p2p sender: the receiver's memory opened through CUDA IPC */
  /* p2p in cuMem memory (transport_vmem.c): the receiver's FIFO, or the sender's mapping of it
   * (P2P_VIA_FD); either can be suspended */
  struct weft_vmem* p2p_vmem;
  int p2p_how;             /* P2P_VIA_IPC, P2P_VIA_FD or P2P_VIA_PTR */
  /* P2P_VIA_FD by SCM_RIGHTS (the importer cannot pidfd_getfd), within one connect batch or
   * resume: the owner's listener, and the importer's socket connected to its owner's while
   * p2p_fdx_pid (the owner's process) is not 0 (vmem_fdx_*). */
  struct weft_fdx* p2p_fdx;
  int p2p_fdx_sock;
  int32_t p2p_fdx_pid;
  void* host_reg;          /* shm/net: the host range registered with cudaHostRegister */
  weft_fifo_ctrl* dev_ctrl; /* the FIFO at addresses valid on this rank's GPU */
  char* dev_buff;
  int connected;
} tconn;

struct weft_transport {
  weft_transport_params p;
  int nranks;
  tconn** table; /* WEFT_CONN_NKINDS * nchannels * nranks * 2 (dir) * 3 (proto) */
  size_t ntable;
  int nnet;      /* connections over the net */
  int nconn;        /* connections made (every algorithm's, made lazily: transport_memory) */
  size_t fifo_bytes; /* their FIFOs on this rank: control block + WEFT_NSTEPS slots each */
  /* Device mode: one weft_dev_conn per table entry (device memory, allocated by the first
   * connect) and the private non-blocking stream that fills them. */
  int device;
  struct weft_dev_conn* dev_table;
  void* stream; /* cudaStream_t */
  /* Registered buffers (transport_regserve.c, transport_regview.c): this rank's service, and
   * its connections to the peers' (-1: not yet), used under reg_lock. */
  struct weft_regsrv* regsrv;
  struct weft_reg_unmapper* reg_unmapper; /* the thread that unmaps what peers released */
  int* reg_conns;
  pthread_mutex_t reg_lock;
  /* GPU memory of this rank that suspend cannot release (connection table, kernels' tables,
   * GPUDirect slots, FIFOs outside cuMem), in bytes of their allocations, and the first reason
   * a FIFO had to be allocated outside cuMem ("" while every one is in cuMem). */
  uint64_t persist_bytes;
  char no_suspend[160];
};

/* What the receiver tells the sender about a connection (bootstrap, tagged by the key). */
#define CONN_INFO_MAGIC 0x77636f6eu /* "wcon" */
typedef struct {
  uint32_t magic;
  int32_t transport;
  int32_t kind, channel, proto;
  int32_t pid;
  uint64_t step_bytes;
  uint64_t shm_bytes;
  char shm_name[SHM_NAME_MAX];
  unsigned char net_handle[NCCL_NET_HANDLE_MAXSIZE];
  /* p2p: how the sender reaches the receiver's GPU memory */
  int32_t p2p_how; /* P2P_VIA_IPC, P2P_VIA_FD or P2P_VIA_PTR (same process) */
  int32_t p2p_fd;  /* P2P_VIA_FD: the receiver's descriptor, copied with pidfd_getfd */
  int32_t p2p_dev; /* receiver's CUDA device (P2P_VIA_PTR: same ordinals as the sender's) */
  int32_t p2p_by_fdx; /* P2P_VIA_FD to a sender that cannot pidfd_getfd: the descriptor comes
                       * by SCM_RIGHTS from the listener named by pid and p2p_token */
  uint64_t p2p_bytes;
  uint64_t p2p_ptr; /* P2P_VIA_PTR: the device address */
  uint64_t p2p_token;
  unsigned char p2p_handle[WEFT_IPC_HANDLE_BYTES]; /* P2P_VIA_IPC: cudaIpcMemHandle_t */
  weft_conn_why why; /* the receiver's operation that needs it */
} conn_info;
enum { P2P_VIA_IPC = 1, P2P_VIA_PTR = 2, P2P_VIA_FD = 3 };

/* ---- transport_shm.c ---- */
/* Receiver: create and map a segment for c (name in c->shm_name, fills info). */
ncclResult_t shm_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info);
/* Sender: map the receiver's segment, then unlink its name. */
ncclResult_t shm_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info);
void shm_close(struct ncclComm* comm, tconn* c);

/* ---- transport_net.c ---- */
ncclResult_t net_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info);
ncclResult_t net_send_setup(struct ncclComm* comm, tconn* c, const conn_info* info);
/* Buffers and registration (regMr; in device mode also pinned and mapped), once connected. */
ncclResult_t net_finish(struct ncclComm* comm, tconn* c);
/* Hand-off to the proxy: from then on the connection is the proxy's too. */
ncclResult_t net_start(struct ncclComm* comm, tconn* c);
/* Deregister and close the plugin's comms (the peer sees the connection end); idempotent. */
void net_close_comms(struct ncclComm* comm, tconn* c);
/* net_close_comms, then free the buffers (host and GPU). */
void net_close(struct ncclComm* comm, tconn* c);

/* ---- transport_netconn.c ---- */
/* Every net connection of todo[0..m) without a comm yet: connect (sender) or accept (receiver)
 * until the plugin has given them all, driven by worker threads (a blocking plugin call cannot
 * stall the others); pending ones are reported after a few seconds, and the batch fails at
 * WEFT_TIMEOUT_MS naming peer and plugin call. On return the finished ones have net_comm set and
 * listen_comm cleared; the rest belong to the run (closed by it). */
ncclResult_t net_connect_all(struct ncclComm* comm, tconn** todo, int m);

/* ---- transport_gdr.c (device mode) ---- */
/* GPUDirect for c when the plugin, the PCI path and the environment allow: allocate `bytes`
 * of slots in GPU memory and register them with the plugin (c->gdr_mem, c->mhandle,
 * c->gdr_flush). Returns 0, with nothing allocated, when c stages through host memory
 * instead (every reason logged; never an error: host staging always works). */
int gdr_setup(struct ncclComm* comm, tconn* c, size_t bytes);
/* Free the GPU slots (after deregMr). */
void gdr_free(struct ncclComm* comm, tconn* c);

/* ---- transport_p2p.c (device mode) ---- */
/* 1 when the pair (this rank, peer) on one host uses p2p: decided from both ranks' published
 * weft_p2p_rank_info only, so both ends agree. */
int p2p_usable(const struct ncclComm* comm, int peer);
/* The same for any two ranks, from their published facts: the same answer on every rank. */
int p2p_pair_usable(const struct ncclComm* comm, int ra, int rb);
/* Receiver: allocate and zero the FIFO on this GPU, describe it in info. */
ncclResult_t p2p_recv_setup(struct ncclComm* comm, tconn* c, conn_info* info);
/* Sender: open the receiver's FIFO (IPC handle, or the pointer within one process). */
ncclResult_t p2p_send_connect(struct ncclComm* comm, tconn* c, const conn_info* info);
void p2p_close(struct ncclComm* comm, tconn* c);
/* The peer lives in this process (its device addresses are valid here). */
int p2p_same_process(const struct ncclComm* comm, int peer);
/* Peer access from the comm's device to dev, once per process and pair. */
ncclResult_t p2p_enable_peer_access(struct ncclComm* comm, int dev);

/* ---- transport_ipcmap.c (device mode, built with CUDA) ----
 * Sharing a buffer with another process. cudaMalloc memory: an IPC handle of its allocation
 * and the offset (ipcmap_describe_ipc); the importer opens it with ipcmap_acquire (cudaError_t
 * as int; one mapping per process and handle, counted) and lets go with ipcmap_release (a
 * failed close is reported once, naming connection c where one holds it). cuMem
 * memory: a descriptor of the allocation (ipcmap_export_fd: the caller closes it), mapped whole
 * for device dev with ipcmap_map_fd (fd stays the caller's) and undone with ipcmap_unmap_fd.
 * The describe and map calls return 1, or 0 (with why set where they take one).
 * ipcmap_acquire returns IPCMAP_CLOSING while the last holder's close of that handle runs;
 * ipcmap_still_mapped(e): refused because this process still maps (or is closing) a mapping
 * of that range (regserve_acquire waits for the unmaps in flight, then retries). */
#define IPCMAP_CLOSING (-1)
int ipcmap_acquire(const uint8_t* handle, int dev, void** base);
int ipcmap_still_mapped(int e);
/* The reason ipcmap_acquire's result e gives, for a message. */
const char* ipcmap_acquire_error(int e);
void ipcmap_release(struct ncclComm* comm, const tconn* c, void* base);
int ipcmap_describe_ipc(void* buff, uint8_t* handle, uint64_t* offset, char* why,
                        size_t whylen);
int ipcmap_export_fd(void* buff, int* fd, uint64_t* offset, uint64_t* alloc, char* why,
                     size_t whylen);
/* Either of the two, IPC first: IPCMAP_IPC (handle, offset), IPCMAP_FD (fd, offset, alloc) or
 * 0 (why says why neither could). */
enum { IPCMAP_IPC = 1, IPCMAP_FD = 2 };
int ipcmap_describe(void* buff, uint8_t* handle, uint64_t* offset, int* fd, uint64_t* alloc,
                    char* why, size_t whylen);
int ipcmap_map_fd(int dev, int fd, uint64_t alloc, void** va, char* why, size_t whylen);
void ipcmap_unmap_fd(void* va, uint64_t bytes);
/* A copy, in this process, of descriptor fd of process pid (pidfd_getfd: Linux 5.6 and ptrace
 * rights over pid); -1 with why set when it cannot be had. The caller closes it. */
int ipcmap_take_fd(int pid, int fd, char* why, size_t whylen);
/* Whether ipcmap_take_fd can work in this process towards a peer process of the same user:
 * the calls are allowed and Yama's ptrace_scope lets it (0, or CAP_SYS_PTRACE); 0 with why. */
int ipcmap_can_take_fds(char* why, size_t whylen);

/* ---- transport_vmem.c (device mode, built with CUDA): suspendable GPU memory ----
 * A range reserved once for the communicator's life with physical memory mapped into it: the
 * owner's (vmem_alloc: cuMemCreate, exportable as a descriptor, vmem_fd; readable and
 * writable by this device and other_dev when >= 0, zeroed) or a peer's (vmem_import: process
 * pid's descriptor fd, bytes as the owner rounded them). vmem_suspend unmaps (an owner first
 * saves the first save_bytes to the host and releases its memory); the range stays. The
 * owner's vmem_resume_owner maps new memory at the same address, zeroed, the saved bytes put
 * back, and exports a new descriptor; an importer's vmem_resume_import maps the owner's new
 * one there. vmem_free undoes everything. vmem_alloc returns ncclSystemError without a WARN,
 * why set, when the driver refuses exportable memory (some containers do): the caller falls
 * back. vmem_usable: 1, or 0 with why (NCCL_CUMEM_ENABLE=0,
 * a driver or device without the calls). */
typedef struct weft_vmem weft_vmem;
int vmem_usable(struct ncclComm* comm, char* why, size_t whylen);
ncclResult_t vmem_alloc(struct ncclComm* comm, const tconn* c, size_t bytes, int other_dev,
                        weft_vmem** out, char* why, size_t whylen);
ncclResult_t vmem_import(struct ncclComm* comm, const tconn* c, int pid, int fd, size_t bytes,
                         weft_vmem** out);
/* An importer's range, reserved and not yet mapped (vmem_fdx_finish maps it). */
ncclResult_t vmem_reserve(struct ncclComm* comm, const tconn* c, size_t bytes, weft_vmem** out);
void* vmem_ptr(const weft_vmem* v);
size_t vmem_bytes(const weft_vmem* v);
int vmem_fd(const weft_vmem* v);
int vmem_is_owner(const weft_vmem* v);
int vmem_mapped(const weft_vmem* v);
ncclResult_t vmem_suspend(struct ncclComm* comm, const tconn* c, weft_vmem* v,
                          size_t save_bytes);
ncclResult_t vmem_resume_owner(struct ncclComm* comm, const tconn* c, weft_vmem* v);
ncclResult_t vmem_resume_import(struct ncclComm* comm, const tconn* c, weft_vmem* v, int pid,
                                int fd);
void vmem_free(weft_vmem* v);
/* The SCM_RIGHTS fallback for an importer whose process cannot copy descriptors (its published
 * take_fd is 0; transport_fdx.h), as LSA windows have it. Every rank of a connect batch or of
 * a resume runs these steps in this order: the owner opens a listener for the FIFO
 * (vmem_fdx_offer: the token goes to the importer beside the pid); the importer, on reading it,
 * connects (vmem_fdx_fetch: never waits, the listener holds the connection); then
 * vmem_fdx_finish over the batch's connections (NULLs and others skipped) serves every
 * listener once, closes it, and takes and maps every descriptor owed into the importer's range
 * (vmem_reserve at setup, the kept range on resume), bounded by WEFT_BOOTSTRAP_TIMEOUT_MS.
 * vmem_fdx_drop closes what a failed step left. Failures WARN naming rank, peer and step. */
ncclResult_t vmem_fdx_offer(struct ncclComm* comm, tconn* c, uint64_t* token);
ncclResult_t vmem_fdx_fetch(struct ncclComm* comm, tconn* c, int32_t pid, uint64_t token);
ncclResult_t vmem_fdx_finish(struct ncclComm* comm, tconn* const* cs, size_t m);
void vmem_fdx_drop(tconn* c);

/* ---- transport_regserve.c (device mode): the registration service of this rank ---- */
/* Start it when some peer is another process of this host (transport_init); stop it, releasing
 * what peers shared, in transport_fini. */
ncclResult_t regserve_start(struct ncclComm* comm);
void regserve_fini(struct ncclComm* comm);
/* Built with CUDA only: ipcmap_acquire on the comm's device; when refused as
 * ipcmap_still_mapped, it waits (bounded) until the buffers peers released are unmapped here
 * and, if some were, tries once more: cudaError_t as int, or IPCMAP_CLOSING. The CUDA driver
 * refuses to map a range of a peer's allocation that this process still maps with another
 * extent (the peer freed a registered buffer and allocated over it again, a FIFO or a window
 * included). */
int regserve_acquire(struct ncclComm* comm, const uint8_t* handle, void** base);

/* ---- transport_devmem.c (device mode) ----
 * Callers make the communicator's device current first (devmem_enter / devmem_leave around
 * every public entry point), since one thread may drive comms on several GPUs. */
ncclResult_t devmem_enter(struct ncclComm* comm, int* saved_dev);
/* Make cuda_dev the calling thread's device (a helper thread of the transport; no comm needed;
 * failures are left to the next CUDA call to report). No-op without CUDA or for -1. */
void devmem_thread_device(int cuda_dev);
void devmem_leave(struct ncclComm* comm, int saved_dev);
/* WARN naming rank, peer, channel (c may be NULL), what failed and the CUDA error text;
 * returns ncclUnhandledCudaError. err is a cudaError_t. */
ncclResult_t devmem_cuda_fail(struct ncclComm* comm, const tconn* c, const char* what, int err);
/* The private stream (created on first use). */
ncclResult_t devmem_stream(struct ncclComm* comm, void** stream);
/* Pin and map host memory of c (shm segment or net buffer) into the GPU: sets host_reg,
 * dev_ctrl, dev_buff. */
ncclResult_t devmem_register_host(struct ncclComm* comm, tconn* c, void* mem, size_t bytes);
void devmem_unregister_host(struct ncclComm* comm, tconn* c);
/* Write the weft_dev_conn of each of the m connections into the device table (allocated on
 * first use) and wait for the copies. */
ncclResult_t devmem_fill(struct ncclComm* comm, tconn* const* cs, int m);
/* Free the device table and the stream. */
void devmem_fini(struct ncclComm* comm);
/* A table for the kernels (windows', registrations'): bytes of host copied into new GPU memory
 * on the private stream and waited for; what names it in errors ("a window's table").
 * devmem_free releases it (NULL: nothing), warning on failure. */
ncclResult_t devmem_upload(struct ncclComm* comm, const void* host, size_t bytes, void** out,
                           const char* what);
void devmem_free(struct ncclComm* comm, void* dev, const char* what);
/* Count (sign 1) or stop counting (-1) the cudaMalloc allocation holding dev in the
 * communicator's persistent GPU memory (ncclCommMemStats' Persist). Built with CUDA only. */
void devmem_persist(struct ncclComm* comm, const void* dev, int sign);

/* Control block + slots of a connection, page aligned. */
static inline size_t conn_mem_bytes(size_t step_bytes) {
  return WEFT_FIFO_CTRL_BYTES + (size_t)WEFT_NSTEPS * step_bytes;
}

#endif
