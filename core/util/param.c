/* Parameter table and the conf-file/policy layers (see param.h). The registry of names set by
 * a file or the policy is the only mutable state, guarded by one mutex. */
#include "util/param.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static const weft_param_info table[] = {
#define WEFT_PARAM(id, name, kind, def, min, max, help) \
  {name, WEFT_PARAM_##kind, def, min, max, help},
#include "util/params.def"
#undef WEFT_PARAM
};

enum { MAX_SET_NAMES = 512, MAX_CONF_BYTES = 1 << 20, MAX_LINE = 4096 };

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t conf_once = PTHREAD_ONCE_INIT;
static struct {
  char* name;
  weft_param_source src;
} set_names[MAX_SET_NAMES];
static int n_set_names;
static unsigned char warned[WEFT_PARAM_COUNT];

const weft_param_info* param_table(int* count) {
  if (count) *count = WEFT_PARAM_COUNT;
  return table;
}

const weft_param_info* param_info(weft_param_id id) {
  return (id >= 0 && id < WEFT_PARAM_COUNT) ? &table[id] : NULL;
}

const weft_param_info* param_find(const char* name) {
  for (int i = 0; i < WEFT_PARAM_COUNT; i++)
    if (!strcmp(table[i].name, name)) return &table[i];
  return NULL;
}

int param_parse_int(const char* s, int64_t* out) {
  if (s == NULL) return 0;
  while (*s == ' ' || *s == '\t') s++;
  if (*s == '\0') return 0;
  char* end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno != 0 || end == s) return 0;
  while (*end == ' ' || *end == '\t') end++;
  if (*end != '\0') return 0;
  *out = v;
  return 1;
}

/* Caller holds reg_lock. */
static int find_set_name(const char* name) {
  for (int i = 0; i < n_set_names; i++)
    if (!strcmp(set_names[i].name, name)) return i;
  return -1;
}

static void remember_locked(const char* name, weft_param_source src) {
  int i = find_set_name(name);
  if (i >= 0) {
    set_names[i].src = src;
    return;
  }
  if (n_set_names == MAX_SET_NAMES) return;
  char* copy = strdup(name);
  if (!copy) return;
  set_names[n_set_names].name = copy;
  set_names[n_set_names].src = src;
  n_set_names++;
}

static char* trim(char* s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = '\0';
  return s;
}

/* KEY=VALUE lines, '#' comments. A name already in the environment is left alone. */
static void load_conf_file(const char* path, weft_param_source src) {
  FILE* f = fopen(path, "r");
  if (!f) return;
  char line[MAX_LINE];
  long total = 0;
  int lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    total += (long)strlen(line);
    if (total > MAX_CONF_BYTES) {
      WARN("%s: larger than %d bytes, ignoring the rest", path, MAX_CONF_BYTES);
      break;
    }
    char* hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char* s = trim(line);
    if (*s == '\0') continue;
    char* eq = strchr(s, '=');
    if (!eq) {
      WARN("%s:%d: expected KEY=VALUE, ignoring '%s'", path, lineno, s);
      continue;
    }
    *eq = '\0';
    char* key = trim(s);
    char* value = trim(eq + 1);
    if (*key == '\0') continue;
    pthread_mutex_lock(&reg_lock);
    if (getenv(key) == NULL) {
      setenv(key, value, 0);
      remember_locked(key, src);
    }
    pthread_mutex_unlock(&reg_lock);
  }
  fclose(f);
}

static void load_conf_once(void) {
  const char* conf = getenv("NCCL_CONF_FILE");
  if (conf && *conf) {
    load_conf_file(conf, WEFT_SRC_CONF_USER);
  } else {
    const char* home = getenv("HOME");
    if (home) {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/.nccl.conf", home);
      load_conf_file(path, WEFT_SRC_CONF_USER);
    }
  }
  load_conf_file("/etc/nccl.conf", WEFT_SRC_CONF_ETC);
}

void param_load_conf_files(void) { pthread_once(&conf_once, load_conf_once); }

weft_param_source param_source_of(const char* name) {
  param_load_conf_files();
  pthread_mutex_lock(&reg_lock);
  int i = find_set_name(name);
  weft_param_source src = i >= 0 ? set_names[i].src : WEFT_SRC_DEFAULT;
  pthread_mutex_unlock(&reg_lock);
  if (src == WEFT_SRC_DEFAULT && getenv(name) != NULL) src = WEFT_SRC_ENV;
  return src;
}

const char* param_source_name(weft_param_source src) {
  switch (src) {
    case WEFT_SRC_ENV: return "environment";
    case WEFT_SRC_POLICY: return "policy file";
    case WEFT_SRC_CONF_USER: return "user nccl.conf";
    case WEFT_SRC_CONF_ETC: return "/etc/nccl.conf";
    default: return "default";
  }
}

int param_apply_policy(const char* name, const char* value) {
  param_load_conf_files();
  pthread_mutex_lock(&reg_lock);
  int i = find_set_name(name);
  int from_env = i < 0 && getenv(name) != NULL;
  if (!from_env) {
    setenv(name, value, 1);
    remember_locked(name, WEFT_SRC_POLICY);
  }
  pthread_mutex_unlock(&reg_lock);
  return !from_env;
}

static const char* raw_value(weft_param_id id) {
  param_load_conf_files();
  return getenv(table[id].name);
}

int param_is_set(weft_param_id id) {
  if (id < 0 || id >= WEFT_PARAM_COUNT) return 0;
  const char* v = raw_value(id);
  return v != NULL && *v != '\0';
}

int64_t param_int(weft_param_id id) {
  const weft_param_info* p = &table[id];
  int64_t def = 0;
  param_parse_int(p->def, &def);
  const char* v = raw_value(id);
  if (v == NULL || *v == '\0') return def;
  int64_t x;
  if (!param_parse_int(v, &x) || x < p->min || x > p->max) {
    if (!__atomic_exchange_n(&warned[id], 1, __ATOMIC_RELAXED))
      WARN("%s=%s is not an integer in [%lld, %lld]; using the default %lld", p->name, v,
           (long long)p->min, (long long)p->max, (long long)def);
    return def;
  }
  return x;
}

const char* param_str(weft_param_id id) {
  const char* v = raw_value(id);
  return (v && *v) ? v : table[id].def;
}
