/* diag.h: a list of user-facing error messages, so that checking a config
 * reports every problem at once instead of stopping at the first. */
#ifndef TERN_DIAG_H
#define TERN_DIAG_H

#include "base/export.h"

#include <stddef.h>
#include <stdio.h>

#include "tern/host.h"

typedef struct tern_diag {
    char **msgs;
    size_t n, cap;
    int oom; /* an allocation failed while recording: say so when printing */
} tern_diag;

TERN_INTERNAL void tern_diag_init(tern_diag *d);
TERN_INTERNAL void tern_diag_free(tern_diag *d);
/* Append one message (one line, no trailing newline). */
void tern_diag_addf(tern_diag *d, const char *fmt, ...) TERN_PRINTF(2, 3);
/* Print every message, one per line, to `f`. */
void tern_diag_print(const tern_diag *d, FILE *f);

#endif
