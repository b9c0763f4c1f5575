/*
 * cmd_show.c: `tern show RUN_DIR` (commands.h): a step's whole groups from
 * rollouts.jsonl, or an evaluation's responses from eval_responses.jsonl,
 * printed for a person: the task's prompt and answer, and each response
 * with its reward, verdict and (evaluation) reason. Texts are shown as JSON
 * strings, so that a newline, a space at the end or a byte that is not text
 * can be seen, and cut at `chars` characters.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_io.h"
#include "commands.h"

#define LABEL "tern show"

/* The JSON objects of path's lines, in order; a last line that does not
 * parse (a run killed while writing it) is dropped with a warning, a bad
 * line before it is an error. NULL with the message printed. *code gets the
 * exit code: 2 for a missing or malformed file, 1 for one that cannot be
 * read. */
static json_t *read_lines(const tern_invocation *inv, const char *path, int *code)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        *code = cmd_fail(inv, LABEL, e == ENOENT ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE,
                         "%s: cannot read: %s%s", path, strerror(e),
                         e == ENOENT ? " (a run directory has it once a step or evaluation "
                                       "has run: is this the path `tern run` printed?)"
                                     : "");
        return NULL;
    }
    json_t *lines = json_array();
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, bad = 0;
    ssize_t got;
    *code = TERN_EXIT_OK;
    while (lines && (got = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t n = (size_t)got;
        while (n > 0 && isspace((unsigned char)line[n - 1]))
            n--;
        if (n == 0)
            continue;
        if (bad) {
            *code = cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s:%ld: not a JSON object; every line "
                             "is one (fix or delete the line)", path, bad);
            break;
        }
        json_t *o = json_loadb(line, n, 0, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            bad = lineno;
            continue;
        }
        json_array_append_new(lines, o);
    }
    if (*code == TERN_EXIT_OK && ferror(f))
        *code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "%s: cannot read: %s", path,
                         strerror(errno));
    if (*code == TERN_EXIT_OK && !lines)
        *code = cmd_fail(inv, LABEL, TERN_EXIT_FAILURE, "out of memory");
    if (*code == TERN_EXIT_OK && bad)
        cmd_report(inv, LABEL, "%s:%ld: the last line is cut short (a run stopped while writing "
                   "it): skipped", path, bad);
    free(line);
    fclose(f);
    if (*code != TERN_EXIT_OK) {
        json_decref(lines);
        return NULL;
    }
    return lines;
}

