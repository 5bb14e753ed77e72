/* The shared stage page (see stage.h). Written without locks: a torn read only garbles a
 * diagnostic, never a result. */
#include "stage.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int conf_result_fd = -1;

typedef struct {
  char call[64];
} conf_stage_page;

static conf_stage_page* page;
static const char* role = "";

void conf_stage_init(void) {
  void* p = mmap(NULL, sizeof(conf_stage_page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  page = p == MAP_FAILED ? NULL : p;
}

void conf_stage_reset(void) {
  if (page) memset(page, 0, sizeof *page);
  role = "";
}

void conf_stage_set_role(const char* r) { role = r ? r : ""; }

void conf_stage_set(const char* call) {
  if (!page) return;
  snprintf(page->call, sizeof page->call, "%s%s%s", role, *role ? " " : "", call);
}

void conf_stage_describe(char* buf, size_t len) {
  if (!page || page->call[0] == '\0') {
    if (len) buf[0] = '\0';
    return;
  }
  char call[sizeof page->call];
  memcpy(call, page->call, sizeof call);
  call[sizeof call - 1] = '\0';
  snprintf(buf, len, " (last plugin call: %s)", call);
}
