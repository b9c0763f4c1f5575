/* command.c: running commands for end-to-end tests (see command.h). */
#include "command.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(buf, 1, n - 1, f) : 0;
    buf[got] = '\0';
    if (f)
        fclose(f);
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

void run(result *r, const char *fmt, ...)
{
    char cmd[4096], full[8192], out[512], err[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(out, sizeof out, "%s/cmd_%d.out", TERN_TEST_WORK_DIR, (int)getpid());
    snprintf(err, sizeof err, "%s/cmd_%d.err", TERN_TEST_WORK_DIR, (int)getpid());
    /* grouped, so the redirections apply to the whole command, pipelines included */
    snprintf(full, sizeof full, "cd %s && unset TERN_PLUGIN_PATH && { %s ; } >%s 2>%s </dev/null",
             TERN_TEST_WORK_DIR, cmd, out, err);
    int st = system(full);
    cr_assert(WIFEXITED(st), "command died: %s", cmd);
    r->code = WEXITSTATUS(st);
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
    remove(out);
    remove(err);
    cr_expect_null(strstr(r->err, "Sanitizer"), "%s: %s", cmd, r->err);
    cr_expect_null(strstr(r->err, "runtime error:"), "%s: %s", cmd, r->err);
}