static long long int_of(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* s as a JSON string, cut at `chars` characters (0: whole) with how many
 * more there were. */
static void put_text(FILE *out, const char *s, long long chars)
{
    size_t len = strlen(s), cut = len;
    long long seen = 0;
    if (chars > 0)
        for (size_t i = 0; i < len; i++) {
            if (((unsigned char)s[i] & 0xc0) != 0x80 && seen++ == chars) {
                cut = i;
                break;
            }
        }
    json_t *j = json_stringn(s, cut);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(q ? q : "\"?\"", out);
    if (cut < len) {
        long long rest = 0;
        for (size_t i = cut; i < len; i++)
            rest += ((unsigned char)s[i] & 0xc0) != 0x80;
        fprintf(out, " ... (%lld more characters; --chars 0 shows all)", rest);
    }
    free(q);
    json_decref(j);
}

/* "right", "wrong", or "-" where no reward said (null) */
static const char *verdict(json_t *right)
{
    return json_is_true(right) ? "right" : json_is_false(right) ? "wrong" : "-";
}

/* The task's line: id, domain, prompt and answer. */
static void put_task(FILE *out, json_t *o, long long chars)
{
    const char *task = json_string_value(json_object_get(o, "task"));
    const char *dom = json_string_value(json_object_get(o, "domain"));
    const char *prompt = json_string_value(json_object_get(o, "prompt"));
    json_t *answer = json_object_get(o, "answer");
    fprintf(out, "task %s", task ? task : "?");
    if (dom && *dom)
        fprintf(out, " [%s]", dom);
    if (json_object_get(o, "group"))
        fprintf(out, " (batch %lld, group %lld, sampled by weights version %lld)",
                int_of(o, "batch"), int_of(o, "group"), int_of(o, "version"));
    fputs(": ", out);
    put_text(out, prompt ? prompt : "", chars);
    if (answer) {
        char *a = json_dumps(answer, JSON_ENCODE_ANY);
        fprintf(out, " -> answer %s", a ? a : "?");
        free(a);
    }
    fputc('\n', out);
}

/* The steps of the lines `with` a key (NULL: any), as "0, 4, 8" (the first
 * and last few of many), into buf; *last gets the last, *n how many lines. */
static void steps_held(json_t *lines, const char *with, char *buf, size_t cap, long long *last,
                       size_t *n)
{
    enum { SHOWN = 4 }; /* steps named at each end */
    long long steps[2 * SHOWN], prev = -1;
    size_t distinct = 0, i;
    json_t *o;
    *n = 0;
    json_array_foreach(lines, i, o) {
        if (with && !json_object_get(o, with))
            continue;
        long long s = int_of(o, "step");
        (*n)++;
        *last = s;
        if (distinct && s == prev)
            continue;
        prev = s;
        if (distinct < 2 * SHOWN)
            steps[distinct] = s;
        else { /* keep the first SHOWN and the last SHOWN */
            memmove(steps + SHOWN, steps + SHOWN + 1, (SHOWN - 1) * sizeof *steps);
            steps[2 * SHOWN - 1] = s;
        }
        distinct++;
    }
    size_t o_ = 0, k = distinct < 2 * SHOWN ? distinct : 2 * SHOWN;
    buf[0] = '\0';
    for (size_t x = 0; x < k && o_ < cap; x++)
        o_ += (size_t)snprintf(buf + o_, cap - o_, "%s%lld",
                               x == 0 ? "" : distinct > 2 * SHOWN && x == SHOWN ? ", ..., " : ", ",
                               steps[x]);
}

/* Whether `shown` of `total` things (`one`, `many` of them) reached --limit:
 * then it says how many more there are. */
static int at_limit(FILE *out, const tern_show_args *a, size_t shown, size_t total,
                    const char *one, const char *many)
{
    if (a->limit <= 0 || shown < (size_t)a->limit)
        return 0;
    fprintf(out, "\n(%zu more %s; --limit 0 shows all)\n", total - shown,
            total - shown == 1 ? one : many);
    return 1;
}

static int show_groups(const tern_invocation *inv, const tern_show_args *a, json_t *lines,
                       const char *path)
{
    FILE *out = cmd_out(inv);
    long long last = 0, step = a->step;
    size_t n;
    char held[160];
    steps_held(lines, "responses", held, sizeof held, &last, &n);
    if (n == 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s: no group was kept whole (with every "
                        "response): run.keep_groups was 0, or run.keep_mb was reached, or no RL "
                        "step has run yet", path);
    if (step < 0)
        step = last;
    size_t kept = 0, trained = 0, i;
    json_t *o;
    json_array_foreach(lines, i, o) {
        if (int_of(o, "step") != step)
            continue;
        trained++;
        kept += json_object_get(o, "responses") != NULL;
    }
    if (kept == 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s: step %lld kept no whole group; these "
                        "steps did: %s (--step N)", path, step, held);
    fprintf(out, "step %lld: %zu of the %zu groups it trained on, with every response\n", step,
            kept, trained);
    size_t shown = 0;
    json_array_foreach(lines, i, o) {
        if (int_of(o, "step") != step || !json_object_get(o, "responses"))
            continue;
        if (at_limit(out, a, shown, kept, "group", "groups"))
            break;
        shown++;
        fputc('\n', out);
        put_task(out, o, a->chars);
        size_t k;
        json_t *r;
        json_array_foreach(json_object_get(o, "responses"), k, r) {
            const char *text = json_string_value(json_object_get(r, "response"));
            const char *fail = json_string_value(json_object_get(r, "failure"));
            const char *finish = json_string_value(json_object_get(r, "finish"));
            fprintf(out, "  %2zu  reward %7.3f  %-5s  %4lld tokens %-6s  ", k + 1,
                    json_number_value(json_object_get(r, "reward")),
                    verdict(json_object_get(r, "right")), int_of(r, "tokens"),
                    finish ? finish : "");
            put_text(out, text ? text : "", a->chars);
            if (fail)
                fprintf(out, "  (no verdict: %s)", fail);
            fputc('\n', out);
        }
    }
    return TERN_EXIT_OK;
}

static int show_eval(const tern_invocation *inv, const tern_show_args *a, json_t *lines,
                     const char *path)
{
    FILE *out = cmd_out(inv);
    long long last = 0, step = a->step;
    size_t n;
    char held[160];
    steps_held(lines, NULL, held, sizeof held, &last, &n);
    if (n == 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s: no evaluation yet (a run evaluates "
                        "when it has data.eval: before RL, every eval.every steps and at the "
                        "end)", path);
    if (step < 0)
        step = last;
    size_t tasks = 0, judged = 0, right = 0, i;
    double reward = 0;
    long long version = -1;
    json_t *o;
    json_array_foreach(lines, i, o) {
        if (int_of(o, "step") != step)
            continue;
        tasks++;
        version = int_of(o, "version");
        reward += json_number_value(json_object_get(o, "reward"));
        json_t *r = json_object_get(o, "right");
        judged += json_is_boolean(r);
        right += json_is_true(r);
    }
    if (tasks == 0)
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s: no evaluation at step %lld; the "
                        "evaluations are at steps %s (--step N)", path, step, held);
    fprintf(out, "evaluation at step %lld (weights version %lld), %zu tasks: ", step, version,
            tasks);
    if (judged)
        fprintf(out, "%zu of %zu right (%.3f), ", right, judged, (double)right / (double)judged);
    else
        fputs("no accuracy (no reward gives an \"accuracy\" component), ", out);
    fprintf(out, "mean reward %.3f\n", reward / (double)tasks);
    size_t shown = 0;
    json_array_foreach(lines, i, o) {
        if (int_of(o, "step") != step)
            continue;
        if (at_limit(out, a, shown, tasks, "task", "tasks"))
            break;
        shown++;
        fputc('\n', out);
        put_task(out, o, a->chars);
        const char *text = json_string_value(json_object_get(o, "response"));
        const char *reason = json_string_value(json_object_get(o, "reason"));
        const char *fail = json_string_value(json_object_get(o, "failure"));
        fprintf(out, "  reward %7.3f  %-5s  %4lld tokens  ",
                json_number_value(json_object_get(o, "reward")),
                verdict(json_object_get(o, "right")), int_of(o, "tokens"));
        put_text(out, text ? text : "", a->chars);
        fputc('\n', out);
        if (fail)
            fprintf(out, "  no verdict (%s)%s%s\n", fail, reason && *reason ? ": " : "",
                    reason ? reason : "");
        else if (reason && *reason)
            fprintf(out, "  why: %s\n", reason);
    }
    return TERN_EXIT_OK;
}

int tern_cmd_show(const tern_invocation *inv, const tern_show_args *a)
{
    if (cmd_structs_too_old(inv, LABEL, a ? a->size : 0, sizeof *a))
        return TERN_EXIT_USAGE;
    struct stat st;
    if (stat(a->run_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cmd_fail(inv, LABEL, TERN_EXIT_USAGE, "%s: %s; give a run directory (the path "
                        "`tern run` prints at its end)", a->run_dir,
                        stat(a->run_dir, &st) != 0 ? strerror(errno) : "not a directory");
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", a->run_dir,
             a->eval ? "eval_responses.jsonl" : "rollouts.jsonl");
    int code;
    json_t *lines = read_lines(inv, path, &code);
    if (!lines)
        return code;
    code = a->eval ? show_eval(inv, a, lines, path) : show_groups(inv, a, lines, path);
    json_decref(lines);
    return code;
}
