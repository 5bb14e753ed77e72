/* The built-in net: the table the library hands the core at load (libweft.so and libnccl.so.2
 * link plugins/net-socket/builtin_register.c, whose constructor registers weft_net_socket_v11).
 * core/ includes nothing from plugins/ (tests/layering); without a registration, as in a test
 * that links the core's objects alone, there is "no built-in". The same constructor registers
 * the socket net's RMA v15 table (net_builtin_rma), the GIN proxy's backend of last resort.
 * Each slot is written before any communicator exists, and read atomically. */
#include "plugin/net.h"

static const ncclNet_v11_t* builtin_net;

void net_builtin_register(const ncclNet_v11_t* net) {
  __atomic_store_n(&builtin_net, net, __ATOMIC_RELEASE);
}

const ncclNet_v11_t* net_builtin(void) { return __atomic_load_n(&builtin_net, __ATOMIC_ACQUIRE); }

static const ncclRma_v15_t* builtin_rma;

void net_builtin_rma_register(const ncclRma_v15_t* rma) {
  __atomic_store_n(&builtin_rma, rma, __ATOMIC_RELEASE);
}

const ncclRma_v15_t* net_builtin_rma(void) { return __atomic_load_n(&builtin_rma, __ATOMIC_ACQUIRE); }
