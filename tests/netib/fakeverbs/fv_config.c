/* fakeverbs configuration, read once per process from the environment:
 *
 *   FAKEVERBS_DEVICES      comma list of NAME:LINK[:NPORTS], LINK ib or eth
 *                          (default "fake_ib0:ib,fake_roce0:eth"; "" means no devices)
 *   FAKEVERBS_DOWN_PORTS   comma list of NAME:PORT whose port state is DOWN
 *   FAKEVERBS_FAIL_CREATE_QP=N   the N-th ibv_create_qp of the process and every later one fail
 *   FAKEVERBS_FAIL_REG_MR=N      the same for memory registration
 *   FAKEVERBS_WC_ERROR=STATUS@N  the N-th send WR posted by the process completes with STATUS
 *                          (a name such as REM_ACCESS_ERR or RETRY_EXC_ERR, or a number)
 *   FAKEVERBS_PORT_DOWN=N  once N send WRs were posted, the port of the QP posting the N-th goes
 *                          down: IBV_EVENT_PORT_ERR on every context of the device, and its QPs'
 *                          work fails as on a dead link
 *   FAKEVERBS_NO_DMABUF=1  ibv_reg_dmabuf_mr answers EOPNOTSUPP
 *   FAKEVERBS_TRACE=1      log packets and state changes on stderr
 *
 * Every process of a test must see the same FAKEVERBS_DEVICES: addresses (LIDs, GIDs) are
 * derived from the table, which is how a QP finds the port a remote address names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fv.h"

fv_faults fv_fault;

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static fv_device devs[FV_MAX_DEVS];
static int ndevs;
static long n_create_qp, n_reg_mr, n_send_wr;

static const struct {
  const char* name;
  enum ibv_wc_status status;
} status_names[] = {
    {"LOC_LEN_ERR", IBV_WC_LOC_LEN_ERR},   {"LOC_QP_OP_ERR", IBV_WC_LOC_QP_OP_ERR},
    {"LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR}, {"WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR},
    {"MW_BIND_ERR", IBV_WC_MW_BIND_ERR},   {"BAD_RESP_ERR", IBV_WC_BAD_RESP_ERR},
    {"LOC_ACCESS_ERR", IBV_WC_LOC_ACCESS_ERR}, {"REM_INV_REQ_ERR", IBV_WC_REM_INV_REQ_ERR},
    {"REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR}, {"REM_OP_ERR", IBV_WC_REM_OP_ERR},
    {"RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR}, {"RNR_RETRY_EXC_ERR", IBV_WC_RNR_RETRY_EXC_ERR},
    {"FATAL_ERR", IBV_WC_FATAL_ERR},       {"GENERAL_ERR", IBV_WC_GENERAL_ERR},
};

static long env_long(const char* name) {
  const char* v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : 0;
}

static void set_gid_ll(union ibv_gid* g, uint64_t iface) {
  memset(g, 0, sizeof *g);
  g->raw[0] = 0xfe;
  g->raw[1] = 0x80;
  for (int i = 0; i < 8; i++) g->raw[8 + i] = (uint8_t)(iface >> (56 - 8 * i));
}

static void add_gid(fv_port* p, const union ibv_gid* g, uint32_t type) {
  if (p->ngid >= FV_GID_TBL) return;
  p->gid[p->ngid] = *g;
  p->gid_type[p->ngid] = type;
  p->ngid++;
}

/* Addresses derived from (device index, port): unique within the emulated fabric. */
static void setup_port(fv_device* d, int pn) {
  fv_port* p = &d->port[pn];
  memset(p, 0, sizeof *p);
  p->state = IBV_PORT_ACTIVE;
  union ibv_gid g;
  if (!d->eth) {
    p->mtu = IBV_MTU_4096;
    p->lid = (uint16_t)(0x10 + d->index * 4 + pn);
    set_gid_ll(&g, d->guid + (uint64_t)pn);
    add_gid(p, &g, IBV_GID_TYPE_IB);
    return;
  }
  p->mtu = IBV_MTU_1024;
  /* fe80::<mac-derived>, then ::ffff:10.<dev>.<port>.1, then fd00::<dev>:<port>, each as RoCE
   * v1 and v2, in the order an mlx5 port lists them. */
  set_gid_ll(&g, 0x02005efffe000000ull | (uint64_t)(d->index << 8) | (uint64_t)pn);
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V1);
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V2);
  memset(&g, 0, sizeof g);
  g.raw[10] = 0xff;
  g.raw[11] = 0xff;
  g.raw[12] = 10;
  g.raw[13] = (uint8_t)d->index;
  g.raw[14] = (uint8_t)pn;
  g.raw[15] = 1;
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V1);
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V2);
  memset(&g, 0, sizeof g);
  g.raw[0] = 0xfd;
  g.raw[13] = (uint8_t)d->index;
  g.raw[15] = (uint8_t)pn;
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V1);
  add_gid(p, &g, IBV_GID_TYPE_ROCE_V2);
}

static void add_device(const char* name, int eth, int nports) {
  if (ndevs >= FV_MAX_DEVS) {
    fprintf(stderr, "fakeverbs: more than %d devices, %s ignored\n", FV_MAX_DEVS, name);
    return;
  }
  fv_device* d = &devs[ndevs];
  memset(d, 0, sizeof *d);
  d->index = ndevs;
  d->eth = eth;
  d->nports = nports;
  d->guid = 0x0002c90300a00000ull + ((uint64_t)ndevs << 8);
  d->dev.node_type = IBV_NODE_CA;
  d->dev.transport_type = IBV_TRANSPORT_IB;
  snprintf(d->dev.name, sizeof d->dev.name, "%s", name);
  snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", ndevs);
  snprintf(d->dev.dev_path, sizeof d->dev.dev_path, "/nonexistent/fakeverbs/uverbs%d", ndevs);
  snprintf(d->dev.ibdev_path, sizeof d->dev.ibdev_path, "/nonexistent/fakeverbs/%s", name);
  for (int p = 1; p <= nports; p++) setup_port(d, p);
  ndevs++;
}

