/* topo/pci_path: the GPU-NIC path class from a fake sysfs tree, and NCCL_NET_GDR_LEVEL values.
 *
 * The tree (two root complexes on two NUMA nodes, a third complex on node 0):
 *   pci0000:00 (node 0)
 *     00:01.0 root port ─ 01:00.0 switch up ─┬ 02:00.0 down ─ 03:00.0 GPU A, 03:00.1 (its 2nd function)
 *                                            ├ 02:01.0 down ─ 04:00.0 NIC near A
 *                                            └ 02:02.0 down ─ 05:00.0 switch up ─ 06:00.0 down ─ 07:00.0 NIC behind 2 switches
 *     00:02.0 root port ─ 08:00.0 NIC on another root port
 *   pci0000:40 (node 0) ─ 40:01.0 ─ 41:00.0 NIC on another complex, same socket
 *   pci0000:80 (node 1) ─ 80:01.0 ─ 81:00.0 NIC on the other socket */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "topo/pci_path.h"

static char root[256];

static void mkdirs(const char* rel) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  for (char* s = p + strlen(root) + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
}

static void write_file(const char* rel, const char* text) {
  char p[1400];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  FILE* f = fopen(p, "w");
  EXPECT(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* A device directory, its numa_node, and its /sys/bus/pci/devices link. */
static void device(const char* rel, const char* numa) {
  mkdirs(rel);
  char f[1024], link[1024], target[1024];
  snprintf(f, sizeof f, "%s/numa_node", rel);
  write_file(f, numa);
  const char* id = strrchr(rel, '/') + 1;
  snprintf(link, sizeof link, "%s/bus/pci/devices/%s", root, id);
  snprintf(target, sizeof target, "../../../%s", rel);
  EXPECT(symlink(target, link) == 0);
}

static char* abs_of(const char* rel) {
  static char p[8][1024];
  static int i;
  i = (i + 1) % 8;
  snprintf(p[i], sizeof p[i], "%s/%s", root, rel);
  return p[i];
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/weft_pci_XXXXXX");
  EXPECT(mkdtemp(root) != NULL);
  mkdirs("bus/pci/devices");
  const char* sw = "devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  char gpu[512], gpu_f1[512], nic_near[512], nic_far_sw[512];
  snprintf(gpu, sizeof gpu, "%s/0000:02:00.0/0000:03:00.0", sw);
  snprintf(gpu_f1, sizeof gpu_f1, "%s/0000:02:00.0/0000:03:00.1", sw);
  snprintf(nic_near, sizeof nic_near, "%s/0000:02:01.0/0000:04:00.0", sw);
  snprintf(nic_far_sw, sizeof nic_far_sw, "%s/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0",
           sw);
  const char* nic_rp2 = "devices/pci0000:00/0000:00:02.0/0000:08:00.0";
  const char* nic_cx = "devices/pci0000:40/0000:40:01.0/0000:41:00.0";
  const char* nic_sock = "devices/pci0000:80/0000:80:01.0/0000:81:00.0";
  device(gpu, "0\n");
  device(gpu_f1, "0\n");
  device(nic_near, "0\n");
  device(nic_far_sw, "0\n");
  device(nic_rp2, "0\n");
  device(nic_cx, "0\n");
  device(nic_sock, "1\n");
  /* A NIC's pciPath may name something below the device (a net interface). */
  char nic_if[600];
  snprintf(nic_if, sizeof nic_if, "%s/net/eth0", nic_near);
  mkdirs(nic_if);
  mkdirs("devices/virtual/net/lo");

  const char* g = "0000:03:00.0";
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(gpu)), WEFT_PATH_LOC);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(gpu_f1)), WEFT_PATH_LOC);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(nic_near)), WEFT_PATH_PIX);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(nic_if)), WEFT_PATH_PIX);
  EXPECT_EQ_INT(pci_path_class(root, "0000:03:00.0", abs_of(nic_far_sw)), WEFT_PATH_PXB);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(nic_rp2)), WEFT_PATH_PHB);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(nic_cx)), WEFT_PATH_PHB);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of(nic_sock)), WEFT_PATH_SYS);
  /* Upper-case bus ids (cudaDeviceGetPCIBusId writes them so) and the symlinked form. */
  EXPECT_EQ_INT(pci_path_class(root, "0000:03:00.0", abs_of("bus/pci/devices/0000:04:00.0")),
                WEFT_PATH_PIX);
  EXPECT_EQ_INT(pci_path_class(root, "0000:81:00.0", abs_of(nic_cx)), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, "0000:08:00.0", abs_of(nic_near)), WEFT_PATH_PHB);
  /* Unknown: nothing is assumed near. */
  EXPECT_EQ_INT(pci_path_class(root, g, NULL), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, g, abs_of("devices/virtual/net/lo")), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, g, "/nonexistent/path"), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, "0000:ff:00.0", abs_of(nic_near)), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, "garbage", abs_of(nic_near)), WEFT_PATH_SYS);
  EXPECT_EQ_INT(pci_path_class(root, NULL, abs_of(nic_near)), WEFT_PATH_SYS);

  /* NVML's numbering: NVIDIA display controllers in PCI order (GPU A, and 08:00.0 dressed up
   * as a second GPU); the NICs are other vendors' or other classes. */
  char f[1100];
  snprintf(f, sizeof f, "%s/vendor", gpu);
  write_file(f, "0x10de\n");
  snprintf(f, sizeof f, "%s/class", gpu);
  write_file(f, "0x030200\n");
  snprintf(f, sizeof f, "%s/vendor", nic_rp2);
  write_file(f, "0x10de\n");
  snprintf(f, sizeof f, "%s/class", nic_rp2);
  write_file(f, "0x030000\n");
  snprintf(f, sizeof f, "%s/vendor", nic_near);
  write_file(f, "0x15b3\n");
  snprintf(f, sizeof f, "%s/class", nic_near);
  write_file(f, "0x020000\n");
  snprintf(f, sizeof f, "%s/vendor", nic_cx);
  write_file(f, "0x10de\n"); /* NVIDIA, but a network controller */
  snprintf(f, sizeof f, "%s/class", nic_cx);
  write_file(f, "0x020700\n");
  EXPECT_EQ_INT(pci_gpu_index(root, 0x0300), 0);
  EXPECT_EQ_INT(pci_gpu_index(root, 0x0800), 1);
  EXPECT_EQ_INT(pci_gpu_index(root, 0x0400), -1);
  EXPECT_EQ_INT(pci_gpu_index(root, 0x4100), -1);
  EXPECT_EQ_INT(pci_gpu_index("/nonexistent", 0x0300), -1);

  int lv = -1;
  const char* names[] = {"LOC", "pix", "PXB", "PHB", "SYS", "NVL", "PXN", "C2C"};
  const int want[] = {WEFT_PATH_LOC, WEFT_PATH_PIX, WEFT_PATH_PXB, WEFT_PATH_PHB,
                      WEFT_PATH_SYS, WEFT_PATH_LOC, WEFT_PATH_PXB, WEFT_PATH_LOC};
  for (int i = 0; i < 8; i++) {
    lv = -1;
    EXPECT(pci_path_parse_level(names[i], &lv));
    EXPECT_EQ_INT(lv, want[i]);
  }
  for (int i = 0; i <= 7; i++) {
    char s[8];
    snprintf(s, sizeof s, "%d", i);
    EXPECT(pci_path_parse_level(s, &lv));
    EXPECT_EQ_INT(lv, i > WEFT_PATH_SYS ? WEFT_PATH_SYS : i);
  }
  lv = 42;
  EXPECT(!pci_path_parse_level("", &lv));
  EXPECT(!pci_path_parse_level("NEAR", &lv));
  EXPECT(!pci_path_parse_level("-1", &lv));
  EXPECT(!pci_path_parse_level("2x", &lv));
  EXPECT(!pci_path_parse_level(NULL, &lv));
  EXPECT_EQ_INT(lv, 42);
  EXPECT(strcmp(pci_path_name(WEFT_PATH_PXB), "PXB") == 0);

  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  EXPECT(system(cmd) == 0);
  printf("topo_pci_path: every path class and level as expected\n");
  return 0;
}
