/* fakeverbs wire format and the helpers its NIC threads share (fv_wire.c, fv_responder.c,
 * fv_requester.c). Packets are fixed 48-byte headers, followed by the payload for WRITE, SEND
 * and READ_RESP; a connection opens with a hello naming both QPs. */
#ifndef FAKEVERBS_FV_WIRE_H
#define FAKEVERBS_FV_WIRE_H

#include <sys/socket.h>
#include <sys/un.h>

#include "fv.h"

enum { PKT_WRITE = 1, PKT_SEND, PKT_READ, PKT_ACK, PKT_NAK, PKT_DROP, PKT_READ_RESP };
enum { PF_IMM = 1 };

typedef struct {
  uint32_t type;
  uint32_t psn;
  uint32_t gen;
  uint32_t flags;
  uint64_t len;
  uint64_t raddr;
  uint32_t rkey;
  uint32_t imm;
  uint32_t status;    /* NAK: the completion status the requester reports */
  uint32_t rnr_retry; /* requester's RNR retry count (its RNR budget at the responder) */
} fv_pkt;

#define FV_HELLO_MAGIC 0x66616b6576657262ull /* "fakeverb" */
typedef struct {
  uint64_t magic;
  uint32_t src_dev, src_port, src_qpn, src_lid;
  uint32_t dst_port, dst_qpn;
  uint32_t src_gid_type, pad;
  union ibv_gid src_gid;
} fv_hello;

/* The abstract socket name of a QP: (uid, device, QPN). */
void fv_qp_name(struct sockaddr_un* a, socklen_t* len, const fv_device* d, uint32_t qpn);
/* Whole-buffer blocking I/O; 0, or -1 when the connection broke. */
int fv_read_full(int fd, void* buf, uint64_t len);
int fv_write_full(int fd, const void* buf, uint64_t len);
int fv_discard(int fd, uint64_t len);
/* An answer to req (ACK, NAK with status, DROP, READ_RESP header with len). */
int fv_reply(int fd, uint32_t type, const fv_pkt* req, uint32_t status, uint64_t len);
int fv_stopping(fv_qp* q);
/* Under q->lock: wait on q->cond until until_ns (at most 100 ms at a time). */
void fv_timed_wait(fv_qp* q, uint64_t until_ns);
void* fv_rx_main(void* arg);
void* fv_tx_main(void* arg);
void* fv_ack_main(void* arg);

#endif
