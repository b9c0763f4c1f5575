/* cmd_reward.c: `tern reward score` (tern/libtern.h): score saved responses
 * with one reward plugin, a JSON line in, a JSON line out.
 *
 * The command writes the reward slot a config would hold ("rewards = ( {
 * plugin = ...; domain = "*"; key = value; ... } );") from its flags, opens a
 * session on it (the plugin found on the search path, its settings checked
 * against its spec, create() run), and scores the input in batches through
 * the same routing as a run (reward/rewarder.h), so `isolate` and
 * `timeout_ms` behave as they do there. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/watchdog.h"
#include "flag_config.h"
#include "base/log.h"
#include "reward/rewarder.h"
#include "host/session.h"
#include "data/task.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"

#define LABEL "tern reward score"
#define DEFAULT_BATCH 64

/* A libconfig literal as the file would hold it: a number, a boolean, a
 * quoted string, an array or a list. */
static int is_literal(const char *v)
{
    if (!*v)
        return 0;
    if (v[0] == '"' || v[0] == '[' || v[0] == '(')
        return 1;
    if (strcasecmp(v, "true") == 0 || strcasecmp(v, "false") == 0)
        return 1;
    char *end = NULL;
    errno = 0;
    strtod(v, &end);
    if (end != v && (*end == '\0' || (end[0] == 'L' && end[1] == '\0')))
        return !isspace((unsigned char)v[0]);
    return 0;
}

/* A key libconfig accepts: a letter or '*', then letters, digits, '_', '-'
 * or '*'. */
static int is_key(const char *k, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)k[0]) || k[0] == '*'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)k[i]) || k[i] == '_' || k[i] == '-' || k[i] == '*'))
            return 0;
    return 1;
}

/* The config text, or NULL with a usage message printed (or out of memory:
 * *oom set). */
static char *reward_config(const tern_invocation *inv, const tern_reward_score_args *a, int *oom)
{
    tern_text_buf b = {0};
    *oom = 0;
    if (a->plugin_dir) {
        tern_text_puts(&b, "plugin_path = [ ");
        tern_tb_quoted(&b, a->plugin_dir);
        tern_text_puts(&b, " ];\n");
    }
    tern_text_puts(&b, "rewards = ( {\n  plugin = ");
    tern_tb_quoted(&b, a->plugin);
    tern_text_puts(&b, ";\n  domain = \"*\";\n");
    for (size_t i = 0; i < a->n_options; i++) {
        const char *o = a->options[i];
        const char *eq = strchr(o, '=');
        size_t kn = eq ? (size_t)(eq - o) : 0;
        if (!eq || !is_key(o, kn)) {
            fprintf(cmd_err(inv), LABEL ": -o '%s': give key=value, a setting of the plugin "
                    "(e.g. -o answer_field=solution)\n", o);
            free(b.p);
            return NULL;
        }
        if ((kn == 6 && strncmp(o, "plugin", 6) == 0) ||
            (kn == 6 && strncmp(o, "domain", 6) == 0)) {
            fprintf(cmd_err(inv), LABEL ": -o '%s': %.*s is not a setting here (the plugin is "
                    "--plugin, and every line is scored whatever its domain)\n", o, (int)kn, o);
            free(b.p);
            return NULL;
        }
        tern_text_puts(&b, "  ");
        tern_text_put(&b, o, kn);
        tern_text_puts(&b, " = ");
        if (is_literal(eq + 1))
            tern_text_puts(&b, eq + 1);
        else
            tern_tb_quoted(&b, eq + 1); /* a bare word is a string */
        tern_text_puts(&b, ";\n");
    }
    tern_text_puts(&b, "} );\n");
    if (b.oom) {
        free(b.p);
        *oom = 1;
        return NULL;
    }
    return b.p;
}

/* One input line, parsed. */
typedef struct pending {
    tern_task *task; /* NULL: the line was bad, `error` says why */
    char *error;
    size_t line;
} pending;

/* Print o, dumped with `flags`, as one line and drop it. o NULL or not
 * `built` in full is out of memory: TERN_ENOMEM "out of memory writing WHAT". */
static int print_json_line(FILE *out, json_t *o, int built, size_t flags, const char *what)
{
    char *text = o && built ? json_dumps(o, flags) : NULL;
    json_decref(o);
    if (!text)
        return tern_errorf(TERN_ENOMEM, "out of memory writing %s", what);
    fprintf(out, "%s\n", text);
    free(text);
    return TERN_OK;
}

