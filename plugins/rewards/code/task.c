/* task.c: reading a code task's fields (task.h). */
#include "task.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t cap, const char *msg)
{
    snprintf(why, cap, "%s", msg);
    return -1;
}

static char *copy(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int read_cases(const tern_host *host, const tern_task *task, code_task *t, char *why,
                      size_t cap)
{
    char *text = host->task_json(task, "tests");
    if (!text)
        return 0;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    host->free(text);
    int rc = -1;
    if (!v || !json_is_array(v)) {
        rc = bad(why, cap, "the task's `tests` is not a list of {\"stdin\": ..., \"stdout\": ...}");
        goto done;
    }
    size_t n = json_array_size(v);
    if (n > CODE_MAX_CASES) {
        snprintf(why, cap, "the task has %zu tests, more than %d", n, CODE_MAX_CASES);
        goto done;
    }
    if (n && !(t->cases = calloc(n, sizeof *t->cases))) {
        bad(why, cap, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(v, i);
        json_t *in = json_object_get(c, "stdin"), *out = json_object_get(c, "stdout");
        if (!json_is_object(c) || !json_is_string(out) || (in && !json_is_string(in))) {
            snprintf(why, cap, "the task's test %zu is not {\"stdin\": \"...\", \"stdout\": "
                     "\"...\"} (stdout is required, both are strings)", i + 1);
            goto done;
        }
        code_case *k = &t->cases[i];
        t->n_cases = i + 1;
        k->stdin_len = in ? json_string_length(in) : 0;
        k->stdout_len = json_string_length(out);
        k->stdin_data = copy(in ? json_string_value(in) : "", k->stdin_len);
        k->stdout_data = copy(json_string_value(out), k->stdout_len);
        if (!k->stdin_data || !k->stdout_data) {
            bad(why, cap, "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    json_decref(v);
    return rc;
}

static int read_asserts(const tern_host *host, const tern_task *task, code_task *t, char *why,
                        size_t cap)
{
    char *text = host->task_json(task, "asserts");
    if (!text)
        return 0;
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    int ok = v && (json_is_string(v) || json_is_array(v));
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; ok && json_is_array(v) && i < n; i++)
        ok = json_is_string(json_array_get(v, i));
    json_decref(v);
    if (!ok || n == 0 || n > CODE_MAX_CASES) {
        host->free(text);
        snprintf(why, cap, "the task's `asserts` is not Python test code: give a string or a "
                 "list of 1 to %d strings", CODE_MAX_CASES);
        return -1;
    }
    t->asserts_json = copy(text, strlen(text));
    host->free(text);
    t->n_asserts = n;
    return t->asserts_json ? 0 : bad(why, cap, "out of memory");
}

static int tolerance(const tern_host *host, const tern_task *task, const char *key, double *out,
                     char *why, size_t cap)
{
    double v;
    int rc = host->task_number(task, key, &v);
    if (rc == TERN_ENOTFOUND)
        return 0;
    if (rc != TERN_OK || !(v >= 0) || v > 1e300) {
        snprintf(why, cap, "the task's `%s` is not a number >= 0", key);
        return -1;
    }
    *out = v;
    return 0;
}

int code_task_read(const tern_host *host, const tern_task *task, code_lang default_lang,
                   code_judge_opts default_tol, code_task *t, char *why, size_t cap)
{
    *t = (code_task){.lang = default_lang, .tolerance = default_tol};
    const char *lang = host->task_string(task, "language");
    char *raw = lang ? NULL : host->task_json(task, "language");
    if (raw) {
        host->free(raw);
        return bad(why, cap, "the task's `language` is not a string (\"python\" or \"c\")");
    }
    if (lang && code_lang_parse(lang, &t->lang) != 0) {
        snprintf(why, cap, "the task's language '%.40s' is not one the code reward runs: "
                 "\"python\" or \"c\"", lang);
        return -1;
    }
    if (read_cases(host, task, t, why, cap) != 0 || read_asserts(host, task, t, why, cap) != 0 ||
        tolerance(host, task, "abs_tolerance", &t->tolerance.abs_tol, why, cap) != 0 ||
        tolerance(host, task, "rel_tolerance", &t->tolerance.rel_tol, why, cap) != 0)
        goto fail;
    if (t->n_cases == 0 && !t->asserts_json) {
        bad(why, cap, "the task has no tests: give `tests` (stdin/stdout cases) or `asserts`");
        goto fail;
    }
    if (t->asserts_json && t->lang != CODE_LANG_PYTHON) {
        snprintf(why, cap, "the task gives `asserts` (Python) for a %s program: use `tests`",
                 code_lang_name(t->lang));
        goto fail;
    }
    return 0;
fail:
    code_task_free(t);
    return -1;
}

void code_task_free(code_task *t)
{
    for (size_t i = 0; i < t->n_cases; i++) {
        free(t->cases[i].stdin_data);
        free(t->cases[i].stdout_data);
    }
    free(t->cases);
    free(t->asserts_json);
    *t = (code_task){0};
}
