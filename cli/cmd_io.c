/* cmd_io.c: where a command of this layer writes (cmd_io.h). */
#include "cmd_io.h"

#include <stdarg.h>

FILE *cmd_out(const tern_invocation *inv) { return inv->out ? inv->out : stdout; }

FILE *cmd_err(const tern_invocation *inv) { return inv->err ? inv->err : stderr; }

static void vreport(const tern_invocation *inv, const char *label, const char *fmt, va_list ap)
{
    FILE *err = cmd_err(inv);
    fprintf(err, "%s: ", label);
    vfprintf(err, fmt, ap);
    fprintf(err, "\n");
}

void cmd_report(const tern_invocation *inv, const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(inv, label, fmt, ap);
    va_end(ap);
}

int cmd_fail(const tern_invocation *inv, const char *label, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(inv, label, fmt, ap);
    va_end(ap);
    return code;
}
