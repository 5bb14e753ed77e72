/* Command-line plumbing shared by the suites (cli.h). */
#include "cli.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int conf_common_option(conf_options* opt, int argc, char** argv, int* i) {
  const char* a = argv[*i];
  const char* next = *i + 1 < argc ? argv[*i + 1] : NULL;
  if (strcmp(a, "--list") == 0) {
    opt->list_only = 1;
    return 1;
  }
  if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
    opt->verbose = 1;
    return 1;
  }
  if (next == NULL) return 0;
  if (strcmp(a, "--filter") == 0)
    opt->filter = next;
  else if (strcmp(a, "--json") == 0)
    opt->json_path = next;
  else if (strcmp(a, "--timeout") == 0)
    opt->timeout_s = atof(next);
  else
    return 0;
  (*i)++;
  return 1;
}

void* conf_open_plugin(const char* path, char* err, size_t len) {
  if (!conf_probe_dlopen(path, err, len)) return NULL;
  void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) snprintf(err, len, "%s", dlerror());
  return dl;
}

int conf_abi_option(const char* value, int lo, int hi) {
  int v = atoi(value[0] == 'v' ? value + 1 : value);
  if (v >= lo && v <= hi) return v;
  fprintf(stderr, "weft-conformance: --abi %s: versions v%d..v%d are supported\n", value, lo, hi);
  return 0;
}

void conf_version_lists(unsigned exported, int lo, int hi, char* words, size_t wlen, char* json,
                        size_t jlen) {
  if (words) words[0] = '\0';
  if (json) json[0] = '\0';
  for (int v = lo; v <= hi; v++) {
    if (!(exported & (1u << v))) continue;
    if (words) {
      size_t a = strlen(words);
      snprintf(words + a, wlen - a, "%sv%d", a ? " " : "", v);
    }
    if (json) {
      size_t b = strlen(json);
      snprintf(json + b, jlen - b, "%s%d", b ? ", " : "", v);
    }
  }
}

void conf_print_table_line(const char* suite, const char* path, int loaded, int version,
                           const void* table, const char* words, const char* after_words,
                           const char* after_version) {
  printf("# weft-conformance %s %s: ", suite, path);
  if (!loaded) {
    printf("not loadable\n");
  } else if (!version) {
    printf("no usable version\n");
  } else {
    const char* name = *(const char* const*)table;
    printf("\"%s\", exports %s%s, testing v%d%s\n", name ? name : "(null)", words,
           after_words ? after_words : "", version, after_version ? after_version : "");
  }
}
