/* test_task_file.c: loading tasks JSON Lines files (core/src/data/task_file.c)
 * and the synthetic arithmetic tasks (cli/data/arith.c). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/arith.h"
#include "data/task_file.h"
#include "base/errmsg.h"
#include "base/log.h"

#define WORK TERN_TEST_WORK_DIR

/* A file of the work directory holding exactly `len` bytes of `text`. */
static void put(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void puts_file(const char *path, const char *text) { put(path, text, strlen(text)); }

/* The whole of a file, malloc'ed ("" if unreadable); *len its size. */
static char *slurp_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    if (f) {
        size_t got;
        while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
            n += got;
            if (cap - n - 1 == 0) {
                cap *= 2;
                buf = realloc(buf, cap);
                cr_assert_not_null(buf);
            }
        }
        fclose(f);
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static const char *id_of(const tern_task *t)
{
    static char buf[256];
    return tern_task_id_text(t, buf, sizeof buf);
}

#define GOOD1 "{\"id\": \"a-1\", \"domain\": \"math\", \"prompt\": \"2+2=\", \"answer\": \"4\"}"
#define GOOD2 "{\"id\": 2, \"domain\": \"math\", \"prompt\": \"3+3=\", \"answer\": 6}"

/* ---- valid files ------------------------------------------------------------ */

Test(task_file, loads_string_and_integer_ids_and_keeps_other_fields)
{
    const char *path = WORK "/tf_valid.jsonl";
    puts_file(path,
              GOOD1 "\n"
              "\n"
              "   \t \n"
              "{\"id\": 17, \"domain\": \"code\", \"prompt\": \"def f():\", \"answer\": \"\", "
              "\"tests\": [\"assert f() == 1\"], \"meta\": {\"source\": \"x\", \"level\": 3}}\n"
              "{\"id\": -5, \"domain\": \"mc\", \"prompt\": \"Pick\", \"answer\": 2.5, "
              "\"choices\": [\"a\", \"b\"], \"image\": null}\n");
    tern_task_set s;
    int rc = tern_task_set_load(&s, path, 0);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
    cr_assert_eq(s.n, 3);
    cr_expect_eq(s.skipped, 0);
    cr_expect_str_eq(s.path, path);
    cr_expect_str_eq(id_of(s.tasks[0]), "a-1");
    cr_expect_str_eq(id_of(s.tasks[1]), "17");
    cr_expect_str_eq(id_of(s.tasks[2]), "-5");
    cr_expect_str_eq(tern_task_string(s.tasks[0], "prompt"), "2+2=");
    cr_expect_str_eq(tern_task_string(s.tasks[1], "domain"), "code");
    long long v = 0;
    cr_expect_eq(tern_task_integer(s.tasks[1], "id", &v), TERN_OK);
    cr_expect_eq(v, 17, "an integer id is kept an integer");
    cr_expect_null(tern_task_string(s.tasks[1], "id"));
    cr_expect_str_eq(tern_task_type(s.tasks[0], "id"), "string");
    double d = 0;
    cr_expect_eq(tern_task_number(s.tasks[2], "answer", &d), TERN_OK);
    cr_expect_eq(d, 2.5);
    char *j = tern_task_json(s.tasks[1], "tests");
    cr_expect_str_eq(j, "[\"assert f() == 1\"]");
    free(j);
    j = tern_task_json(s.tasks[1], "meta");
    cr_expect_str_eq(j, "{\"source\":\"x\",\"level\":3}");
    free(j);
    cr_expect_eq(tern_task_number(s.tasks[1], "meta.level", &d), TERN_OK);
    cr_expect_str_eq(tern_task_type(s.tasks[2], "image"), "null");
    j = tern_task_json(s.tasks[2], "choices");
    cr_expect_str_eq(j, "[\"a\",\"b\"]");
    free(j);
    tern_task_set_free(&s);
    cr_expect_eq(s.n, 0);
    cr_expect_null(s.tasks);
    tern_task_set_free(&s); /* twice is harmless */
}

Test(task_file, crlf_bom_and_no_final_newline)
{
    const char *path = WORK "/tf_crlf.jsonl";
    puts_file(path, "\xEF\xBB\xBF" GOOD1 "\r\n\r\n" GOOD2 "\r\n"
                    "{\"id\": 3, \"domain\": \"math\", \"prompt\": \"a\\r\", \"answer\": \"x\"}");
    tern_task_set s;
    cr_assert_eq(tern_task_set_load(&s, path, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(s.n, 3);
    cr_expect_str_eq(id_of(s.tasks[0]), "a-1", "the BOM is not part of the first line");
    cr_expect_str_eq(tern_task_string(s.tasks[1], "prompt"), "3+3=");
    cr_expect_str_eq(tern_task_string(s.tasks[2], "prompt"), "a\r", "escaped CR is content");
    cr_expect_str_eq(id_of(s.tasks[2]), "3");
    tern_task_set_free(&s);

    /* a single task, no newline at all */
    puts_file(path, GOOD2);
    cr_assert_eq(tern_task_set_load(&s, path, 0), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(s.n, 1);
    tern_task_set_free(&s);
}

/* The set's digest is of the file's bytes as they are (BOM, CRs, blank lines
 * and the last line without a newline included): what sha256sum prints. */
Test(task_file, the_digest_is_of_every_byte_of_the_file)
{
    const char *path = WORK "/tf_digest.jsonl";
    puts_file(path, "\xEF\xBB\xBF" GOOD1 "\r\n\r\n" GOOD2);
    tern_task_set s;
    cr_assert_eq(tern_task_set_load(&s, path, 0), TERN_OK, "%s", tern_error_message());
    FILE *p = popen("sha256sum " WORK "/tf_digest.jsonl", "r");
    cr_assert_not_null(p);
    char want[65] = "";
    cr_assert_eq(fscanf(p, "%64s", want), 1);
    pclose(p);
    cr_expect_str_eq(s.sha256, want);
    tern_task_set_free(&s);
}

Test(task_file, long_lines)
{
    const char *path = WORK "/tf_long.jsonl";
    size_t big = 300000;
    char *text = malloc(big + 200);
    cr_assert_not_null(text);
    int n = sprintf(text, "{\"id\": 1, \"domain\": \"math\", \"answer\": \"1\", \"prompt\": \"");
    memset(text + n, 'x', big);
    strcpy(text + n + big, "\"}\n" GOOD1 "\n");
    puts_file(path, text);
    free(text);
    tern_task_set s;
    cr_assert_eq(tern_task_set_load(&s, path, 0), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(s.n, 2);
    cr_expect_eq(strlen(tern_task_string(s.tasks[0], "prompt")), big);
    tern_task_set_free(&s);
}

/* A line over TERN_TASK_LINE_MAX is refused as it is read, naming the line,
 * with no more of it read than the limit (not a 1 GB line read whole and
 * parsed: 50 s and 9.6 GB), even with skip_bad (nothing after it is read).
 * The process's peak memory stays near the limit, not a multiple of it. */
Test(task_file, a_line_over_the_limit_is_refused_as_read)
{
    const char *path = WORK "/tf_huge_line.jsonl";
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(GOOD1 "\n{\"id\": 2, \"domain\": \"math\", \"answer\": \"1\", \"prompt\": \"", f);
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof chunk);
    for (size_t w = 0; w < TERN_TASK_LINE_MAX + 2 * sizeof chunk; w += sizeof chunk)
        fwrite(chunk, 1, sizeof chunk, f);
    fputs("\"}\n" GOOD2 "\n", f);
    fclose(f);
    for (int skip = 0; skip < 2; skip++) {
        tern_task_set s;
        cr_expect_eq(tern_task_set_load(&s, path, skip), TERN_EINVAL);
        char want[256];
        snprintf(want, sizeof want, "%s:2: the line is longer than %llu bytes (64 MiB)", path,
                 TERN_TASK_LINE_MAX);
        cr_expect(strstr(tern_error_message(), want), "%s", tern_error_message());
        cr_expect_eq(s.n, 0);
        tern_task_set_free(&s);
    }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (a sanitizer keeps freed blocks in quarantine: no figure there) */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cr_expect_lt(ru.ru_maxrss, 3 * (long)(TERN_TASK_LINE_MAX >> 10),
                 "peak memory %ld KiB reading a line over the %llu-byte limit", ru.ru_maxrss,
                 TERN_TASK_LINE_MAX);
#endif
    remove(path);
}

Test(task_file, id_text)
{
    const char *path = WORK "/tf_idtext.jsonl";
    puts_file(path, "{\"id\": \"abcdefgh\", \"domain\": \"d\", \"prompt\": \"\", \"answer\": 0}\n"
                    "{\"id\": 9007199254740993, \"domain\": \"d\", \"prompt\": \"\", "
                    "\"answer\": 0}\n");
    tern_task_set s;
    cr_assert_eq(tern_task_set_load(&s, path, 0), TERN_OK, "%s", tern_error_message());
    char buf[5];
    cr_expect_str_eq(tern_task_id_text(s.tasks[0], buf, sizeof buf), "abcd", "cut to fit");
    char big[32];
    cr_expect_str_eq(tern_task_id_text(s.tasks[1], big, sizeof big), "9007199254740993",
                     "integers exactly");
    cr_expect_str_eq(tern_task_id_text(NULL, big, sizeof big), "");
    tern_task_set_free(&s);
}

/* ---- malformed lines ------------------------------------------------------ */

typedef struct bad_case {
    const char *line;
    const char *message; /* what follows "PATH:3: " */
} bad_case;

static const bad_case bad_cases[] = {
    {"{\"id\": 1, \"domain\": \"math\", \"prompt\": \"x\"", "malformed JSON"},
    {"{\"id\": 1, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": 1} {}", "malformed JSON"},
    {"{\"id\": 1, \"id\": 2, \"domain\": \"m\", \"prompt\": \"x\", \"answer\": 1}",
     "malformed JSON: duplicate object key"},
    {"[1, 2]", "a task must be a JSON object"},
    {"\"text\"", "malformed JSON: '[' or '{' expected"},
    {"7", "malformed JSON: '[' or '{' expected"},
    {"{\"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "missing \"id\"; give every task its own \"id\", a string or an integer"},
    {"{\"id\": true, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"id\" is a boolean; give a string or an integer"},
    {"{\"id\": 1.5, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"id\" is a real number; give a string or an integer"},
    {"{\"id\": null, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"id\" is null; give a string or an integer"},
    {"{\"id\": \"\", \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"id\" is empty; give a non-empty string or an integer"},
    {"{\"id\": 9, \"prompt\": \"x\", \"answer\": \"1\"}",
     "missing \"domain\"; give the task's domain, e.g. \"domain\": \"math\""},
    {"{\"id\": 9, \"domain\": 3, \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"domain\" is an integer; give a string such as \"math\""},
    {"{\"id\": 9, \"domain\": \"\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "\"domain\" is empty; give the task's domain"},
    {"{\"id\": 9, \"domain\": \"math\", \"answer\": \"1\"}",
     "missing \"prompt\"; give the text the model is given"},
    {"{\"id\": 9, \"domain\": \"math\", \"prompt\": {}, \"answer\": \"1\"}",
     "\"prompt\" is an object; give a string"},
    {"{\"id\": 9, \"domain\": \"math\", \"prompt\": \"x\", \"system\": 1, \"answer\": \"1\"}",
     "\"system\" is an integer; give a string (the system turn before the prompt)"},
    {"{\"id\": 9, \"domain\": \"math\", \"prompt\": \"x\"}",
     "missing \"answer\"; give the gold answer, a string or a number"},
    {"{\"id\": 9, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": [4]}",
     "\"answer\" is an array; give a string or a number"},
    {"{\"id\": 9, \"domain\": \"math\", \"prompt\": \"x\", \"answer\": null}",
     "\"answer\" is null; give a string or a number"},
    {"{\"id\": \"a-1\", \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "id \"a-1\" was already used on line 1; give every task its own id"},
    {"{\"id\": \"2\", \"domain\": \"math\", \"prompt\": \"x\", \"answer\": \"1\"}",
     "id \"2\" was already used on line 2; give every task its own id"},
};

Test(task_file, every_malformed_line_names_path_and_line)
{
    const char *path = WORK "/tf_bad.jsonl";
    char text[1024], want[1024];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        /* line 1 and 2 good, line 3 the bad one, line 4 good */
        snprintf(text, sizeof text, GOOD1 "\n" GOOD2 "\n%s\n"
                 "{\"id\": 4, \"domain\": \"m\", \"prompt\": \"p\", \"answer\": 1}\n",
                 bad_cases[i].line);
        puts_file(path, text);
        tern_task_set s;
        memset(&s, 0x5a, sizeof s); /* garbage in: the loader does not read it */
        tern_error_clear();
        int rc = tern_task_set_load(&s, path, 0);
        cr_expect_eq(rc, TERN_EINVAL, "case %zu: %s", i, bad_cases[i].line);
        snprintf(want, sizeof want, "%s:3: %s", path, bad_cases[i].message);
        cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0,
                  "case %zu:\n got  %s\n want %s...", i, tern_error_message(), want);
        cr_expect_eq(s.n, 0, "left empty");
        cr_expect_null(s.tasks);
        cr_expect_null(s.path);
        cr_expect_eq(s.skipped, 0);
        tern_task_set_free(&s);
    }
}

Test(task_file, line_numbers_count_blank_lines_and_the_bom_line)
{
    const char *path = WORK "/tf_lines.jsonl";
    puts_file(path, "\xEF\xBB\xBF\r\n\n" GOOD1 "\r\n  \n{bad json}\r\n");
    tern_task_set s;
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    char want[512];
    snprintf(want, sizeof want, "%s:5: malformed JSON", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
    cr_expect(strstr(tern_error_message(), "(column "), "%s", tern_error_message());

    puts_file(path, "{\"id\":1,\"domain\":\"m\",\"prompt\":\"p\",\"answer\":1}\n"
                    "{\"id\":1,\"domain\":\"m\",\"prompt\":\"p\",\"answer\":1}");
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    snprintf(want, sizeof want, "%s:2: id \"1\" was already used on line 1", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
}

Test(task_file, a_nul_byte_is_malformed)
{
    const char *path = WORK "/tf_nul.jsonl";
    const char text[] = GOOD1 "\n{\"id\": 5, \"domain\": \"m\", \"prompt\": \"a\0b\"}\n";
    put(path, text, sizeof text - 1);
    tern_task_set s;
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    char want[512];
    snprintf(want, sizeof want, "%s:2: malformed JSON", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
}

/* ---- skip_bad --------------------------------------------------------------- */

Test(task_file, skip_bad_counts_and_logs_the_first_five)
{
    const char *path = WORK "/tf_skip.jsonl";
    char text[4096] = "";
    strcat(text, GOOD1 "\n");
    for (int i = 0; i < 7; i++)
        strcat(text, i % 2 ? "not json\n" : "{\"id\": 99, \"domain\": \"m\"}\n");
    strcat(text, GOOD2 "\n");
    strcat(text, GOOD1 "\n"); /* a duplicate id: skipped too */
    strcat(text, "{\"id\": 3, \"domain\": \"m\", \"prompt\": \"p\", \"answer\": 1}");
    puts_file(path, text);

    FILE *log = tmpfile();
    cr_assert_not_null(log);
    tern_log_set_stream(log);
    tern_task_set s;
    int rc = tern_task_set_load(&s, path, 1);
    tern_log_set_stream(NULL);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
    cr_expect_eq(s.n, 3);
    cr_expect_eq(s.skipped, 8);
    cr_expect_str_eq(id_of(s.tasks[0]), "a-1");
    cr_expect_str_eq(id_of(s.tasks[1]), "2");
    cr_expect_str_eq(id_of(s.tasks[2]), "3");
    tern_task_set_free(&s);

    char out[8192];
    rewind(log);
    size_t got = fread(out, 1, sizeof out - 1, log);
    out[got] = '\0';
    fclose(log);
    int warnings = 0;
    for (const char *p = strstr(out, "(line skipped: data.skip_bad is on)"); p;
         p = strstr(p + 1, "(line skipped: data.skip_bad is on)"))
        warnings++;
    cr_expect_eq(warnings, 5, "%s", out);
    char want[512];
    snprintf(want, sizeof want, "tern: warn: [data] %s:2: missing \"prompt\"", path);
    cr_expect(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "%s:3: malformed JSON", path);
    cr_expect(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "%s:7:", path);
    cr_expect_null(strstr(out, want), "the 6th is not logged: %s", out);
    snprintf(want, sizeof want, "%s: 8 malformed lines skipped (the first 5 are shown above), "
             "3 tasks loaded", path);
    cr_expect(strstr(out, want), "%s", out);
}

Test(task_file, skip_bad_with_every_line_bad_is_no_tasks)
{
    const char *path = WORK "/tf_allbad.jsonl";
    puts_file(path, "nope\n\n[]\n");
    FILE *log = tmpfile();
    tern_log_set_stream(log);
    tern_task_set s;
    int rc = tern_task_set_load(&s, path, 1);
    tern_log_set_stream(NULL);
    fclose(log);
    cr_expect_eq(rc, TERN_EINVAL);
    char want[512];
    snprintf(want, sizeof want, "%s: no tasks: all 2 lines are malformed", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
    cr_expect_eq(s.n, 0);
    cr_expect_eq(s.skipped, 0, "left empty");
    cr_expect_null(s.path);
}

Test(task_file, skip_bad_off_stops_at_the_first_bad_line)
{
    const char *path = WORK "/tf_first.jsonl";
    puts_file(path, GOOD1 "\nbad one\nbad two\n");
    tern_task_set s;
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    char want[512];
    snprintf(want, sizeof want, "%s:2: ", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
}

/* ---- files ---------------------------------------------------------------- */

Test(task_file, missing_file_directory_and_empty_files)
{
    tern_task_set s;
    const char *path = WORK "/tf_no_such_file.jsonl";
    unlink(path);
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    cr_expect_str_eq(tern_error_message(), want);
    cr_expect_null(s.path);
    tern_task_set_free(&s);

    cr_expect_eq(tern_task_set_load(&s, WORK, 0), TERN_EIO);
    snprintf(want, sizeof want, "%s: cannot open: Is a directory", WORK);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());

    path = WORK "/tf_empty.jsonl";
    puts_file(path, "");
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    snprintf(want, sizeof want, "%s: no tasks", path);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
    cr_expect_eq(s.n, 0);

    puts_file(path, "\xEF\xBB\xBF\n  \r\n\t\n");
    cr_expect_eq(tern_task_set_load(&s, path, 1), TERN_EINVAL);
    cr_expect(strncmp(tern_error_message(), want, strlen(want)) == 0, "%s",
              tern_error_message());
    cr_expect(strstr(tern_error_message(), "empty or holds only blank lines"), "%s",
              tern_error_message());
}

Test(task_file, fifo_and_devices_are_refused_without_blocking)
{
    alarm(20); /* a reader that blocks on the FIFO ends the test here */
    char dir[512], fifo[600], want[1024];
    snprintf(dir, sizeof dir, "%s/tf_fifo_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/f.jsonl", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    tern_task_set s;
    cr_expect_eq(tern_task_set_load(&s, fifo, 0), TERN_EIO);
    snprintf(want, sizeof want, "%s: cannot open: not a regular file but a FIFO (named pipe); "
             "give a tasks file (JSON Lines)", fifo);
    cr_expect_str_eq(tern_error_message(), want);
    /* /dev/zero was read until memory ran out, then called empty */
    cr_expect_eq(tern_task_set_load(&s, "/dev/zero", 1), TERN_EIO);
    cr_expect_str_eq(tern_error_message(), "/dev/zero: cannot open: not a regular file but a "
                                           "character device; give a tasks file (JSON Lines)");
    cr_expect_null(s.path);
    unlink(fifo);
    rmdir(dir);
}

Test(task_file, a_file_past_the_limit_is_refused)
{
    const char *path = WORK "/tf_huge.jsonl";
    puts_file(path, GOOD1 "\n");
    /* 2 GiB + 1 (docs/data.md); sparse: nothing is written, and nothing is read */
    cr_assert_eq(truncate(path, (off_t)2147483649LL), 0);
    tern_task_set s;
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EIO);
    char want[512];
    snprintf(want, sizeof want, "%s: cannot open: too big: 2147483649 bytes, over the limit of "
             "2147483648 (2 GiB); give a smaller part of the task set", path);
    cr_expect_str_eq(tern_error_message(), want);
    unlink(path);
}

Test(task_file, nul_characters_and_trailing_text_name_the_line)
{
    const char *path = WORK "/tf_nul2.jsonl";
    char want[512];
    tern_task_set s;
    /* a NUL byte after the object: jansson said "end of file expected near end of file" */
    const char after[] = GOOD1 "\n" GOOD2 "\0\n";
    put(path, after, sizeof after - 1);
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    snprintf(want, sizeof want, "%s:2: malformed JSON: a NUL byte at column %zu; a task is one "
             "line of text: remove the byte", path, strlen(GOOD2) + 1);
    cr_expect_str_eq(tern_error_message(), want);

    /* \u0000 in a string: jansson named its own flag, JSON_ALLOW_NUL */
    puts_file(path, GOOD1 "\n{\"id\": 5, \"domain\": \"m\", \"prompt\": \"a\\u0000b\", "
                    "\"answer\": 1}\n");
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    snprintf(want, sizeof want, "%s:2: malformed JSON: a string holds \\u0000 (a NUL character) "
             "near column 45; tasks may not hold NUL characters: remove it", path);
    cr_expect_str_eq(tern_error_message(), want);

    puts_file(path, GOOD1 " x\n");
    cr_expect_eq(tern_task_set_load(&s, path, 0), TERN_EINVAL);
    snprintf(want, sizeof want, "%s:1: malformed JSON: more text after the object, at column "
             "%zu; give one JSON object per line and nothing after it", path, strlen(GOOD1) + 2);
    cr_expect_str_eq(tern_error_message(), want);
    unlink(path);
}

/* ---- arithmetic tasks -------------------------------------------------- */

typedef struct arith_task {
    unsigned long long a, b, answer;
    char op;
} arith_task;

/* Load an arith file and check every task: id, domain, prompt "AopB=",
 * answer == a op b; returns the tasks (malloc'ed) and their count. */
static arith_task *load_arith(const char *path, const char *split, size_t *n)
{
    tern_task_set s;
    int rc = tern_task_set_load(&s, path, 0);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
    arith_task *out = calloc(s.n, sizeof *out);
    cr_assert_not_null(out);
    int width = s.n >= 100000 ? 6 : 5;
    for (size_t i = 0; i < s.n; i++) {
        char want[64];
        snprintf(want, sizeof want, "arith-%s-%0*zu", split, width, i + 1);
        cr_assert_str_eq(id_of(s.tasks[i]), want);
        cr_assert_str_eq(tern_task_string(s.tasks[i], "domain"), "math");
        const char *prompt = tern_task_string(s.tasks[i], "prompt");
        const char *answer = tern_task_string(s.tasks[i], "answer");
        cr_assert_not_null(prompt);
        cr_assert_not_null(answer, "the answer is a string");
        arith_task *t = &out[i];
        int end = 0;
        cr_assert_eq(sscanf(prompt, "%llu%c%llu=%n", &t->a, &t->op, &t->b, &end), 3, "%s",
                     prompt);
        cr_assert_eq((size_t)end, strlen(prompt), "%s", prompt);
        cr_assert(answer[0] >= '0' && answer[0] <= '9', "never negative: %s", answer);
        t->answer = strtoull(answer, NULL, 10);
        unsigned long long want_answer = 0;
        switch (t->op) {
        case '+':
            want_answer = t->a + t->b;
            break;
        case '-':
            cr_assert(t->a >= t->b, "%s", prompt);
            want_answer = t->a - t->b;
            break;
        case '*':
            want_answer = t->a * t->b;
            break;
        default:
            cr_assert_fail("op %c in %s", t->op, prompt);
        }
        cr_assert_eq(t->answer, want_answer, "%s%s", prompt, answer);
    }
    *n = s.n;
    tern_task_set_free(&s);
    return out;
}

static int same_problem(const arith_task *x, const arith_task *y)
{
    return x->a == y->a && x->b == y->b && x->op == y->op;
}

/* No problem twice within or across the two lists. */
static void expect_distinct(const arith_task *tr, size_t ntr, const arith_task *ev, size_t nev)
{
    size_t n = ntr + nev;
    arith_task *all = malloc(n * sizeof *all);
    memcpy(all, tr, ntr * sizeof *all);
    memcpy(all + ntr, ev, nev * sizeof *all);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            cr_assert(!same_problem(&all[i], &all[j]), "%llu%c%llu twice (%zu, %zu)", all[i].a,
                      all[i].op, all[i].b, i, j);
    free(all);
}

static void write_ok(const tern_arith_spec *spec, const char *dir)
{
    char tr[512], ev[512];
    mkdir(dir, 0777);
    snprintf(tr, sizeof tr, "%s/train.jsonl", dir);
    snprintf(ev, sizeof ev, "%s/eval.jsonl", dir);
    unlink(tr);
    unlink(ev);
    int rc = tern_arith_write(spec, tr, ev);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
}

/* Remove what write_ok() made in `dir`. */
static void clean(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/eval.jsonl", dir);
    unlink(path);
    rmdir(dir);
}

static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp_all(a, &na), *y = slurp_all(b, &nb);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

Test(arith, same_seed_same_bytes_other_seed_other_tasks)
{
    tern_arith_spec spec = TERN_ARITH_SPEC_DEFAULT;
    write_ok(&spec, WORK "/ar_a");
    write_ok(&spec, WORK "/ar_b");
    cr_expect(same_file(WORK "/ar_a/train.jsonl", WORK "/ar_b/train.jsonl"));
    cr_expect(same_file(WORK "/ar_a/eval.jsonl", WORK "/ar_b/eval.jsonl"));
    spec.seed = 2;
    write_ok(&spec, WORK "/ar_c");
    cr_expect(!same_file(WORK "/ar_a/train.jsonl", WORK "/ar_c/train.jsonl"));
    cr_expect(!same_file(WORK "/ar_a/eval.jsonl", WORK "/ar_c/eval.jsonl"));

    /* the defaults: 2000 + 200 of a+b with operands 0..49 */
    size_t ntr, nev;
    arith_task *tr = load_arith(WORK "/ar_a/train.jsonl", "train", &ntr);
    arith_task *ev = load_arith(WORK "/ar_a/eval.jsonl", "eval", &nev);
    cr_expect_eq(ntr, 2000);
    cr_expect_eq(nev, 200);
    for (size_t i = 0; i < ntr; i++)
        cr_assert(tr[i].op == '+' && tr[i].a <= 49 && tr[i].b <= 49);
    expect_distinct(tr, ntr, ev, nev);
    free(tr);
    free(ev);

    /* the first line, byte for byte */
    char *text = slurp_all(WORK "/ar_a/train.jsonl", NULL);
    cr_expect(strncmp(text, "{\"id\":\"arith-train-00001\",\"domain\":\"math\",\"prompt\":\"", 52) ==
              0, "%.100s", text);
    free(text);
    clean(WORK "/ar_a");
    clean(WORK "/ar_b");
    clean(WORK "/ar_c");
}

Test(arith, eval_does_not_depend_on_the_train_count)
{
    tern_arith_spec spec = TERN_ARITH_SPEC_DEFAULT;
    spec.n_train = 100;
    write_ok(&spec, WORK "/ar_e1");
    spec.n_train = 1500;
    write_ok(&spec, WORK "/ar_e2");
    cr_expect(same_file(WORK "/ar_e1/eval.jsonl", WORK "/ar_e2/eval.jsonl"));
    clean(WORK "/ar_e1");
    clean(WORK "/ar_e2");
}

Test(arith, every_problem_once_when_all_are_asked)
{
    /* operands 0..9 with + - *: 100 + 55 + 100 = 255 problems */
    tern_arith_spec spec = {.seed = 7, .n_train = 230, .n_eval = 25, .max_operand = 9,
                            .ops = "+-*"};
    cr_expect_eq(tern_arith_problems(9, "+-*"), 255);
    write_ok(&spec, WORK "/ar_all");
    size_t ntr, nev;
    arith_task *tr = load_arith(WORK "/ar_all/train.jsonl", "train", &ntr);
    arith_task *ev = load_arith(WORK "/ar_all/eval.jsonl", "eval", &nev);
    cr_expect_eq(ntr, 230);
    cr_expect_eq(nev, 25);
    expect_distinct(tr, ntr, ev, nev);
    int per_op[3] = {0, 0, 0};
    for (size_t i = 0; i < ntr + nev; i++) {
        const arith_task *t = i < ntr ? &tr[i] : &ev[i - ntr];
        per_op[t->op == '+' ? 0 : t->op == '-' ? 1 : 2]++;
    }
    cr_expect_eq(per_op[0], 100);
    cr_expect_eq(per_op[1], 55, "a - b with a >= b only");
    cr_expect_eq(per_op[2], 100);
    free(tr);
    free(ev);
    clean(WORK "/ar_all");
}

Test(arith, subtraction_is_never_negative_and_products_are_right)
{
    tern_arith_spec spec = {.seed = 3, .n_train = 400, .n_eval = 50, .max_operand = 30,
                            .ops = "-"};
    write_ok(&spec, WORK "/ar_sub");
    size_t ntr, nev;
    arith_task *tr = load_arith(WORK "/ar_sub/train.jsonl", "train", &ntr); /* checks a >= b */
    arith_task *ev = load_arith(WORK "/ar_sub/eval.jsonl", "eval", &nev);
    for (size_t i = 0; i < ntr; i++)
        cr_assert_eq(tr[i].op, '-');
    expect_distinct(tr, ntr, ev, nev);
    free(tr);
    free(ev);

    spec = (tern_arith_spec){.seed = 4, .n_train = 300, .n_eval = 30, .max_operand = 99,
                             .ops = "*"};
    write_ok(&spec, WORK "/ar_mul");
    tr = load_arith(WORK "/ar_mul/train.jsonl", "train", &ntr); /* checks a * b */
    ev = load_arith(WORK "/ar_mul/eval.jsonl", "eval", &nev);
    int nonzero = 0;
    for (size_t i = 0; i < ntr; i++)
        nonzero += tr[i].answer > 0;
    cr_expect_gt(nonzero, 200);
    free(tr);
    free(ev);
    clean(WORK "/ar_sub");
    clean(WORK "/ar_mul");
}

Test(arith, huge_operand_ranges_are_drawn_without_the_full_list)
{
    /* 3 * 2^62-ish problems: drawn by rejection, answers up to ~2^62 */
    tern_arith_spec spec = {.seed = 11, .n_train = 500, .n_eval = 50, .max_operand = 2147483647,
                            .ops = "*-+"};
    write_ok(&spec, WORK "/ar_huge");
    size_t ntr, nev;
    arith_task *tr = load_arith(WORK "/ar_huge/train.jsonl", "train", &ntr);
    arith_task *ev = load_arith(WORK "/ar_huge/eval.jsonl", "eval", &nev);
    unsigned long long biggest = 0;
    for (size_t i = 0; i < ntr; i++)
        if (tr[i].answer > biggest)
            biggest = tr[i].answer;
    cr_expect_gt(biggest, 1ull << 60);
    expect_distinct(tr, ntr, ev, nev);
    free(tr);
    free(ev);

    /* 3000^2 = 9M problems of +: over the shuffle limit */
    spec = (tern_arith_spec){.seed = 12, .n_train = 1000, .n_eval = 100, .max_operand = 2999,
                             .ops = "+"};
    write_ok(&spec, WORK "/ar_big");
    tr = load_arith(WORK "/ar_big/train.jsonl", "train", &ntr);
    ev = load_arith(WORK "/ar_big/eval.jsonl", "eval", &nev);
    expect_distinct(tr, ntr, ev, nev);
    free(tr);
    free(ev);
    clean(WORK "/ar_huge");
    clean(WORK "/ar_big");
}

Test(arith, ids_widen_past_99999)
{
    tern_arith_spec spec = {.seed = 1, .n_train = 100000, .n_eval = 1, .max_operand = 999,
                            .ops = "+"};
    write_ok(&spec, WORK "/ar_wide");
    size_t ntr, nev;
    arith_task *tr = load_arith(WORK "/ar_wide/train.jsonl", "train", &ntr); /* width 6 */
    arith_task *ev = load_arith(WORK "/ar_wide/eval.jsonl", "eval", &nev);   /* width 5 */
    cr_expect_eq(ntr, 100000);
    free(tr);
    free(ev);
    clean(WORK "/ar_wide");
}

Test(arith, too_many_problems_and_bad_specs_are_refused)
{
    char tr[512], ev[512];
    snprintf(tr, sizeof tr, "%s/ar_no_train.jsonl", WORK);
    snprintf(ev, sizeof ev, "%s/ar_no_eval.jsonl", WORK);
    unlink(tr);
    unlink(ev);
    struct stat st;

    /* 10 x 10 = 100 problems of + */
    tern_arith_spec spec = {.seed = 1, .n_train = 95, .n_eval = 6, .max_operand = 9, .ops = "+"};
    cr_expect_eq(tern_arith_write(&spec, tr, ev), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "give 100 at most"), "%s", tern_error_message());
    cr_expect(strstr(tern_error_message(), "raise --max or lower --train/--eval"), "%s",
              tern_error_message());
    cr_expect_neq(stat(tr, &st), 0, "nothing written");
    cr_expect_neq(stat(ev, &st), 0, "nothing written");
    spec.n_eval = 5; /* exactly all of them */
    cr_expect_eq(tern_arith_check(&spec), TERN_OK, "%s", tern_error_message());
    spec.n_train = SIZE_MAX; /* the sum overflows */
    cr_expect_eq(tern_arith_check(&spec), TERN_EINVAL);

    const struct {
        const char *ops;
        int max;
        size_t n_train, n_eval;
        const char *message;
    } bad[] = {
        {"", 49, 10, 1, "--ops is empty"},
        {"+/", 49, 10, 1, "--ops has '/', which is not an operation; give some of + - *"},
        {"+-+", 49, 10, 1, "--ops has '+' twice"},
        {"x\x01", 49, 10, 1, "--ops has 'x'"},
        {"+\x01", 49, 10, 1, "--ops has byte 0x01"},
        {"+", -1, 10, 1, "--max is -1; give the largest operand"},
        {"+", 49, 0, 1, "--train is 0"},
        {"+", 49, 10, 0, "--eval is 0"},
        {"-", 0, 1, 1, "ops - with operands 0..0 give 1 at most"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spec = (tern_arith_spec){.seed = 1, .n_train = bad[i].n_train, .n_eval = bad[i].n_eval,
                                 .max_operand = bad[i].max, .ops = bad[i].ops};
        cr_expect_eq(tern_arith_write(&spec, tr, ev), TERN_EINVAL, "case %zu", i);
        cr_expect(strstr(tern_error_message(), bad[i].message), "case %zu: %s", i,
                  tern_error_message());
        cr_expect_neq(stat(tr, &st), 0, "nothing written");
    }
    cr_expect_eq(tern_arith_problems(49, NULL), 2500, "NULL ops is +");
    cr_expect_eq(tern_arith_problems(49, "+-"), 2500 + 1275);
    cr_expect_eq(tern_arith_problems(-1, "+"), 0);
    cr_expect_eq(tern_arith_problems(5, "/"), 0);

    spec = (tern_arith_spec)TERN_ARITH_SPEC_DEFAULT;
    cr_expect_eq(tern_arith_write(&spec, tr, tr), TERN_EINVAL, "one path for both");
}

Test(arith, a_write_that_fails_leaves_nothing)
{
    tern_arith_spec spec = TERN_ARITH_SPEC_DEFAULT;
    /* eval is written first (to a temporary file), then train fails */
    const char *tr = WORK "/ar_no_such_dir/train.jsonl";
    const char *ev = WORK "/ar_fail_dir/eval.jsonl";
    mkdir(WORK "/ar_fail_dir", 0777);
    unlink(ev);
    cr_expect_eq(tern_arith_write(&spec, tr, ev), TERN_EIO);
    cr_expect(strstr(tern_error_message(), "ar_no_such_dir/train.jsonl: cannot write: No such "
                                           "file or directory"), "%s", tern_error_message());
    struct stat st;
    cr_expect_neq(stat(ev, &st), 0, "no eval file without the train file");
    char out[256];
    FILE *p = popen("ls -A " WORK "/ar_fail_dir", "r");
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = '\0';
    pclose(p);
    cr_expect_str_eq(out, "", "no temporary file left");
    rmdir(WORK "/ar_fail_dir");
}
