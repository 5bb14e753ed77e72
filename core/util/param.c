/* Parameter table and the conf-file/env-plugin/policy layers (see param.h). The registry of
 * names set by a file or the policy, and the copies of env plugin answers, are the only mutable
 * state, guarded by one mutex. */
#include "util/param.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <strings.h>

#include "util/log.h"

static const weft_param_info table[] = {
#define WEFT_PARAM(id, name, kind, def, min, max, help) \
  {name, WEFT_PARAM_##kind, def, min, max, help},
#define WEFT_PARAM_CHOICES(id, form, words)
#include "util/params.def"
#undef WEFT_PARAM_CHOICES
#undef WEFT_PARAM
};

/* The closed sets of string settings: words, and whether the value is a comma list. */
enum { CHOICE_ONE, CHOICE_LIST };
static const struct {
  const char* words;
  int form;
} choices[WEFT_PARAM_COUNT] = {
#define WEFT_PARAM(id, name, kind, def, min, max, help)
#define WEFT_PARAM_CHOICES(id, form, words) [WEFT_PARAM_##id] = {words, CHOICE_##form},
#include "util/params.def"
#undef WEFT_PARAM_CHOICES
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
static param_env_source_fn env_source;

/* Copies of what the env plugin answered, one per (name, value) seen: its strings are only
 * valid until it is asked the same name again, ours for the process. */
typedef struct interned {
  struct interned* next;
  char* name;
  char* value;
} interned;
static interned* answers;

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

/* One KEY=VALUE line (no newline); '#' starts a comment. A name already in the environment is
 * left alone. */
static void conf_line(const char* path, int lineno, char* line, weft_param_source src) {
  char* hash = strchr(line, '#');
  if (hash) *hash = '\0';
  char* s = trim(line);
  if (*s == '\0') return;
  char* eq = strchr(s, '=');
  if (!eq) {
    WARN("%s:%d: expected KEY=VALUE, ignoring '%s'", path, lineno, s);
    return;
  }
  *eq = '\0';
  char* key = trim(s);
  char* value = trim(eq + 1);
  if (*key == '\0') return;
  pthread_mutex_lock(&reg_lock);
  if (getenv(key) == NULL) {
    setenv(key, value, 0);
    remember_locked(key, src);
  }
  pthread_mutex_unlock(&reg_lock);
}

/* The file's bytes (NUL-terminated) when it is a regular file of at most MAX_CONF_BYTES, else
 * NULL with a WARN: a device (/dev/zero never ends), a FIFO (its open would wait for a writer:
 * O_NONBLOCK) or a directory is refused before anything is read from it. Silent when the file
 * does not exist. */
static char* conf_read(const char* path, size_t* bytes) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) WARN("%s: cannot open: %s; ignored", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  char* buf = NULL;
  if (fstat(fd, &st) != 0) {
    WARN("%s: cannot stat: %s; ignored", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    WARN("%s: not a regular file (mode 0%o); ignored", path, (unsigned)st.st_mode);
  } else if (st.st_size > MAX_CONF_BYTES) {
    WARN("%s: %lld bytes, more than the %d a conf file may have; ignored", path,
         (long long)st.st_size, MAX_CONF_BYTES);
  } else if ((buf = malloc((size_t)st.st_size + 1)) != NULL) {
    size_t n = 0; /* a file that grows while it is read is cut at its size when opened */
    while (n < (size_t)st.st_size) {
      ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      n += (size_t)r;
    }
    buf[n] = '\0';
    *bytes = n;
  }
  close(fd);
  return buf;
}

/* KEY=VALUE lines, '#' comments. A line longer than MAX_LINE is ignored whole (never split
 * into pieces read as lines of their own); a NUL byte ends the text (not a text file past it). */
static void load_conf_file(const char* path, weft_param_source src) {
  size_t bytes = 0;
  char* text = conf_read(path, &bytes);
  if (!text) return;
  size_t len = strlen(text);
  if (len < bytes)
    WARN("%s: a NUL byte at offset %zu; the rest of the file is ignored", path, len);
  int lineno = 0;
  for (char* line = text; line < text + len;) {
    lineno++;
    char* nl = memchr(line, '\n', (size_t)(text + len - line));
    size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
    if (nl) *nl = '\0';
    if (n >= MAX_LINE)
      WARN("%s:%d: line of %zu bytes, longer than %d; ignored", path, lineno, n, MAX_LINE - 1);
    else
      conf_line(path, lineno, line, src);
    line += n + 1;
  }
  free(text);
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
  else if (src == WEFT_SRC_DEFAULT && param_value(name) != NULL) src = WEFT_SRC_ENV_PLUGIN;
  return src;
}

const char* param_source_name(weft_param_source src) {
  switch (src) {
    case WEFT_SRC_ENV: return "environment";
    case WEFT_SRC_POLICY: return "policy file";
    case WEFT_SRC_ENV_PLUGIN: return "env plugin";
    case WEFT_SRC_CONF_USER: return "user nccl.conf";
    case WEFT_SRC_CONF_ETC: return "/etc/nccl.conf";
    default: return "default";
  }
}

void param_set_env_source(param_env_source_fn get) {
  __atomic_store_n(&env_source, get, __ATOMIC_RELEASE);
}

static const char* intern(const char* name, const char* value) {
  pthread_mutex_lock(&reg_lock);
  const char* out = NULL;
  for (interned* a = answers; a && !out; a = a->next)
    if (!strcmp(a->name, name) && !strcmp(a->value, value)) out = a->value;
  if (out == NULL) {
    interned* a = calloc(1, sizeof *a);
    if (a) a->name = strdup(name);
    if (a) a->value = strdup(value);
    if (a && a->name && a->value) {
      a->next = answers;
      answers = a;
      out = a->value;
    } else if (a) {
      free(a->name);
      free(a->value);
      free(a);
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return out;
}

/* Conf files applied; then the env plugin (which sees the environment first) or getenv. */
const char* param_value(const char* name) {
  if (name == NULL) return NULL;
  param_load_conf_files();
  param_env_source_fn get = __atomic_load_n(&env_source, __ATOMIC_ACQUIRE);
  if (get == NULL) return getenv(name);
  const char* v = get(name);
  /* The environment's own string (an env plugin answering from getenv) is as stable as before;
   * only the plugin's own strings are copied. */
  if (v == NULL || v == getenv(name)) return v;
  return intern(name, v);
}

int param_apply_policy(const char* name, const char* value) {
  param_load_conf_files();
  pthread_mutex_lock(&reg_lock);
  int i = find_set_name(name);
  int taken = i >= 0 ? set_names[i].src != WEFT_SRC_POLICY : getenv(name) != NULL;
  pthread_mutex_unlock(&reg_lock);
  /* Asked outside the lock: the plugin's getEnv is foreign code. */
  if (!taken && i < 0 && param_value(name) != NULL) taken = 1;
  if (!taken) {
    pthread_mutex_lock(&reg_lock);
    setenv(name, value, 1);
    remember_locked(name, WEFT_SRC_POLICY);
    pthread_mutex_unlock(&reg_lock);
  }
  return !taken;
}

static const char* raw_value(weft_param_id id) { return param_value(table[id].name); }

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

/* One word of a value against the words of a choice ("#": a non-negative integer). */
static int word_allowed(const char* words, const char* w, size_t wlen) {
  if (wlen == 0) return 0;
  for (const char* p = words; *p;) {
    size_t n = strcspn(p, " ");
    if (n == 1 && *p == '#') {
      size_t d = 0;
      while (d < wlen && w[d] >= '0' && w[d] <= '9') d++;
      if (d == wlen) return 1;
    } else if (n == wlen && !strncasecmp(p, w, n)) {
      return 1;
    }
    p += n;
    while (*p == ' ') p++;
  }
  return 0;
}

int param_value_allowed(const weft_param_info* p, const char* value, char* expected, size_t len) {
  if (p == NULL || p < table || p >= table + WEFT_PARAM_COUNT) return 1;
  const char* words = choices[p - table].words;
  int list = choices[p - table].form == CHOICE_LIST;
  if (words == NULL || value == NULL || *value == '\0') return 1;
  const char* v = value;
  if (list && *v == '^') v++;
  int ok = 1;
  for (;;) {
    size_t n = list ? strcspn(v, ",") : strlen(v);
    if (!word_allowed(words, v, n)) ok = 0;
    if (v[n] != ',') break;
    v += n + 1;
  }
  if (ok || expected == NULL || len == 0) return ok;
  /* "A, B or C" from the words; "#" reads "an integer". */
  size_t o = 0;
  expected[0] = '\0';
  if (list) o += (size_t)snprintf(expected, len, "a comma list (^ first inverts) of ");
  for (const char* q = words; *q && o < len;) {
    size_t n = strcspn(q, " ");
    const char* next = q + n;
    while (*next == ' ') next++;
    const char* sep = q == words ? "" : *next ? ", " : " or ";
    if (n == 1 && *q == '#')
      o += (size_t)snprintf(expected + o, len - o, "%sa non-negative integer", sep);
    else
      o += (size_t)snprintf(expected + o, len - o, "%s%.*s", sep, (int)n, q);
    q = next;
  }
  return 0;
}

const char* param_str(weft_param_id id) {
  const char* v = raw_value(id);
  if (v == NULL || *v == '\0') return table[id].def;
  char expected[256];
  if (!param_value_allowed(&table[id], v, expected, sizeof expected)) {
    if (!__atomic_exchange_n(&warned[id], 1, __ATOMIC_RELAXED))
      WARN("%s=%s: expected %s; using the default %s", table[id].name, v, expected,
           *table[id].def ? table[id].def : "(unset)");
    return table[id].def;
  }
  return v;
}

void param_check_all(void) {
  for (int id = 0; id < WEFT_PARAM_COUNT; id++) {
    if (id == WEFT_PARAM_DEBUG || id == WEFT_PARAM_DEBUG_SUBSYS) continue; /* log.c checks */
    if (table[id].kind == WEFT_PARAM_INT)
      (void)param_int((weft_param_id)id);
    else
      (void)param_str((weft_param_id)id);
  }
}
