/* Whether a process of this host still runs (a same-host peer's death fails a wait at once),
 * and its state (RAS names a stopped one). */
#ifndef WEFT_UTIL_PROC_H
#define WEFT_UTIL_PROC_H

/* 0 when the process is gone (or a zombie), 1 otherwise (also when it cannot be told). */
int proc_alive(int pid);

/* The state letter /proc gives pid (R, S, D, T, t, Z, X, ...), or 0 when it cannot be read. */
char proc_state(int pid);

#endif
