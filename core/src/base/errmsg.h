/* errmsg.h: the per-thread error message behind every failing status.
 * A function that fails calls tern_errorf() and returns the status; its
 * caller reads tern_error_message() on the same thread. host->fail() for
 * plugins writes the same slot. */
#ifndef TERN_ERRMSG_H
#define TERN_ERRMSG_H

#include "base/export.h"

#include <stdarg.h>

#include "tern/host.h"

/* Set the calling thread's message (printf-style) and return `status`. The
 * arguments may include tern_error_message() (to wrap the current message). */
TERN_INTERNAL int tern_errorf(int status, const char *fmt, ...) TERN_PRINTF(2, 3);
int tern_verrorf(int status, const char *fmt, va_list ap);
/* Prefix the current message: "<prefix><message>" (e.g. a file name). */
void tern_error_prefix(const char *fmt, ...) TERN_PRINTF(1, 2);
/* The calling thread's last message ("" if none). Valid until the next set. */
TERN_INTERNAL const char *tern_error_message(void);
TERN_INTERNAL void tern_error_clear(void);
/* Short name of a status code ("TERN_EINVAL"). */
const char *tern_status_name(int status);

#endif
