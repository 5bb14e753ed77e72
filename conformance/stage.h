/* Where a test is: the last plugin call the test process and its peer (if any) entered, kept on
 * a page shared with the runner, so a crash or a timeout reads "killed by SIGSEGV (last plugin
 * call: isend)". */
#ifndef WEFT_CONF_STAGE_H
#define WEFT_CONF_STAGE_H

#include <stddef.h>

/* The test child's result pipe (write end); a peer process closes it after fork. */
extern int conf_result_fd;

/* Map the shared page; once, in the runner, before the first test. */
void conf_stage_init(void);
/* Forget the previous test's stage (runner, before each test). */
void conf_stage_reset(void);
/* Record the plugin call about to be made ("isend"), in this process's slot. */
void conf_stage_set(const char* call);
/* Make this process the peer: its calls go to the peer's slot. */
void conf_stage_become_peer(void);
/* " (last plugin call: isend; peer's: test)", " (last plugin call: isend)" or "". */
void conf_stage_describe(char* buf, size_t len);
/* " (last plugin call: isend)" for the peer alone, or "". */
void conf_stage_describe_peer(char* buf, size_t len);

#endif
