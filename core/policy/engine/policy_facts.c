/* This host's facts for matching, from local sources only (no plugin is loaded to learn them:
 * loading one before the policy chose it would defeat the policy):
 * - hostname: gethostname(2);
 * - NICs: network interface names (getifaddrs) and RDMA device names (/sys/class/infiniband),
 *   the names the socket and IB/OFI plugins report devices by;
 * - GPUs: the "Model:" line of /proc/driver/nvidia/gpus/<bus id>/information, present whenever
 *   the NVIDIA driver is loaded, without creating a CUDA context. */
#include <dirent.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_internal.h"

void policy_facts_add_nic(policy_facts* f, const char* name) {
  for (int i = 0; i < f->nnics; i++)
    if (!strcmp(f->nics[i], name)) return;
  if (f->nnics == POLICY_MAX_NICS) return;
  /* Truncated to the slot (a bounded copy: -O3 flags snprintf's possible truncation). */
  char* slot = f->nics[f->nnics++];
  size_t n = strnlen(name, sizeof f->nics[0] - 1);
  memcpy(slot, name, n);
  slot[n] = '\0';
}

static void add_rdma_devices(policy_facts* f, const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') policy_facts_add_nic(f, e->d_name);
  closedir(d);
}

static void read_model(policy_facts* f, const char* file) {
  FILE* in = fopen(file, "re");
  if (in == NULL) return;
  char line[256];
  while (fgets(line, sizeof line, in)) {
    if (strncmp(line, "Model:", 6)) continue;
    char* s = line + 6;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strcspn(s, "\r\n");
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    s[n] = '\0';
    if (n > 0 && f->ngpus < POLICY_MAX_GPUS)
      snprintf(f->gpus[f->ngpus++], sizeof f->gpus[0], "%.95s", s);
    break;
  }
  fclose(in);
}

void policy_facts_read_gpus(policy_facts* f, const char* dir) {
  struct dirent** list = NULL;
  int n = scandir(dir, &list, NULL, alphasort); /* bus id order */
  for (int i = 0; i < n; i++) {
    if (list[i]->d_name[0] != '.') {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s/information", dir, list[i]->d_name);
      read_model(f, path);
    }
    free(list[i]);
  }
  free(list);
}

void policy_facts_local(policy_facts* f) {
  memset(f, 0, sizeof *f);
  if (gethostname(f->hostname, sizeof f->hostname - 1) != 0) f->hostname[0] = '\0';
  struct ifaddrs* ifs = NULL;
  if (getifaddrs(&ifs) == 0) {
    for (struct ifaddrs* i = ifs; i; i = i->ifa_next)
      if (i->ifa_name) policy_facts_add_nic(f, i->ifa_name);
    freeifaddrs(ifs);
  }
  add_rdma_devices(f, "/sys/class/infiniband");
  policy_facts_read_gpus(f, "/proc/driver/nvidia/gpus");
  f->nodes_min = f->rpn_min = 1;
  f->nodes_max = f->rpn_max = INT_MAX;
}
