/* Where a test child is: the last plugin call it entered, kept on a page shared with the runner,
 * so a crash or a timeout can be reported as "killed by SIGSEGV (last plugin call: isend)". */
#ifndef WEFT_CONF_STAGE_H
#define WEFT_CONF_STAGE_H

#include <stddef.h>

/* The test child's result pipe (write end); a peer process closes it after fork. */
extern int conf_result_fd;

/* Map the shared page; once, in the runner, before the first test. */
void conf_stage_init(void);
/* Forget the previous test's stage (runner, before each test). */
void conf_stage_reset(void);
/* Record the plugin call about to be made ("isend"); role names the process ("peer"). */
void conf_stage_set(const char* call);
void conf_stage_set_role(const char* role);
/* " (last plugin call: peer isend)" or "" when nothing was recorded. */
void conf_stage_describe(char* buf, size_t len);

#endif
