/* log.h: the run's logger. Lines go to stderr and, once a run directory
 * exists, to its log.txt, with a timestamp there. A stderr whose reader went
 * away (EPIPE, with SIGPIPE ignored) or whose terminal hung up (EIO) is
 * written no more; log.txt goes on. Thread-safe. */
#ifndef TERN_LOG_H
#define TERN_LOG_H

#include "base/export.h"

#include <stdarg.h>
#include <stdio.h>

#include "tern/host.h"

/* Lines above `level` are dropped. Default TERN_LOG_INFO. */
void tern_log_set_level(tern_log_level level);
/* Parse "error" | "warn" | "info" | "debug"; -1 if none of them. */
int tern_log_level_parse(const char *name);
/* Also write to `path` (appending); TERN_EIO with a message on failure. */
int tern_log_open_file(const char *path);
void tern_log_close_file(void);
/* log.txt's file descriptor, or -1 when none is open: for the crash report
 * (base/op_watch.h), which may only write(2). */
int tern_log_fd(void);
/* Where stderr lines go (tests redirect it); NULL restores stderr. */
TERN_INTERNAL void tern_log_set_stream(FILE *stream);

/* Also hand every line shown (after stderr and log.txt) to `fn`, outside
 * the logger's lock: a worker rank of a run on MPI ranks sends its lines to
 * the master's log.txt. fn must not log. NULL stops it. */
typedef void (*tern_log_forward_fn)(void *arg, tern_log_level level, const char *who,
                                    const char *line);
void tern_log_set_forward(tern_log_forward_fn fn, void *arg);
/* A line to log.txt alone (a worker rank's, forwarded: its own stderr showed
 * it already), if log.txt is open and `level` passes. */
void tern_log_file_only(tern_log_level level, const char *who, const char *line);

/* A progress line: on a terminal it is a status line that each call
 * replaces (log lines print above it) and log.txt gets it as an info line;
 * elsewhere it is an ordinary info line. tern_log_progress_end() ends the
 * status line with a newline. */
void tern_log_progress(const char *text);
void tern_log_progress_end(void);

/* One line from `who` ("core", "buffer", ...). */
void tern_logf(tern_log_level level, const char *who, const char *fmt, ...) TERN_PRINTF(3, 4);
void tern_vlogf(tern_log_level level, const char *who, const char *fmt, va_list ap);

#endif
