/* The libfabric function table. Most of libfabric's API is static inline calls through an
 * object's ops; each entry here is a real function wrapping one of them, so a test can swap any
 * entry for a wrapper that injects failures (tests/netofi/). Also: error text and the mapping of
 * libfabric errors onto NCCL results. */
#include <errno.h>
#include <string.h>

#include "net_ofi.h"

static int w_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
                     const struct fi_info* hints, struct fi_info** info) {
  return fi_getinfo(version, node, service, flags, hints, info);
}
static void w_freeinfo(struct fi_info* info) { fi_freeinfo(info); }
static struct fi_info* w_dupinfo(const struct fi_info* info) { return fi_dupinfo(info); }
static int w_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  return fi_fabric(attr, fabric, context);
}
static int w_domain(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
                    void* context) {
  return fi_domain(fabric, info, domain, context);
}
static int w_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                      void* context) {
  return fi_endpoint(domain, info, ep, context);
}
static int w_av_open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av,
                     void* context) {
  return fi_av_open(domain, attr, av, context);
}
static int w_cq_open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq,
                     void* context) {
  return fi_cq_open(domain, attr, cq, context);
}
static int w_ep_bind(struct fid_ep* ep, struct fid* bfid, uint64_t flags) {
  return fi_ep_bind(ep, bfid, flags);
}
static int w_enable(struct fid_ep* ep) { return fi_enable(ep); }
static int w_getname(fid_t fid, void* addr, size_t* addrlen) {
  return fi_getname(fid, addr, addrlen);
}
static int w_av_insert(struct fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr,
                       uint64_t flags, void* context) {
  return fi_av_insert(av, addr, count, fi_addr, flags, context);
}
static const char* w_av_straddr(struct fid_av* av, const void* addr, char* buf, size_t* len) {
  return fi_av_straddr(av, addr, buf, len);
}
static int w_mr_regattr(struct fid_domain* domain, const struct fi_mr_attr* attr, uint64_t flags,
                        struct fid_mr** mr) {
  return fi_mr_regattr(domain, attr, flags, mr);
}
static int w_mr_bind(struct fid_mr* mr, struct fid* bfid, uint64_t flags) {
  return fi_mr_bind(mr, bfid, flags);
}
static int w_mr_enable(struct fid_mr* mr) { return fi_mr_enable(mr); }
static int w_close(struct fid* fid) { return fi_close(fid); }
static ssize_t w_tsend(struct fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest,
                       uint64_t tag, void* context) {
  return fi_tsend(ep, buf, len, desc, dest, tag, context);
}
static ssize_t w_trecv(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src,
                       uint64_t tag, uint64_t ignore, void* context) {
  return fi_trecv(ep, buf, len, desc, src, tag, ignore, context);
}
static ssize_t w_cancel(fid_t fid, void* context) { return fi_cancel(fid, context); }
static ssize_t w_cq_read(struct fid_cq* cq, void* buf, size_t count) {
  return fi_cq_read(cq, buf, count);
}
static ssize_t w_cq_readerr(struct fid_cq* cq, struct fi_cq_err_entry* buf, uint64_t flags) {
  return fi_cq_readerr(cq, buf, flags);
}
static const char* w_cq_strerror(struct fid_cq* cq, int prov_errno, const void* err_data,
                                 char* buf, size_t len) {
  return fi_cq_strerror(cq, prov_errno, err_data, buf, len);
}

const ofi_fns net_ofi_fi_default = {
    .getinfo = w_getinfo,
    .freeinfo = w_freeinfo,
    .dupinfo = w_dupinfo,
    .fabric = w_fabric,
    .domain = w_domain,
    .endpoint = w_endpoint,
    .av_open = w_av_open,
    .cq_open = w_cq_open,
    .ep_bind = w_ep_bind,
    .enable = w_enable,
    .getname = w_getname,
    .av_insert = w_av_insert,
    .av_straddr = w_av_straddr,
    .mr_regattr = w_mr_regattr,
    .mr_bind = w_mr_bind,
    .mr_enable = w_mr_enable,
    .close = w_close,
    .tsend = w_tsend,
    .trecv = w_trecv,
    .cancel = w_cancel,
    .cq_read = w_cq_read,
    .cq_readerr = w_cq_readerr,
    .cq_strerror = w_cq_strerror,
};

ofi_fns net_ofi_fi = {
    .getinfo = w_getinfo,
    .freeinfo = w_freeinfo,
    .dupinfo = w_dupinfo,
    .fabric = w_fabric,
    .domain = w_domain,
    .endpoint = w_endpoint,
    .av_open = w_av_open,
    .cq_open = w_cq_open,
    .ep_bind = w_ep_bind,
    .enable = w_enable,
    .getname = w_getname,
    .av_insert = w_av_insert,
    .av_straddr = w_av_straddr,
    .mr_regattr = w_mr_regattr,
    .mr_bind = w_mr_bind,
    .mr_enable = w_mr_enable,
    .close = w_close,
    .tsend = w_tsend,
    .trecv = w_trecv,
    .cancel = w_cancel,
    .cq_read = w_cq_read,
    .cq_readerr = w_cq_readerr,
    .cq_strerror = w_cq_strerror,
};

const char* net_ofi_strerror(int rc) { return fi_strerror(rc < 0 ? -rc : rc); }

ncclResult_t net_ofi_result(int err) {
  switch (err < 0 ? -err : err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case ENOTCONN:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case ESHUTDOWN:
    case ETIMEDOUT:
    case EADDRNOTAVAIL:
    case EPIPE:
    case ECANCELED: /* cancelled by the provider (we cancel only when closing) */
      return ncclRemoteError;
    default:
      return ncclSystemError;
  }
}