static void parse_devices(const char* spec) {
  char* copy = strdup(spec);
  char* save = NULL;
  for (char* tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
    char* link = strchr(tok, ':');
    int nports = 1;
    int eth = 0;
    if (link) {
      *link++ = '\0';
      char* np = strchr(link, ':');
      if (np) {
        *np++ = '\0';
        nports = atoi(np);
      }
      eth = strcmp(link, "eth") == 0 || strcmp(link, "roce") == 0;
      if (!eth && strcmp(link, "ib") != 0)
        fprintf(stderr, "fakeverbs: %s: link layer '%s' is not ib or eth; using ib\n", tok, link);
    }
    if (nports < 1 || nports > FV_MAX_PORTS) {
      fprintf(stderr, "fakeverbs: %s: %d ports, using 1\n", tok, nports);
      nports = 1;
    }
    if (*tok) add_device(tok, eth, nports);
  }
  free(copy);
}

static void parse_down_ports(const char* spec) {
  char* copy = strdup(spec);
  char* save = NULL;
  for (char* tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
    char* c = strchr(tok, ':');
    int port = c ? atoi(c + 1) : 1;
    if (c) *c = '\0';
    for (int i = 0; i < ndevs; i++)
      if (strcmp(devs[i].dev.name, tok) == 0 && port >= 1 && port <= devs[i].nports)
        devs[i].port[port].state = IBV_PORT_DOWN;
  }
  free(copy);
}

static void parse_wc_error(const char* spec) {
  const char* at = strchr(spec, '@');
  if (!at) {
    fprintf(stderr, "fakeverbs: FAKEVERBS_WC_ERROR=%s: expected STATUS@N\n", spec);
    return;
  }
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(at - spec), spec);
  const char* n = name;
  if (strncmp(n, "IBV_WC_", 7) == 0) n += 7;
  int status = -1;
  for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++)
    if (strcmp(n, status_names[i].name) == 0) status = (int)status_names[i].status;
  if (status < 0) {
    char* end;
    long v = strtol(n, &end, 0);
    if (*end == '\0' && v > 0 && v <= IBV_WC_TM_RNDV_INCOMPLETE) status = (int)v;
  }
  if (status <= 0) {
    fprintf(stderr, "fakeverbs: FAKEVERBS_WC_ERROR: unknown status '%s'\n", name);
    return;
  }
  fv_fault.wc_error_status = status;
  fv_fault.wc_error_at = strtol(at + 1, NULL, 0);
}

static void load(void) {
  const char* spec = getenv("FAKEVERBS_DEVICES");
  parse_devices(spec ? spec : "fake_ib0:ib,fake_roce0:eth");
  const char* down = getenv("FAKEVERBS_DOWN_PORTS");
  if (down) parse_down_ports(down);
  fv_fault.fail_create_qp = env_long("FAKEVERBS_FAIL_CREATE_QP");
  fv_fault.fail_reg_mr = env_long("FAKEVERBS_FAIL_REG_MR");
  fv_fault.port_down_at = env_long("FAKEVERBS_PORT_DOWN");
  fv_fault.no_dmabuf = env_long("FAKEVERBS_NO_DMABUF") != 0;
  fv_fault.trace = env_long("FAKEVERBS_TRACE") != 0;
  const char* wce = getenv("FAKEVERBS_WC_ERROR");
  if (wce && *wce) parse_wc_error(wce);
}

void fv_config_load(void) { pthread_once(&cfg_once, load); }

int fv_ndevs(void) {
  fv_config_load();
  return ndevs;
}

fv_device* fv_dev(int i) { return i >= 0 && i < ndevs ? &devs[i] : NULL; }

int fv_find_port_by_gid(const union ibv_gid* gid, int* dev, int* port) {
  for (int i = 0; i < ndevs; i++)
    for (int p = 1; p <= devs[i].nports; p++)
      for (int k = 0; k < devs[i].port[p].ngid; k++)
        if (memcmp(devs[i].port[p].gid[k].raw, gid->raw, 16) == 0) {
          *dev = i;
          *port = p;
          return 1;
        }
  return 0;
}

int fv_find_port_by_lid(uint16_t lid, int* dev, int* port) {
  for (int i = 0; i < ndevs; i++)
    for (int p = 1; p <= devs[i].nports; p++)
      if (!devs[i].eth && devs[i].port[p].lid == lid) {
        *dev = i;
        *port = p;
        return 1;
      }
  return 0;
}

int fv_port_is_up(const fv_device* d, int port) {
  if (port < 1 || port > d->nports) return 0;
  return d->port[port].state == IBV_PORT_ACTIVE &&
         !__atomic_load_n(&d->port[port].fault_down, __ATOMIC_ACQUIRE);
}

long fv_count_create_qp(void) { return __atomic_add_fetch(&n_create_qp, 1, __ATOMIC_RELAXED); }
long fv_count_reg_mr(void) { return __atomic_add_fetch(&n_reg_mr, 1, __ATOMIC_RELAXED); }
long fv_count_send_wr(void) { return __atomic_add_fetch(&n_send_wr, 1, __ATOMIC_RELAXED); }

void fv_trace(const char* fmt, ...) {
  if (!fv_fault.trace) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fakeverbs[%d]: %s\n", (int)getpid(), line);
}
