/* fail.c: tf_fail (see fail.h). */
#include "fail.h"

#include <stdarg.h>
#include <stdio.h>

int tf_fail(char *err, size_t errn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errn)
        vsnprintf(err, errn, fmt, ap);
    va_end(ap);
    return -1;
}
