/* Helpers for the exported API: the export macro and argument checks. Every exported nccl*
 * function is a weak alias of a strong pnccl* twin (the PMPI pattern NCCL uses), so profilers
 * can interpose on ncclX and call pncclX. */
#ifndef WEFT_API_H
#define WEFT_API_H

#include "comm/comm.h"
#include "nccl.h"
#include "weft.h"

/* WEFT_API(ret, ncclFoo, args…) declares the strong pncclFoo as an alias of ncclFoo and makes
 * ncclFoo itself weak; follow it with the definition of ncclFoo. */
#define WEFT_API(ret, func, ...)                                                     \
  __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__);     \
  __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

#define WEFT_EXT __attribute__((visibility("default")))

/* ncclInvalidUsage with a WARN: the call is valid but weft does not do it yet. */
ncclResult_t api_not_available(const char* fn, const char* what);

/* Argument checks: each WARNs naming the function, the argument and its value. */
ncclResult_t arg_check_datatype(const char* fn, ncclDataType_t type);
ncclResult_t arg_check_op(const char* fn, const struct ncclComm* comm, ncclRedOp_t op);
ncclResult_t arg_check_root(const char* fn, const struct ncclComm* comm, const char* what,
                            int root);
ncclResult_t arg_check_buffer(const char* fn, const char* what, const void* ptr, size_t count);

/* The window win of comm (api_mem.c): ncclInvalidArgument with a WARN naming fn and what when
 * win is no window registered on comm (another communicator's, or one released already). */
ncclResult_t api_window_of(struct ncclComm* comm, const char* fn, const char* what,
                           ncclWindow_t win, const weft_mem_reg** out);

/* The communicator, buffer, size and LSA flat mapping (NULL: none) of window `win`, a handle
 * ncclCommWindowRegister gave out and that is still registered (api_mem.c);
 * ncclInvalidArgument with a WARN naming fn otherwise. The window may be released by another thread right after: as in NCCL, using a
 * window while releasing it is the caller's error. */
ncclResult_t api_window_find(const char* fn, ncclWindow_t win, struct ncclComm** comm,
                             void** buff, size_t* size, struct weft_window_lsa** lsa);

/* A symmetric window of buff registered and mapped now (collective: every rank calls it at
 * once, outside any group's deferral; ncclDevCommCreate's resource buffer), and released. */
ncclResult_t api_window_register_now(struct ncclComm* comm, const char* fn, void* buff,
                                     size_t size, weft_mem_reg** out);
ncclResult_t api_window_release(struct ncclComm* comm, const char* fn, const void* handle);

/* ---- api_devwin.c: the device side of windows (device mode; no-ops without CUDA) ---- */
/* Allocate r's device window (r->dev_win, the handle given out) and its per-rank deltas,
 * describe r's own buffer in it and list it in comm's window table. */
ncclResult_t api_devwin_create(struct ncclComm* comm, weft_mem_reg* r);
/* Describe r as it now is (its LSA mapping, once made) in its device window. */
ncclResult_t api_devwin_fill(struct ncclComm* comm, weft_mem_reg* r);
/* Upload comm's window table again after a window left comm->regs. */
ncclResult_t api_devwin_listed(struct ncclComm* comm);
/* comm's window table in GPU memory (made at the first call). */
ncclResult_t api_devwin_table(struct ncclComm* comm, void** table);
/* Free r's device window (r is out of comm->regs), and comm's table (destroy, abort). */
void api_devwin_free(struct ncclComm* comm, weft_mem_reg* r);
void api_devapi_free(struct ncclComm* comm);

#endif
