/* exec_child.h: the exec reward's command, a long-lived child process that
 * reads a request line on its standard input and writes a verdict line on
 * its standard output (one socket for both), supervised as tern supervises
 * an isolated reward worker: its own process group (killed whole), killed
 * with tern (PR_SET_PDEATHSIG), run in the config's directory; its standard
 * error is tern's. */
#ifndef TERN_EXEC_CHILD_H
#define TERN_EXEC_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct exec_child {
    pid_t pid;      /* 0: not running */
    int fd;         /* our end of the socket; -1: not running */
    char *buf;      /* bytes read, the reply line last returned first */
    size_t len, cap;
    size_t used;    /* that line's length with its '\n': dropped at the next ask */
    size_t max_line; /* the longest reply line taken; 0: EXEC_MAX_LINE (kept by start) */
} exec_child;

/* Start argv[0] (searched in PATH when it has no '/') with argv in `dir`.
 * 0, or -1 with `why` saying what failed (exec's error included). */
int exec_child_start(exec_child *c, char *const *argv, const char *dir, char *why, size_t n);

typedef enum exec_io {
    EXEC_IO_OK,
    EXEC_IO_CLOSED,  /* the child closed its end: it exited or died */
    EXEC_IO_TIMEOUT, /* the deadline passed */
    EXEC_IO_TOO_LONG /* a reply line longer than max_line (EXEC_MAX_LINE) */
} exec_io;

#define EXEC_MAX_LINE (1u << 20)

/* Send data[0..n); then read one line into *line (its length in *len,
 * without '\n'; valid until the next call). `deadline_ns` on the monotonic
 * clock bounds both; 0 is none. */
exec_io exec_child_ask(exec_child *c, const char *data, size_t n, uint64_t deadline_ns,
                       const char **line, size_t *len);

/* Pipelining: send what can be sent of out[*sent..n) (advancing *sent) and
 * read what has arrived, until a whole reply line is in (EXEC_IO_OK, *line
 * and *len as exec_child_ask gives them) or the deadline passes. Requests
 * go out while replies come back, so a batch costs one wake-up per burst,
 * not a round trip per response, and neither side can block the other: the
 * child's replies are read while we still write. */
exec_io exec_child_pump(exec_child *c, const char *out, size_t n, size_t *sent,
                        uint64_t deadline_ns, const char **line, size_t *len);

/* Kill the child's process group and reap it; *status gets the wait status
 * (NULL is fine). Does nothing when it is not running. */
void exec_child_kill(exec_child *c, int *status);

/* After its output closed: wait up to `grace_ms` for the child to end by
 * itself, then kill it as exec_child_kill does. Returns 1 when tern's kill
 * ended it (*status is then that kill's, not how the child chose to end),
 * 0 when it had ended on its own. */
int exec_child_end(exec_child *c, int grace_ms, int *status);

/* Close its standard input (it should exit), wait up to `grace_ms`, then
 * kill it; free the buffer. */
void exec_child_stop(exec_child *c, int grace_ms);


#endif
