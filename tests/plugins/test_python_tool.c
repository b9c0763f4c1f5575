/* test_python_tool.c: the `python` tool plugin through its ops table
 * (harness.h), with real sandboxes: describe()'s schema; what a call
 * answers (stdout, then stderr, a final expression's value, "(no output)");
 * exceptions, syntax errors and exit statuses as failures with the
 * traceback; the time, memory and output limits; a long output cut to the
 * core's buffer at a character boundary; bad arguments; no state kept
 * between calls; nothing written outside the sandbox; calls from two threads
 * at once; bad settings.
 *
 * Where this machine cannot make sandboxes (no user namespaces) the tests
 * say so and skip, except under CI=true, where that is a failure: the code
 * reward's tests' rule. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "harness.h"
#include "tern/tool.h"

#define WORK TERN_TEST_WORK_DIR
/* short limits keep the suite quick, with room for a loaded machine */
#define BASE "memory_mb = 256; tmpfs_mb = 16; pool = 2;"
#define LIMITS BASE "time_ms = 3000;"
#define OUT_CAP 4097

static void open_python(harness *h, const char *settings)
{
    int rc = harness_open(h, "python", TERN_KIND_TOOL, settings);
    if (rc != TERN_OK && strstr(h->error, "cannot run sandboxes here")) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0)
            cr_assert_fail("CI must be able to make sandboxes: %s", h->error);
        harness_close(h);
        cr_skip_test("this machine cannot make sandboxes: %s", h->error);
    }
    cr_assert_eq(rc, TERN_OK, "%s: %s", settings, h->error);
}

/* One call with the arguments' JSON text into out (a buffer of cap bytes);
 * the call itself must succeed (the plugin is not broken). */
static void call_args(const harness *h, const char *args, char *buf, size_t cap,
                      tern_tool_result *out)
{
    const tern_tool_ops *ops = harness_ops(h);
    tern_tool_call c = {.size = sizeof c, .name = "python", .arguments = args, .seed = 7};
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    out->output = buf;
    out->output_cap = cap;
    memset(buf, '#', cap); /* so a missing NUL shows */
    tern_error_clear();
    cr_assert_eq(ops->call(h->state, &c, out), TERN_OK, "%s: %s", args, tern_error_message());
    cr_assert_leq(out->output_len, cap - 1, "%s", args);
    cr_assert_eq(buf[out->output_len], '\0', "%s: the output is not NUL-terminated", args);
    cr_assert_eq(strlen(buf), out->output_len, "%s", args);
}

/* Runs `code` (its JSON encoding made here) into buf[OUT_CAP]. */
static tern_tool_result run_code(const harness *h, const char *code, char *buf)
{
    json_t *a = json_pack("{s:s}", "code", code);
    char *args = json_dumps(a, 0);
    tern_tool_result r;
    call_args(h, args, buf, OUT_CAP, &r);
    free(args);
    json_decref(a);
    return r;
}

/* Whether s ends with tail. */
static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

Test(python_tool, describes_a_function_named_python)
{
    harness h;
    open_python(&h, LIMITS);
    cr_expect(h.entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE);
    const tern_tool_ops *ops = harness_ops(&h);
    const char *schema = NULL;
    cr_assert_eq(ops->describe(h.state, &schema), TERN_OK);
    cr_assert_not_null(schema);
    json_error_t err;
    json_t *j = json_loads(schema, 0, &err);
    cr_assert_not_null(j, "describe() is not JSON: %s: %s", err.text, schema);
    cr_expect_str_eq(json_string_value(json_object_get(j, "type")), "function");
    json_t *f = json_object_get(j, "function");
    cr_expect_str_eq(json_string_value(json_object_get(f, "name")), "python");
    const char *doc = json_string_value(json_object_get(f, "description"));
    cr_assert_not_null(doc);
    cr_expect(strstr(doc, "Run Python 3 code and return what it prints"), "%s", doc);
    json_t *p = json_object_get(f, "parameters");
    cr_expect_str_eq(json_string_value(json_object_get(p, "type")), "object");
    json_t *code = json_object_get(json_object_get(p, "properties"), "code");
    cr_expect_str_eq(json_string_value(json_object_get(code, "type")), "string");
    json_t *req = json_object_get(p, "required");
    cr_expect_eq(json_array_size(req), 1);
    cr_expect_str_eq(json_string_value(json_array_get(req, 0)), "code");
    json_decref(j);
    harness_close(&h);
}

