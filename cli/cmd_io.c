/* cmd_io.c: where a command of this layer writes (cmd_io.h). */
#include "cmd_io.h"

#include <dirent.h>
#include <stdarg.h>
#include <string.h>

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

int cmd_structs_too_old(const tern_invocation *inv, const char *label, size_t args_size,
                        size_t args_need)
{
    int inv_ok = inv && inv->size >= sizeof(tern_invocation);
    if (inv_ok && args_size >= args_need)
        return 0;
    fprintf(inv_ok ? cmd_err(inv) : stderr,
            "%s: the caller's argument structs are too old for this libtern\n", label);
    return 1;
}

int cmd_dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int empty = 1;
    struct dirent *e;
    while (empty && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            empty = 0;
    closedir(d);
    return empty;
}
