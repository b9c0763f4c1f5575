/* output.c: a run's sandbox result as the tool's status and text (output.h). */
#include "output.h"

#include <stdio.h>
#include <string.h>

#include <tern/support/utf8.h>

#include "runner.h"

/* The text being written into the core's buffer: at most `room` bytes of it
 * so far (the rest of the buffer is kept for the last line). */
typedef struct text {
    char *buf;
    size_t len, room;
    int cut; /* something did not fit */
} text;

/* Appends what fits of p[0..n) as valid UTF-8 without NUL (a bad byte or a
 * NUL becomes U+FFFD), stopping before the first character that does not. */
static void put(text *t, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n && !t->cut;) {
        size_t u = tern_utf8_len(p + i, n - i);
        const char *from = (const char *)p + i;
        size_t len = u;
        if (u == 0 || p[i] == '\0') {
            from = "\xef\xbf\xbd";
            len = 3;
            u = 1;
        }
        if (len > t->room - t->len) {
            t->cut = 1;
            break;
        }
        memcpy(t->buf + t->len, from, len);
        t->len += len;
        i += u;
    }
}

/* A line break unless the text is empty or already ends one. */
static void end_line(text *t)
{
    if (t->len && t->buf[t->len - 1] != '\n')
        put(t, "\n", 1);
}

/* How the run ended, when that is more than "exited": into end[cap], "" for
 * a plain exit (0, or nonzero with a traceback to say why). */
static void how_it_ended(const sandbox_limits *l, const sandbox_step_result *r, char *end,
                         size_t cap)
{
    int failed = r->outcome != SANDBOX_EXITED || r->code != 0;
    end[0] = '\0';
    switch (r->outcome) {
    case SANDBOX_WALL_LIMIT:
        snprintf(end, cap, "time limit of %llu ms exceeded", (unsigned long long)l->wall_ms);
        return;
    case SANDBOX_CPU_LIMIT:
        snprintf(end, cap, "CPU time limit of %llu ms exceeded", (unsigned long long)l->cpu_ms);
        return;
    case SANDBOX_OUTPUT_LIMIT:
        snprintf(end, cap, "output limit of %llu bytes exceeded",
                 (unsigned long long)l->output_bytes);
        return;
    }
    if (failed && code_runner_out_of_memory(l, r)) {
        snprintf(end, cap, "memory limit of %llu MiB exceeded",
                 (unsigned long long)(l->memory_bytes >> 20));
    } else if (r->outcome == SANDBOX_SIGNALED) {
        const char *name = sigabbrev_np(r->code);
        if (name)
            snprintf(end, cap, "killed by SIG%s", name);
        else
            snprintf(end, cap, "killed by signal %d", (int)r->code);
    } else if (r->code != 0 && r->err_len == 0) {
        snprintf(end, cap, "exit status %d", (int)r->code);
    }
}

void python_output_write(const sandbox_limits *l, const sandbox_step_result *r,
                         tern_tool_result *out)
{
    int ok = r->outcome == SANDBOX_EXITED && r->code == 0;
    out->status = ok ? TERN_TOOL_OK : TERN_TOOL_FAILED;
    out->output_len = 0;
    out->truncated = 0;
    if (!out->output || out->output_cap == 0)
        return;
    char end[96];
    how_it_ended(l, r, end, sizeof end);
    size_t cap = out->output_cap - 1, keep = end[0] ? strlen(end) + 1 : 0; /* "\n" + end */
    text t = {.buf = out->output, .room = keep < cap ? cap - keep : 0};
    put(&t, r->out, r->out ? r->out_len : 0);
    if (r->err && r->err_len) {
        end_line(&t);
        put(&t, r->err, r->err_len);
    }
    int cut = t.cut;
    /* the last line in the room kept for it (or what fits of it, in a
     * buffer too small for even that) */
    t.room = cap;
    t.cut = 0;
    if (end[0]) {
        end_line(&t);
        put(&t, end, strlen(end));
    } else if (t.len == 0 && ok && !cut) {
        put(&t, "(no output)", 11); /* the model needs to see something */
    }
    out->output[t.len] = '\0';
    out->output_len = t.len;
    out->truncated = cut || t.cut;
}
