/* Whether a process of this host still runs (a same-host peer's death fails a wait at once). */
#ifndef WEFT_UTIL_PROC_H
#define WEFT_UTIL_PROC_H

/* 0 when the process is gone (or a zombie), 1 otherwise (also when it cannot be told). */
int proc_alive(int pid);

#endif
