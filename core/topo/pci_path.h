/* How far apart two PCI devices sit (a GPU and a NIC), in NCCL's path classes, read from sysfs.
 * Used to decide GPUDirect RDMA against NCCL_NET_GDR_LEVEL. */
#ifndef WEFT_TOPO_PCI_PATH_H
#define WEFT_TOPO_PCI_PATH_H

#include <stdint.h>

/* Nearest first; a path is allowed by a level when class <= level. */
enum {
  WEFT_PATH_LOC = 0, /* the same device (functions of one card) */
  WEFT_PATH_PIX = 1, /* through one PCIe switch at most */
  WEFT_PATH_PXB = 2, /* through several PCIe switches, not through the host bridge */
  WEFT_PATH_PHB = 3, /* through the host bridge (the CPU's root complex) */
  WEFT_PATH_SYS = 4  /* across CPU sockets (or unknown) */
};

/* The class of the path between the PCI device `busid` ("dddd:bb:dd.f", any case) and the
 * device at `dev_path` (a sysfs path such as a net plugin's pciPath; symlinks allowed).
 * `sysfs` is the sysfs mount ("/sys"; tests pass a fake tree). Either side unresolvable (NULL,
 * missing, outside sysfs' devices/): WEFT_PATH_SYS, so nothing far is assumed near. */
int pci_path_class(const char* sysfs, const char* busid, const char* dev_path);

/* A level as NCCL writes it: LOC, PIX, PXB, PHB, SYS (NVL, NVB and C2C count as LOC, PXN as
 * PXB) or NCCL's legacy integers 0..4 (5+ is SYS). Returns 1 and sets *level when understood. */
int pci_path_parse_level(const char* s, int* level);

const char* pci_path_name(int cls);

/* NVML's index of the GPU at PCI address `bus` (domain << 16 | bus << 8 | device, as
 * p2p_info.h's bus): NVIDIA display controllers at lower addresses are counted in `sysfs`
 * ("/sys"). -1 when no NVIDIA GPU sits at that address. (pci_gpu_index.c) */
int pci_gpu_index(const char* sysfs, uint64_t bus);

#endif
