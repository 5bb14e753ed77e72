/* The shared stage page (see stage.h). Written without locks: a torn read only garbles a
 * diagnostic, never a result. */
#include "stage.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int conf_result_fd = -1;

enum { SLOT_TEST = 0, SLOT_PEER = 1, CALL_LEN = 64 };

typedef struct {
  char call[2][CALL_LEN];
} conf_stage_page;

static conf_stage_page* page;
static int slot = SLOT_TEST;

void conf_stage_init(void) {
  if (page) return;
  void* p = mmap(NULL, sizeof(conf_stage_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  page = p == MAP_FAILED ? NULL : p;
}

void conf_stage_reset(void) {
  if (page) memset(page, 0, sizeof *page);
  slot = SLOT_TEST;
}

void conf_stage_become_peer(void) { slot = SLOT_PEER; }

void conf_stage_set(const char* call) {
  if (!page) return;
  snprintf(page->call[slot], CALL_LEN, "%s", call);
}

static void read_slot(int which, char* out) {
  memcpy(out, page->call[which], CALL_LEN);
  out[CALL_LEN - 1] = '\0';
}

void conf_stage_describe(char* buf, size_t len) {
  if (len) buf[0] = '\0';
  if (!page) return;
  char mine[CALL_LEN], peer[CALL_LEN];
  read_slot(SLOT_TEST, mine);
  read_slot(SLOT_PEER, peer);
  if (mine[0] && peer[0])
    snprintf(buf, len, " (last plugin call: %s; the peer's: %s)", mine, peer);
  else if (mine[0])
    snprintf(buf, len, " (last plugin call: %s)", mine);
  else if (peer[0])
    snprintf(buf, len, " (the peer's last plugin call: %s)", peer);
}

void conf_stage_describe_peer(char* buf, size_t len) {
  if (len) buf[0] = '\0';
  if (!page) return;
  char peer[CALL_LEN];
  read_slot(SLOT_PEER, peer);
  if (peer[0]) snprintf(buf, len, " (last plugin call: %s)", peer);
}
