/* ops_check.c: the --ops flag of the task generators (see ops_check.h). */
#include "data/ops_check.h"

#include <string.h>

#include "base/errmsg.h"

int tern_data_check_ops(const char *ops, const char *allowed)
{
    char some[16] = ""; /* "+ - *": the allowed ones, spaced */
    for (size_t i = 0; allowed[i] && 2 * i + 2 < sizeof some; i++) {
        some[2 * i] = allowed[i];
        some[2 * i + 1] = allowed[i + 1] ? ' ' : '\0';
    }
    if (!*ops)
        return tern_errorf(TERN_EINVAL, "--ops is empty; give some of %s (e.g. --ops '+-*')",
                           some);
    for (const char *p = ops; *p; p++) {
        if (!strchr(allowed, *p)) {
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                return tern_errorf(TERN_EINVAL, "--ops has byte 0x%02x, which is not an "
                                   "operation; give some of %s (e.g. --ops '+-*')",
                                   (unsigned char)*p, some);
            return tern_errorf(TERN_EINVAL, "--ops has '%c', which is not an operation; give "
                               "some of %s (e.g. --ops '+-*')", *p, some);
        }
        if (strchr(p + 1, *p))
            return tern_errorf(TERN_EINVAL, "--ops has '%c' twice; give each of %s at most "
                               "once (e.g. --ops '+-*')", *p, some);
    }
    return TERN_OK;
}
