/* NVML's index of a GPU: NVML numbers every NVIDIA GPU of the host in PCI address order,
 * whatever CUDA_VISIBLE_DEVICES hides from CUDA, so the index is the count of NVIDIA display
 * controllers at lower PCI addresses, read from sysfs. */
#include "topo/pci_path.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The first line of `dir/name`'s file parsed as a hexadecimal number; 0 on failure. */
static unsigned long read_hex(const char* dir, const char* name) {
  char path[512 + 64]; /* dir is at most 511 characters, name a short attribute's */
  int n = snprintf(path, sizeof path, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= sizeof path) return 0;
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  unsigned long v = 0;
  if (fscanf(f, "%lx", &v) != 1) v = 0;
  fclose(f);
  return v;
}

int pci_gpu_index(const char* sysfs, uint64_t bus) {
  char root[256];
  snprintf(root, sizeof root, "%s/bus/pci/devices", sysfs);
  DIR* d = opendir(root);
  if (!d) return -1;
  int below = 0, found = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    unsigned dom, b, dev, fn;
    if (sscanf(e->d_name, "%x:%x:%x.%x", &dom, &b, &dev, &fn) != 4) continue;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
    if (read_hex(dir, "vendor") != 0x10de || (read_hex(dir, "class") >> 16) != 0x03) continue;
    uint64_t key = ((uint64_t)dom << 16) | ((uint64_t)b << 8) | dev;
    if (key == bus) found = 1;
    else if (key < bus) below++;
  }
  closedir(d);
  return found ? below : -1;
}
