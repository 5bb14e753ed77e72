/* NCCL_IB_HCA: which HCAs and ports the plugin uses. A comma list of NAME or NAME:PORT; names
 * match as prefixes ("mlx5" takes mlx5_0, mlx5_1, mlx5_10), or whole names after a leading '='.
 * A leading '^' (before any '=') turns the list into exclusions. No port means every port.
 * Examples: "mlx5_0:1,mlx5_1:1", "=mlx5_1", "^mlx5_2", "^=mlx5_0:2". */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_ib_internal.h"

void net_ib_hca_parse(const char* text, ib_hca_spec* spec) {
  memset(spec, 0, sizeof *spec);
  if (text == NULL) return;
  const char* s = text;
  while (isspace((unsigned char)*s)) s++;
  if (*s == '^') {
    spec->exclude = 1;
    s++;
  }
  if (*s == '=') {
    spec->exact = 1;
    s++;
  }
  while (*s && spec->n < IB_HCA_MAX) {
    const char* end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    char tok[96];
    if (len >= sizeof tok) len = sizeof tok - 1;
    memcpy(tok, s, len);
    tok[len] = '\0';
    /* trim */
    char* t = tok;
    while (isspace((unsigned char)*t)) t++;
    char* e = t + strlen(t);
    while (e > t && isspace((unsigned char)e[-1])) *--e = '\0';
    if (*t) {
      int port = -1;
      char* colon = strchr(t, ':');
      if (colon) {
        *colon = '\0';
        char* num_end = NULL;
        long p = strtol(colon + 1, &num_end, 10);
        port = (num_end && *num_end == '\0' && p > 0 && p < 256) ? (int)p : -1;
      }
      if (*t) {
        snprintf(spec->item[spec->n].name, sizeof spec->item[spec->n].name, "%s", t);
        spec->item[spec->n].port = port;
        spec->n++;
      }
    }
    if (!end) break;
    s = end + 1;
  }
}

int net_ib_hca_match(const ib_hca_spec* spec, const char* dev, int port) {
  if (spec->n == 0) return 1;
  int found = 0;
  for (int i = 0; i < spec->n && !found; i++) {
    const char* name = spec->item[i].name;
    int name_ok = spec->exact ? strcmp(dev, name) == 0 : strncmp(dev, name, strlen(name)) == 0;
    found = name_ok && (spec->item[i].port < 0 || spec->item[i].port == port);
  }
  return spec->exclude ? !found : found;
}
