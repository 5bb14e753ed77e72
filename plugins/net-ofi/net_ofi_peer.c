/* Who a peer process is, for the liveness check of peers on the same host. Connect requests and
 * accept replies carry the sender's identity: a hash of the kernel's boot id and the pid
 * namespace (equal hashes: the pid means the same process table), the pid and the process start
 * time (so a recycled pid is not mistaken for the peer). Providers such as shm keep accepting
 * sends to a process that has exited; this check is what turns that into an error. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net_ofi.h"

static uint64_t fnv(uint64_t h, const void* data, size_t len) {
  const uint8_t* p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Field 22 (starttime) and the state letter of /proc/<pid>/stat. 0 when unreadable. */
static int proc_stat(int pid, uint64_t* start, char* state) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* The command name may hold spaces and parentheses: fields restart after the last ')'. */
  char* p = strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long st = 0;
  char s = 0;
  /* state is field 3, starttime field 22: 19 fields apart. */
  if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                    "%*s %llu",
             &s, &st) != 2)
    return 0;
  *start = st;
  *state = s;
  return 1;
}

void net_ofi_ident_self(ofi_ident* id) {
  memset(id, 0, sizeof *id);
  uint64_t h = 1469598103934665603ull;
  char boot[64] = "";
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
    fclose(f);
  }
  struct stat ns;
  if (boot[0] == 0 || stat("/proc/self/ns/pid", &ns) != 0) {
    id->host = 0; /* unknown: never judged */
  } else {
    h = fnv(h, boot, strlen(boot));
    h = fnv(h, &ns.st_ino, sizeof ns.st_ino);
    h = fnv(h, &ns.st_dev, sizeof ns.st_dev);
    id->host = h ? h : 1;
  }
  id->pid = (int32_t)getpid();
  char state;
  if (!proc_stat(id->pid, &id->start, &state)) id->start = 0;
}

static ofi_ident self;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static void self_init(void) { net_ofi_ident_self(&self); }

int net_ofi_ident_gone(const ofi_ident* id) {
  pthread_once(&self_once, self_init);
  if (id->host == 0 || id->host != self.host || id->pid <= 0) return 0;
  uint64_t start;
  char state;
  if (!proc_stat(id->pid, &start, &state)) return 1;         /* no such process */
  if (id->start && start != id->start) return 1;              /* the pid was reused */
  return state == 'Z' || state == 'X';                         /* exited, not reaped yet */
}
