/* Reading a policy file: a bounded read of a regular file that not everyone can write, then
 * YAML → tree → model. Also the model's accessors. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy_internal.h"

int policy_load_buffer(const char* name, const char* buf, size_t len, weft_policy** out,
                       policy_errors* errs) {
  memset(errs, 0, sizeof *errs);
  if (len > PL_MAX_FILE) {
    pl_error(errs, name, 1, 1, "file is larger than %d bytes", PL_MAX_FILE);
    return -1;
  }
  struct weft_policy* p = calloc(1, sizeof *p);
  if (p == NULL) {
    pl_error(errs, name, 0, 0, "out of memory");
    return -1;
  }
  p->path = pl_strndup(&p->arena, name, strlen(name));
  pnode* root = NULL;
  if (p->path == NULL || pl_yaml_parse(name, buf, len, &p->arena, &root, errs) != 0 ||
      pl_schema_build(p, root, errs) != 0) {
    if (errs->n == 0) pl_error(errs, name, 0, 0, "out of memory");
    policy_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

/* O_NONBLOCK: a FIFO planted at the path must not hang init; it is refused below. */
int policy_load_file(const char* path, weft_policy** out, policy_errors* errs) {
  memset(errs, 0, sizeof *errs);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    pl_error(errs, path, 0, 0, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  char* buf = NULL;
  if (fstat(fd, &st) != 0) {
    pl_error(errs, path, 0, 0, "cannot stat: %s", strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st.st_mode)) {
    pl_error(errs, path, 0, 0, "not a regular file");
    goto fail;
  }
  if (st.st_mode & S_IWOTH) {
    pl_error(errs, path, 0, 0, "writable by everyone (mode %03o); refusing to use it",
             (unsigned)(st.st_mode & 0777));
    goto fail;
  }
  if (st.st_size > PL_MAX_FILE) {
    pl_error(errs, path, 1, 1, "file is larger than %d bytes", PL_MAX_FILE);
    goto fail;
  }
  /* One byte more than the limit, to notice a file that grew since fstat. */
  buf = malloc(PL_MAX_FILE + 1);
  if (buf == NULL) {
    pl_error(errs, path, 0, 0, "out of memory");
    goto fail;
  }
  size_t len = 0;
  while (len < (size_t)PL_MAX_FILE + 1) {
    ssize_t r = read(fd, buf + len, (size_t)PL_MAX_FILE + 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      pl_error(errs, path, 0, 0, "read failed: %s", strerror(errno));
      goto fail;
    }
    if (r == 0) break;
    len += (size_t)r;
  }
  close(fd);
  int rc = policy_load_buffer(path, buf, len, out, errs);
  free(buf);
  return rc;
fail:
  free(buf);
  close(fd);
  return -1;
}

void policy_free(weft_policy* p) {
  if (p == NULL) return;
  pl_arena_free(&p->arena);
  free(p);
}

const char* policy_path(const weft_policy* p) { return p->path; }
int policy_cluster_count(const weft_policy* p) { return p->nclusters; }
int policy_has_defaults(const weft_policy* p) { return p->has_defaults; }

const char* policy_cluster_name(const weft_policy* p, int i) {
  if (i < 0 || i >= p->nclusters) return "(defaults)";
  return p->clusters[i].name ? p->clusters[i].name : "?";
}

int policy_cluster_line(const weft_policy* p, int i) {
  return i >= 0 && i < p->nclusters ? p->clusters[i].line : 0;
}

const char* policy_cluster_description(const weft_policy* p, int i) {
  return i >= 0 && i < p->nclusters ? p->clusters[i].description : NULL;
}

static const pl_use* use_of(const weft_policy* p, int i) {
  if (i >= 0 && i < p->nclusters) return &p->clusters[i].use;
  return p->has_defaults ? &p->defaults : NULL;
}

int policy_items(const weft_policy* p, int cluster, const policy_item** items) {
  const pl_use* u = use_of(p, cluster);
  *items = u ? u->items : NULL;
  return u ? u->nitems : 0;
}

uint64_t policy_settings_hash(const weft_policy* p, int cluster) {
  const pl_use* u = use_of(p, cluster);
  return u ? u->hash : 0;
}
