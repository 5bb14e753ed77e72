/* Globs for host names, NIC names and GPU models: fnmatch(3) syntax (*, ?, [set], [!set],
 * [a-z], [[:class:]], \ escapes). fnmatch treats a malformed pattern as literal text, which
 * would silently never match; pl_glob_check rejects such patterns up front instead. */
#include <fnmatch.h>
#include <string.h>

#include "policy_internal.h"

static const char* const classes[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                      "lower", "print", "punct", "space", "upper", "xdigit"};

/* A bracket expression starting at pat[i] == '['. Returns the index after its ']', or 0 with
 * *why and *at set. */
static size_t check_bracket(const char* pat, size_t i, const char** why, size_t* at) {
  size_t start = i++;
  if (pat[i] == '!' || pat[i] == '^') i++;
  size_t first = i;
  while (pat[i] != '\0') {
    if (pat[i] == ']' && i > first) return i + 1;
    if (pat[i] == '[' && pat[i + 1] == ':') {
      const char* end = strstr(pat + i + 2, ":]");
      size_t n = end ? (size_t)(end - (pat + i + 2)) : 0;
      int known = 0;
      for (size_t c = 0; end && c < sizeof classes / sizeof classes[0]; c++)
        if (strlen(classes[c]) == n && !strncmp(classes[c], pat + i + 2, n)) known = 1;
      if (!known) {
        *why = "unknown character class in glob (use [:alpha:], [:digit:], …)";
        *at = i;
        return 0;
      }
      i = (size_t)(end - pat) + 2;
      continue;
    }
    int c = (unsigned char)pat[i];
    if (c <= ' ' || c == 0x7f) break; /* reported by the caller's scan */
    if (c == '\\' && pat[i + 1] != '\0') c = (unsigned char)pat[++i];
    if (pat[i + 1] == '-' && pat[i + 2] != ']' && pat[i + 2] != '\0') {
      size_t hi_at = i + 2;
      int hi = (unsigned char)pat[hi_at];
      if (hi == '\\' && pat[hi_at + 1] != '\0') hi = (unsigned char)pat[++hi_at];
      if (hi < c) {
        *why = "reversed range in glob bracket";
        *at = i;
        return 0;
      }
      i = hi_at + 1;
      continue;
    }
    i++;
  }
  if (pat[i] != '\0') {
    *why = "whitespace or a control character in glob";
    *at = i;
    return 0;
  }
  *why = "unterminated '[' in glob";
  *at = start;
  return 0;
}

const char* pl_glob_check(const char* pat, size_t* at) {
  const char* why = NULL;
  *at = 0;
  if (pat[0] == '\0') return "empty glob";
  if (strlen(pat) > PL_MAX_GLOB) return "glob longer than 255 characters";
  for (size_t i = 0; pat[i] != '\0';) {
    unsigned char c = (unsigned char)pat[i];
    if (c <= ' ' || c == 0x7f) {
      *at = i;
      return "whitespace or a control character in glob";
    }
    if (c == '\\') {
      if (pat[i + 1] == '\0') {
        *at = i;
        return "glob ends with a lone backslash";
      }
      i += 2;
      continue;
    }
    if (c == '[') {
      size_t next = check_bracket(pat, i, &why, at);
      if (next == 0) return why;
      i = next;
      continue;
    }
    if (c == ']') {
      *at = i;
      return "']' without '[' in glob";
    }
    i++;
  }
  return NULL;
}

int pl_glob_match(const char* pat, const char* s, int casefold) {
  return fnmatch(pat, s, casefold ? FNM_CASEFOLD : 0) == 0;
}