/* The output line for a verdict: reward, components, reason (and failed). */
static int print_verdict(FILE *out, const tern_verdict *v)
{
    json_t *o = json_object();
    int rc = o ? json_object_set_new(o, "reward", json_real(v->reward)) : -1;
    for (uint32_t c = 0; rc == 0 && c < v->n_parts; c++) {
        const char *name = v->part_name[c];
        if (strcmp(name, "reward") == 0 || strcmp(name, "reason") == 0 ||
            strcmp(name, "failed") == 0 || json_object_get(o, name))
            continue; /* the output's own keys, and a name given twice, keep the first */
        rc = json_object_set_new(o, name, json_real(v->part_value[c]));
    }
    if (rc == 0 && v->failed)
        rc = json_object_set_new(o, "failed", json_string(v->failure));
    if (rc == 0)
        rc = json_object_set_new(o, "reason", json_string(v->reason));
    return print_json_line(out, o, rc == 0,
                           JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15),
                           "a verdict");
}

static int print_error(FILE *out, const char *msg)
{
    return print_json_line(out, json_pack("{s:s}", "error", msg), 1, JSON_COMPACT, "an error");
}

/* Score and print the n pending lines, in order; *failed counts the
 * responses that got no verdict. */
static int flush_batch(tern_rewarder *rw, FILE *out, pending *p, size_t n, size_t *failed)
{
    const tern_task **tasks = calloc(n ? n : 1, sizeof *tasks);
    const char **texts = calloc(n ? n : 1, sizeof *texts);
    uint32_t *ntok = calloc(n ? n : 1, sizeof *ntok);
    tern_verdict *v = calloc(n ? n : 1, sizeof *v);
    size_t *at = calloc(n ? n : 1, sizeof *at);
    int rc = TERN_OK;
    if (!tasks || !texts || !ntok || !v || !at) {
        rc = tern_errorf(TERN_ENOMEM, "out of memory");
        goto done;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].task) {
            tasks[m] = p[i].task;
            texts[m] = tern_task_string(p[i].task, "response");
            long long tok = 0;
            if (tern_task_integer(p[i].task, "response_tokens", &tok) == TERN_OK)
                ntok[m] = (uint32_t)tok; /* 0..UINT32_MAX: bad_tokens refused the rest */
            at[i] = m++;
        }
    uint64_t failures = 0;
    if ((rc = tern_rewarder_score(rw, tasks, texts, ntok, m, v, &failures, NULL)) != TERN_OK)
        goto done;
    *failed += (size_t)failures;
    for (size_t i = 0; i < n && rc == TERN_OK; i++)
        rc = p[i].task ? print_verdict(out, &v[at[i]]) : print_error(out, p[i].error);
    fflush(out);
done:
    free(tasks), free(texts), free(ntok), free(v), free(at);
    return rc;
}

/* A "response_tokens" that is not a whole number of tokens from 0 to
 * UINT32_MAX (-5, "x", 1e308): 1 with the message in *error (malloc'd, NULL
 * when out of memory), else 0. */
static int bad_tokens(const tern_task *t, const char *where, char **error)
{
    long long tok;
    int rc = tern_task_integer(t, "response_tokens", &tok);
    if (rc == TERN_ENOTFOUND || (rc == TERN_OK && tok >= 0 && tok <= (long long)UINT32_MAX))
        return 0;
    char got[48];
    snprintf(got, sizeof got, rc == TERN_OK ? "%lld" : "not a whole number", tok);
    if (asprintf(error, "%s: \"response_tokens\" is %s: give the response's length as a "
                 "whole number of tokens from 0 to %u, or leave it out", where, got,
                 UINT32_MAX) < 0)
        *error = NULL;
    return 1;
}

/* Read, score and print every line of `in`. *bad counts the bad lines,
 * *failed the responses that got no verdict, *scored those that got one. */
