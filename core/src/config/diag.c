/* diag.c: list of error messages (see diag.h). */
#include "config/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tern_diag_init(tern_diag *d) { memset(d, 0, sizeof *d); }

void tern_diag_free(tern_diag *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->msgs[i]);
    free(d->msgs);
    memset(d, 0, sizeof *d);
}

void tern_diag_addf(tern_diag *d, const char *fmt, ...)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        char **m = realloc(d->msgs, cap * sizeof *m);
        if (!m) {
            d->oom = 1;
            return;
        }
        d->msgs = m;
        d->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int len = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (len < 0) {
        d->oom = 1;
        return;
    }
    d->msgs[d->n++] = s;
}

void tern_diag_print(const tern_diag *d, FILE *f)
{
    for (size_t i = 0; i < d->n; i++)
        fprintf(f, "%s\n", d->msgs[i]);
    if (d->oom)
        fprintf(f, "tern: out of memory while recording errors; some are not shown\n");
}