Test(python_tool, answers_what_the_code_prints)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[OUT_CAP];
    tern_tool_result r = run_code(&h, "print(123*456)", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "56088\n");
    cr_expect_eq(r.truncated, 0);

    /* stdout, then stderr */
    r = run_code(&h, "import sys\nprint('out')\nprint('err', file=sys.stderr)", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "out\nerr\n");

    /* the last line's value, as the interactive interpreter shows it */
    r = run_code(&h, "x = 6\nx * 7", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "42\n");
    r = run_code(&h, "'a' + 'b'", buf);
    cr_expect_str_eq(buf, "'ab'\n");

    /* nothing printed: a fixed text */
    r = run_code(&h, "x = 1", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "(no output)");
    r = run_code(&h, "None", buf);
    cr_expect_str_eq(buf, "(no output)");
    r = run_code(&h, "", buf);
    cr_expect_str_eq(buf, "(no output)");

    /* the code is __main__, run from /box with no input */
    r = run_code(&h, "import os\nprint(__name__, os.getcwd())\ntry:\n    input()\n"
                     "except EOFError:\n    print('eof')", buf);
    cr_expect_str_eq(buf, "__main__ /box\neof\n");

    /* UTF-8 comes back as it was printed */
    r = run_code(&h, "print('h\\u00e9llo \\u2603')", buf);
    cr_expect_str_eq(buf, "h\xc3\xa9llo \xe2\x98\x83\n");
    harness_close(&h);
}

