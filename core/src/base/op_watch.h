/* op_watch.h: which plugin op each thread is in, so that a plugin that
 * crashes, hangs or holds up a stop is named instead of ending or stalling
 * tern in silence (issue 28).
 *
 * The caller of an in-process plugin op brackets the call with
 * tern_op_enter() / tern_op_leave() around a mark on its stack. Three
 * readers use the marks:
 *   - the fatal-signal handler (tern_crash_report_install): a SIGSEGV,
 *     SIGBUS, SIGFPE, SIGILL or SIGABRT raised inside the op names the
 *     plugin, the op, the instance, the task and the fix, on stderr and in
 *     log.txt, with async-signal-safe writes, then dies of the signal as
 *     before (same exit status, same core dump, a sanitizer's report still
 *     printed);
 *   - the run's watchdog (loop/watchdog.h): an op past its limit is named;
 *   - the same watchdog after a stop signal: what the step in progress
 *     waits for. */
#ifndef TERN_OP_WATCH_H
#define TERN_OP_WATCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tern_op_mark {
    const char *who;     /* the config instance: "rewards[0]" */
    const char *plugin;  /* the plugin's name */
    const char *path;    /* its file */
    const char *op;      /* the op: "score" */
    const char *task;    /* the id of the first task the call is about, or NULL */
    size_t items;        /* the responses (or items) in the call; 0: none */
    const char *fix;     /* what to do about a crash or a hang, one clause */
    uint64_t limit_ns;   /* the watchdog names the op past this long; 0: never */
    /* set by tern_op_enter */
    uint64_t start_ns;   /* tern_mono_ns() at entry */
    pthread_t thread;    /* the thread in the op */
    int warned;          /* the watchdog named it (under the table's lock) */
    struct tern_op_mark *outer, *prev, *next;
} tern_op_mark;

/* Run the statement `call` inside plugin op `op` of plugin `plugin` (file
 * `path`) for `who`, with `fix` for the crash report; a NULL plugin (a
 * core stand-in, not a plugin) runs it unmarked. */
#define TERN_IN_OP(who_, plugin_, path_, op_, fix_, call)                                 \
    do {                                                                                  \
        if (!(plugin_)) {                                                                 \
            call;                                                                         \
            break;                                                                        \
        }                                                                                 \
        tern_op_mark op_mark_ = {.who = (who_), .plugin = (plugin_), .path = (path_),    \
                                 .op = (op_), .fix = (fix_)};                             \
        tern_op_enter(&op_mark_);                                                         \
        call;                                                                             \
        tern_op_leave(&op_mark_);                                                         \
    } while (0)

/* This thread enters the op that m describes (m stays valid until
 * tern_op_leave(m)). Nested ops are fine; the innermost is named. */
void tern_op_enter(tern_op_mark *m);
void tern_op_leave(tern_op_mark *m);

/* Call fn on every op in flight, under the table's lock (fn must not
 * enter or leave an op, nor log through a plugin), with the current
 * tern_mono_ns(). */
typedef void (*tern_op_visit_fn)(tern_op_mark *m, uint64_t now_ns, void *arg);
void tern_op_visit(tern_op_visit_fn fn, void *arg);

/* One sentence naming m: "plugin 'P' (FILE) in its OP() op, for WHO, on a
 * batch of N responses, the first to task 'T'". */
void tern_op_describe(const tern_op_mark *m, char *buf, size_t n);

/* Catch the fatal signals for the crash report (once per process; later
 * calls do nothing). Each handler hands the signal on to the action it
 * replaced (the default, or a sanitizer's) once it has written the report. */
void tern_crash_report_install(void);

#endif
