/* weft-policy's commands, one file each. */
#ifndef WEFT_TOOLS_WEFT_POLICY_H
#define WEFT_TOOLS_WEFT_POLICY_H

#include "policy/policy.h"

void wp_print_errors(const policy_errors* e);
/* explain FILE [options]: exit status 0, 1 (invalid file) or 2 (usage). */
int wp_explain(int argc, char** argv);

#endif