Test(python_tool, an_error_fails_with_its_traceback)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[OUT_CAP];
    tern_tool_result r = run_code(&h, "print('before')\n1/0", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_str_eq(buf, "before\n"
                          "Traceback (most recent call last):\n"
                          "  File \"/box/main.py\", line 2, in <module>\n"
                          "    1/0\n"
                          "    ~^~\n"
                          "ZeroDivisionError: division by zero\n");

    /* a print without a newline, then the traceback on its own line; the
     * runner's frames are not shown */
    r = run_code(&h, "print('x', end='')\ndef f():\n    raise ValueError('bad value')\nf()", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(strncmp(buf, "x\nTraceback (most recent call last):\n", 37) == 0, "%s", buf);
    cr_expect(ends_with(buf, "ValueError: bad value\n"), "%s", buf);
    cr_expect(strstr(buf, "run.py") == NULL, "the runner shows in the traceback: %s", buf);

    r = run_code(&h, "def f(:\n    pass", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(strstr(buf, "File \"/box/main.py\", line 1"), "%s", buf);
    cr_expect(ends_with(buf, "SyntaxError: invalid syntax\n"), "%s", buf);
    cr_expect(strstr(buf, "Traceback") == NULL, "%s", buf);

    r = run_code(&h, "return 5", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(ends_with(buf, "SyntaxError: 'return' outside function\n"), "%s", buf);

    /* an exit status without anything on stderr is said */
    r = run_code(&h, "import sys\nprint('done')\nsys.exit(3)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_str_eq(buf, "done\nexit status 3");
    r = run_code(&h, "import sys\nsys.exit(0)", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "(no output)");

    r = run_code(&h, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_str_eq(buf, "killed by SIGSEGV");
    harness_close(&h);
}

Test(python_tool, a_time_limit_fails_the_call)
{
    harness h;
    open_python(&h, BASE "time_ms = 1000;");
    char buf[OUT_CAP];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tern_tool_result r = run_code(&h, "print('started')\nwhile True:\n    pass", buf);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    /* the wall clock or the CPU limit, whichever the sandbox saw first; what
     * was printed before stays (python runs unbuffered) */
    cr_expect(strcmp(buf, "started\ntime limit of 1000 ms exceeded") == 0 ||
              strcmp(buf, "started\nCPU time limit of 1000 ms exceeded") == 0, "%s", buf);
    cr_expect_lt(s, 10.0, "a 1 s limit took %.1f s", s);

    /* a sleep spends no CPU: the wall clock stops it */
    r = run_code(&h, "import time\ntime.sleep(30)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_str_eq(buf, "time limit of 1000 ms exceeded");
    harness_close(&h);
}

Test(python_tool, the_memory_limit_fails_the_call)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[OUT_CAP];
    tern_tool_result r = run_code(&h, "b = bytearray(1 << 30)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(strstr(buf, "MemoryError"), "%s", buf);
    cr_expect(ends_with(buf, "\nmemory limit of 256 MiB exceeded"), "%s", buf);
    harness_close(&h);
}

Test(python_tool, a_long_output_is_cut_to_the_buffer)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[100];
    tern_tool_result r;
    call_args(&h, "{\"code\": \"print('x' * 100000)\"}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_eq(r.truncated, 1);
    cr_expect_eq(r.output_len, 99);
    cr_expect_eq(strspn(buf, "x"), 99, "%s", buf);

    /* cut between characters: 'é' is 2 bytes, 99 bytes hold 49 of them */
    call_args(&h, "{\"code\": \"print('\\u00e9' * 1000)\"}", buf, sizeof buf, &r);
    cr_expect_eq(r.truncated, 1);
    cr_expect_eq(r.output_len, 98, "%zu", r.output_len);

    /* a failure keeps its last line whole, the output before it cut */
    call_args(&h, "{\"code\": \"print('y' * 5000)\\n1/0\"}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_eq(r.truncated, 1);
    cr_expect_eq(strspn(buf, "y"), 99, "%s", buf);
    call_args(&h, "{\"code\": \"import sys\\nprint('y' * 5000)\\nsys.exit(2)\"}", buf,
              sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect_eq(r.truncated, 1);
    cr_expect(ends_with(buf, "yyy\nexit status 2"), "%s", buf);
    cr_expect_eq(r.output_len, 99);
    harness_close(&h);
}

Test(python_tool, the_output_limit_fails_the_call)
{
    harness h;
    /* 1 KiB of stdout at most, but never less than the core's buffer */
    open_python(&h, LIMITS "output_kb = 1;");
    char buf[OUT_CAP];
    tern_tool_result r = run_code(&h, "print('z' * 100000)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(ends_with(buf, "zzz\noutput limit of 4097 bytes exceeded"), "%s", buf);
    cr_expect_eq(strspn(buf, "z"), OUT_CAP - 1 - strlen("\noutput limit of 4097 bytes exceeded"));
    cr_expect_eq(r.truncated, 1);
    char small[64];
    call_args(&h, "{\"code\": \"print('z' * 2000)\"}", small, sizeof small, &r);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", small);
    cr_expect(ends_with(small, "\noutput limit of 1024 bytes exceeded"), "%s", small);
    harness_close(&h);
}

Test(python_tool, bad_arguments_are_invalid)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[OUT_CAP];
    tern_tool_result r;
    const char *need = "the arguments need \"code\", a string of Python";
    call_args(&h, "{}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, need);
    call_args(&h, "{\"code\": 5}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, need);
    call_args(&h, "{\"source\": \"print(1)\"}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, need);
    call_args(&h, "print(1)", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, "the arguments are not a JSON object; give {\"code\": \"...\"}");
    call_args(&h, "[\"print(1)\"]", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    /* a key besides "code" is no reason to refuse */
    call_args(&h, "{\"code\": \"print(1)\", \"timeout\": 3}", buf, sizeof buf, &r);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "1\n");
    harness_close(&h);
}

Test(python_tool, no_state_between_calls)
{
    harness h;
    open_python(&h, LIMITS);
    char buf[OUT_CAP];
    tern_tool_result r = run_code(&h, "x = 41\nopen('/box/kept.txt', 'w').write('hi')\n"
                                      "print(x + 1)", buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "42\n");
    r = run_code(&h, "print(x)", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(ends_with(buf, "NameError: name 'x' is not defined\n"), "%s", buf);
    r = run_code(&h, "import os\nprint(os.path.exists('/box/kept.txt'))", buf);
    cr_expect_str_eq(buf, "False\n");
    harness_close(&h);
}

Test(python_tool, nothing_is_written_outside_the_sandbox)
{
    harness h;
    open_python(&h, LIMITS);
    char dir[] = WORK "/outside_XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
    chmod(dir, 0777); /* writable by anyone on the host: only the sandbox keeps it out */
    char file[sizeof dir + 16], code[512], buf[OUT_CAP];
    snprintf(file, sizeof file, "%s/escaped.txt", dir);
    snprintf(code, sizeof code, "open('%s', 'w').write('out')", file);
    tern_tool_result r = run_code(&h, code, buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(strstr(buf, "FileNotFoundError"), "%s", buf);
    cr_expect_neq(access(file, F_OK), 0, "the code wrote %s", file);
    /* the host's /usr is shown read-only */
    r = run_code(&h, "open('/usr/tern_python_tool_test', 'w')", buf);
    cr_expect_eq(r.status, TERN_TOOL_FAILED, "%s", buf);
    cr_expect(strstr(buf, "Read-only file system"), "%s", buf);
    cr_expect_neq(access("/usr/tern_python_tool_test", F_OK), 0);
    rmdir(dir);
    harness_close(&h);
}

typedef struct worker {
    const harness *h;
    int id, ok;
} worker;

static void *call_in_thread(void *arg)
{
    worker *w = arg;
    w->ok = 1;
    for (int i = 0; i < 3; i++) {
        char code[64], want[32], buf[256];
        snprintf(code, sizeof code, "{\"code\": \"print(%d * 1000 + %d)\"}", w->id, i);
        snprintf(want, sizeof want, "%d\n", w->id * 1000 + i);
        const tern_tool_ops *ops = harness_ops(w->h);
        tern_tool_call c = {.size = sizeof c, .name = "python", .arguments = code};
        tern_tool_result r = {.size = sizeof r, .output = buf, .output_cap = sizeof buf};
        w->ok &= ops->call(w->h->state, &c, &r) == TERN_OK && r.status == TERN_TOOL_OK &&
                 strcmp(buf, want) == 0;
    }
    return NULL;
}

Test(python_tool, calls_from_two_threads_at_once)
{
    harness h;
    open_python(&h, LIMITS);
    worker w[2] = {{&h, 1, 0}, {&h, 2, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, call_in_thread, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_expect(w[0].ok && w[1].ok, "a call beside another went wrong");
    harness_close(&h);
}

static void expect_refused(const char *settings, const char *words)
{
    harness h;
    int rc = harness_open(&h, "python", TERN_KIND_TOOL, settings);
    cr_expect_neq(rc, TERN_OK, "%s was accepted", settings);
    cr_expect(strstr(h.error, words), "%s: the message '%s' lacks '%s'", settings, h.error, words);
    harness_close(&h);
}

Test(python_tool, bad_settings_are_refused)
{
    expect_refused("python = \"/usr/bin/no-such-python\";", "No such file");
    expect_refused("python = \"python3\";", "not an absolute path");
    expect_refused("helper = \"/no/such/tern-sandbox\";", "tern-sandbox");
    expect_refused("binds = [\"/tmp/x\"];", "/tmp is the sandbox's own");
    expect_refused("time_ms = 0;", "time_ms");
    expect_refused("c_compiler = \"/usr/bin/gcc\";", "c_compiler");
}