static int score_stream(const tern_invocation *inv, tern_rewarder *rw, FILE *in, size_t batch,
                        size_t *bad, size_t *failed, size_t *scored)
{
    pending *p = calloc(batch, sizeof *p);
    if (!p)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    char *line = NULL;
    size_t cap = 0, n = 0, lineno = 0;
    ssize_t len;
    int rc = TERN_OK;
    while (rc == TERN_OK && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t sp = 0;
        while (sp < (size_t)len && strchr(" \t\r\n", line[sp]) && line[sp])
            sp++;
        if (sp == (size_t)len)
            continue; /* blank lines give no output line (a NUL byte is no blank) */
        char where[64];
        snprintf(where, sizeof where, "stdin:%zu", lineno);
        pending *q = &p[n++];
        *q = (pending){.line = lineno};
        int prc = tern_task_parse(line, (size_t)len, where, &q->task);
        if (prc == TERN_ENOMEM) {
            rc = prc;
        } else if (prc != TERN_OK) {
            q->error = strdup(tern_error_message());
        } else if (bad_tokens(q->task, where, &q->error)) {
            tern_task_free(q->task);
            q->task = NULL;
        } else if (!tern_task_string(q->task, "response")) {
            tern_task_free(q->task);
            q->task = NULL;
            if (asprintf(&q->error, "%s: no \"response\" string: each line is a task object "
                         "with the response to score, {\"answer\": \"42\", \"response\": "
                         "\"... \\\\boxed{42}\"}", where) < 0)
                q->error = NULL;
        }
        if (rc == TERN_OK && !q->task) {
            if (!q->error)
                rc = tern_errorf(TERN_ENOMEM, "out of memory");
            else
                fprintf(cmd_err(inv), LABEL ": %s\n", q->error);
            (*bad)++;
        }
        if (rc == TERN_OK && q->task)
            (*scored)++;
        if (rc == TERN_OK && n == batch)
            rc = flush_batch(rw, cmd_out(inv), p, n, failed);
        if (n == batch || rc != TERN_OK) {
            for (size_t i = 0; i < n; i++)
                tern_task_free(p[i].task), free(p[i].error);
            n = 0;
        }
    }
    if (rc == TERN_OK && ferror(in))
        rc = tern_errorf(TERN_EIO, "cannot read the input: %s", strerror(errno));
    if (rc == TERN_OK && n)
        rc = flush_batch(rw, cmd_out(inv), p, n, failed);
    for (size_t i = 0; i < n; i++)
        tern_task_free(p[i].task), free(p[i].error);
    free(p);
    free(line);
    return rc;
}

int tern_cmd_reward_score(const tern_invocation *inv, const tern_reward_score_args *a)
{
    if (!inv || inv->size < sizeof(tern_invocation) || !a ||
        a->size < sizeof(tern_reward_score_args) || !a->plugin || !*a->plugin ||
        (a->n_options && !a->options)) {
        fprintf(inv && inv->err ? inv->err : stderr,
                LABEL ": bad arguments (a bug in the caller): --plugin is required\n");
        return TERN_EXIT_USAGE;
    }
    int oom = 0;
    char *text = reward_config(inv, a, &oom);
    if (!text) {
        if (oom)
            fprintf(cmd_err(inv), LABEL ": out of memory\n");
        return oom ? TERN_EXIT_FAILURE : TERN_EXIT_USAGE;
    }
    tern_session s;
    tern_diag d;
    tern_diag_init(&d);
    tern_log_set_stream(cmd_err(inv));
    int rc = tern_session_open_text(&s, text, LABEL, 1, &d);
    free(text);
    if (d.n && rc == TERN_OK)
        rc = TERN_ECONFIG;
    tern_print_flag_problems(cmd_err(inv), LABEL, &d);
    tern_diag_free(&d);
    tern_error_clear(); /* what the session said is printed */
    tern_rewarder rw = {0};
    size_t bad = 0, failed = 0, scored = 0;
    if (rc == TERN_OK && (rc = tern_rewarder_open(&rw, &s)) == TERN_OK) {
        if (rw.n != 1) {
            rc = tern_errorf(TERN_ECONFIG, "%s is not a reward plugin (`tern plugins` lists "
                             "them)", a->plugin);
        } else {
            rw.routes[0].domain = NULL; /* every line, whatever its domain */
            /* an in-process call past watchdog_s is named, as in a run */
            int watching = tern_watchdog_start(NULL, NULL) == TERN_OK;
            rc = score_stream(inv, &rw, a->in ? a->in : stdin,
                              a->batch ? a->batch : DEFAULT_BATCH, &bad, &failed, &scored);
            if (watching)
                tern_watchdog_stop();
        }
    }
    if (rc != TERN_OK && rc != TERN_ECONFIG) {
        const char *m = tern_error_message();
        fprintf(cmd_err(inv), LABEL ": %s\n", *m ? m : "failed");
    } else if (rc == TERN_ECONFIG && *tern_error_message()) {
        fprintf(cmd_err(inv), LABEL ": %s\n", tern_error_message());
    }
    tern_rewarder_close(&rw);
    tern_session_close(&s);
    tern_log_set_stream(NULL);
    if (rc == TERN_OK && failed)
        fprintf(cmd_err(inv), LABEL ": %zu of %zu response%s got no verdict (each has \"failed\" "
                "and the reason in its output line; with isolate = true a crash or a hang costs "
                "only its line)\n", failed, scored, scored == 1 ? "" : "s");
    if (rc == TERN_OK && bad) {
        fprintf(cmd_err(inv), LABEL ": %zu bad line%s (each got an {\"error\": ...} line in the "
                "output)\n", bad, bad == 1 ? "" : "s");
        return TERN_EXIT_USAGE;
    }
    if (rc == TERN_OK && failed)
        return TERN_EXIT_FAILURE;
    if (rc == TERN_OK)
        return TERN_EXIT_OK;
    return rc == TERN_ECONFIG ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
}
