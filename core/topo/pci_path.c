/* PCI path classes from sysfs. A PCI device's real sysfs path lists the bridges above it:
 * <sysfs>/devices/pci<dom>:<bus>/<root port>/<switch up>/<switch down>/.../<device>. Two
 * devices' paths share a prefix up to their nearest common bridge; what is left on each side
 * tells how many switch levels the traffic crosses (a switch is an upstream and a downstream
 * port, so one switch leaves two components: the downstream port and the device). This is the
 * shape NCCL's topology collapses into PIX / PXB / PHB; it is an estimate, good enough to pick
 * GPUDirect by default and overridden by NCCL_NET_GDR_LEVEL. */
#include "topo/pci_path.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PCI_MAX_DEPTH 32

typedef struct {
  char real[PATH_MAX];
  const char* comp[PCI_MAX_DEPTH]; /* root, bridges..., device (pointers into buf) */
  int n;
  char buf[PATH_MAX];
} pci_chain;

/* "dddd:bb:dd.f" */
static int is_pci_addr(const char* s, size_t len) {
  if (len != 12) return 0;
  for (size_t i = 0; i < len; i++) {
    int sep = i == 4 || i == 7 ? ':' : i == 10 ? '.' : 0;
    if (sep ? s[i] != sep : !isxdigit((unsigned char)s[i])) return 0;
  }
  return 1;
}

/* Resolve path and split what follows <sysfs>/devices/ into the root and the PCI components;
 * anything after the last PCI component (net/eth0, infiniband/…) is dropped. */
static int chain_of(const char* sysfs, const char* path, pci_chain* ch) {
  char root[PATH_MAX];
  if (!path || !realpath(sysfs, root) || !realpath(path, ch->real)) return 0;
  size_t rl = strlen(root);
  if (strncmp(ch->real, root, rl) != 0 || strncmp(ch->real + rl, "/devices/pci", 12) != 0)
    return 0;
  snprintf(ch->buf, sizeof ch->buf, "%s", ch->real + rl + strlen("/devices/"));
  ch->n = 0;
  char* save = NULL;
  for (char* tok = strtok_r(ch->buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
    if (ch->n == 0) {
      ch->comp[ch->n++] = tok; /* pci<dom>:<bus> */
      continue;
    }
    if (!is_pci_addr(tok, strlen(tok)) || ch->n == PCI_MAX_DEPTH) break;
    ch->comp[ch->n++] = tok;
  }
  /* Where the chain ended is the device: cut the real path there for numa_node. */
  if (ch->n < 2) return 0;
  const char* last = ch->comp[ch->n - 1];
  char* at = strstr(ch->real + rl, last);
  if (at) at[strlen(last)] = '\0';
  return 1;
}

static int numa_of(const pci_chain* ch) {
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/numa_node", ch->real);
  FILE* f = fopen(p, "r");
  int node = -1;
  if (f) {
    if (fscanf(f, "%d", &node) != 1) node = -1;
    fclose(f);
  }
  return node;
}

int pci_path_class(const char* sysfs, const char* busid, const char* dev_path) {
  if (!busid || strlen(busid) != 12) return WEFT_PATH_SYS;
  char lower[16], gpu_path[PATH_MAX];
  for (int i = 0; i < 12; i++) lower[i] = (char)tolower((unsigned char)busid[i]);
  lower[12] = '\0';
  snprintf(gpu_path, sizeof gpu_path, "%s/bus/pci/devices/%s", sysfs, lower);
  pci_chain a, b;
  if (!chain_of(sysfs, gpu_path, &a) || !chain_of(sysfs, dev_path, &b)) return WEFT_PATH_SYS;
  if (strcmp(a.comp[0], b.comp[0]) != 0) {
    int na = numa_of(&a), nb = numa_of(&b);
    return na >= 0 && nb >= 0 && na != nb ? WEFT_PATH_SYS : WEFT_PATH_PHB;
  }
  int k = 1;
  while (k < a.n && k < b.n && strcmp(a.comp[k], b.comp[k]) == 0) k++;
  if (k == a.n && k == b.n) return WEFT_PATH_LOC;
  /* Functions of one card: same parent, same bus:device, another function. */
  if (k == a.n - 1 && k == b.n - 1 && strncmp(a.comp[k], b.comp[k], 10) == 0) return WEFT_PATH_LOC;
  if (k == 1) return WEFT_PATH_PHB;
  int rem = a.n - k > b.n - k ? a.n - k : b.n - k;
  return rem <= 2 ? WEFT_PATH_PIX : WEFT_PATH_PXB;
}

int pci_path_parse_level(const char* s, int* level) {
  static const struct {
    const char* name;
    int level;
  } names[] = {{"LOC", WEFT_PATH_LOC}, {"NVL", WEFT_PATH_LOC}, {"NVB", WEFT_PATH_LOC},
               {"C2C", WEFT_PATH_LOC}, {"PIX", WEFT_PATH_PIX}, {"PXB", WEFT_PATH_PXB},
               {"PXN", WEFT_PATH_PXB}, {"PHB", WEFT_PATH_PHB}, {"SYS", WEFT_PATH_SYS}};
  if (!s || !*s) return 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcasecmp(s, names[i].name)) {
      *level = names[i].level;
      return 1;
    }
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < 0) return 0;
  *level = v > WEFT_PATH_SYS ? WEFT_PATH_SYS : (int)v;
  return 1;
}

const char* pci_path_name(int cls) {
  static const char* n[] = {"LOC", "PIX", "PXB", "PHB", "SYS"};
  return cls >= 0 && cls <= WEFT_PATH_SYS ? n[cls] : "?";
}
