/* command.c: running commands for end-to-end tests (see command.h). */
#include "command.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

json_t *json_lines(const char *path, const char *with)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    json_t *out = json_array();
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        cr_assert(json_is_object(o), "%s: a line that is not a JSON object: %s", path, line);
        if (!with || json_object_get(o, with))
            json_array_append(out, o);
        json_decref(o);
    }
    fclose(f);
    return out;
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

const char *test_work_dir(void)
{
    static char dir[1024];
    if (!dir[0]) {
        /* the executable's name is its ctest name (tern_add_test) */
        char exe[1024];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        const char *base = strrchr(exe, '/');
        snprintf(dir, sizeof dir, "%s/%s", TERN_TEST_WORK_ROOT, base ? base + 1 : "unknown");
        mkdir(TERN_TEST_WORK_ROOT, 0755);
        mkdir(dir, 0755);
    }
    return dir;
}

void run(result *r, const char *fmt, ...)
{
    char cmd[4096], full[8192], out[1100], err[1100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    const char *work = test_work_dir();
    snprintf(out, sizeof out, "%s/cmd_%d.out", work, (int)getpid());
    snprintf(err, sizeof err, "%s/cmd_%d.err", work, (int)getpid());
    /* grouped, so the redirections apply to the whole command, pipelines included */
    snprintf(full, sizeof full, "cd %s && unset TERN_PLUGIN_PATH && { %s ; } >%s 2>%s </dev/null",
             work, cmd, out, err);
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

void test_need_mpi(void)
{
    if (!TERN_TEST_MPIRUN[0])
        cr_skip_test("this tern was built without MPI (install libopenmpi-dev, openmpi-bin "
                     "and rebuild)");
}

const char *test_mpirun(void)
{
    static char buf[2048];
    if (!TERN_TEST_MPIRUN[0])
        return "";
    const char *lsan = getenv("LSAN_OPTIONS");
    char extra[1024] = "";
    if (lsan && *lsan && !strchr(lsan, '\''))
        snprintf(extra, sizeof extra, "LSAN_OPTIONS='%s:fast_unwind_on_malloc=0' ", lsan);
    snprintf(buf, sizeof buf, "%sOMPI_MCA_mca_base_component_disable_dlclose=1 %s", extra,
             TERN_TEST_MPIRUN);
    return buf;
}

int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

int path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

json_t *score_ids(const char *tern, const char *model, const char *text)
{
    result r;
    run(&r, "%s score %s --text \"$(printf 'x%s<|im_end|>')\" | grep '^[0-9]' | cut -f2 | "
            "sed '$d'", tern, model, text);
    cr_assert_eq(r.code, 0, "tern score: %s", r.err);
    json_t *ids = json_array();
    for (char *p = r.out; *p;) {
        json_array_append_new(ids, json_integer(strtol(p, &p, 10)));
        while (*p == '\n')
            p++;
    }
    return ids;
}
