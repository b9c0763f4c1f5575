/*
 * tern/host.h: the services the core offers to plugins (the host table).
 *
 * A plugin receives `const tern_host *` in its entry point (plugin.h) and may
 * keep the pointer: the table lives until the process ends. Every service is a
 * function pointer, never a linked symbol, so a plugin links nothing of libtern
 * (docs/architecture.md §3). Members are appended only; check TERN_HAS(host, member)
 * before using one added after ABI 1.0.
 *
 * Most services take the calling instance's `tern_ctx *` (handed to the
 * plugin's create()), which tells the core which config group, log prefix,
 * metric prefix and RNG stream the call belongs to.
 *
 * Thread-safety: every service may be called from any thread at any time while
 * the instance exists, unless its comment says otherwise.
 */
#ifndef TERN_HOST_H
#define TERN_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One plugin instance as the core sees it: its config group, its name for
 * logs and metrics ("buffer", "rewards[0]"), its RNG seed. Owned by the core;
 * valid from create() until destroy() returns. */
typedef struct tern_ctx tern_ctx;

/* A task (one line of a tasks JSON Lines file): read it with the task_*
 * services. Owned by the core; valid during the op call it is passed to. */
typedef struct tern_task tern_task;

/* Log levels, most severe first. The run's `run.log_level` (default info)
 * decides what reaches stderr and log.txt; plugins never print to stdout. */
typedef enum tern_log_level {
    TERN_LOG_ERROR = 0,
    TERN_LOG_WARN = 1,
    TERN_LOG_INFO = 2,
    TERN_LOG_DEBUG = 3
} tern_log_level;

#if defined(__GNUC__)
#define TERN_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define TERN_PRINTF(fmt_idx, arg_idx)
#endif

typedef struct tern_host {
    size_t size;        /* sizeof(tern_host) as the core was built */
    uint32_t abi_major; /* the core's TERN_ABI_MAJOR */
    uint32_t abi_minor; /* the core's TERN_ABI_MINOR */
    const char *version; /* the core's TERN_VERSION_STRING */

    /* ---- Logging and errors ------------------------------------------ */

    /* Log one line (no trailing newline needed) at `level`, prefixed with the
     * instance name. `ctx` may be NULL in the entry point. */
    void (*log)(tern_ctx *ctx, tern_log_level level, const char *fmt, ...) TERN_PRINTF(3, 4);

    /* Leave the error message for the op that is about to fail and return
     * `status` unchanged, so a plugin writes `return host->fail(ctx, TERN_EINVAL,
     * "...")`. The message should say what went wrong, where, and how to fix
     * it, in one line. The message is kept per thread: the core reads it on the
     * calling thread right after the op returns. `ctx` may be NULL. */
    int (*fail)(tern_ctx *ctx, int status, const char *fmt, ...) TERN_PRINTF(3, 4);

    /* ---- Settings of the instance's own config group ----------------- */
    /* `key` is a key declared in the plugin's settings spec; nested keys are
     * written with dots ("init.preset") and list elements with their index
     * ("cases.0.name"). Values were checked against the spec before create()
     * (type, range, choices) and defaults filled in, so these fail only with
     * TERN_ENOTFOUND for an absent optional key (or a key not in the spec)
     * and TERN_EINVAL for a key of another type. Pointers returned stay valid
     * until the instance is destroyed. Thread-safe. */
    int (*get_int)(tern_ctx *ctx, const char *key, int64_t *out);
    int (*get_float)(tern_ctx *ctx, const char *key, double *out);
    int (*get_bool)(tern_ctx *ctx, const char *key, int *out);
    int (*get_string)(tern_ctx *ctx, const char *key, const char **out);
    /* Elements in a LIST or STRINGS setting (0 if absent). */
    int (*get_count)(tern_ctx *ctx, const char *key, size_t *out);
    /* For checks the spec cannot express: leaves "FILE:LINE: section.key: <msg>"
     * as the op's error message and returns TERN_ECONFIG. */
    int (*setting_error)(tern_ctx *ctx, const char *key, const char *fmt, ...) TERN_PRINTF(3, 4);

    /* ---- Metrics and trace ------------------------------------------- */

    /* Add one observation of the metric `name` ([a-z0-9_.]+); the core
     * prefixes the instance name and reports per step the mean, and the count
     * (as name.count), of the values observed during the step. */
    void (*metric)(tern_ctx *ctx, const char *name, double value);
    /* Open a trace span `name` on the calling thread's lane; returns a token
     * for span_end (0 when tracing is off, which span_end accepts). */
    uint64_t (*span_begin)(tern_ctx *ctx, const char *name);
    /* Close the span. `args_json` is NULL or a JSON object text ("{\"n\":3}")
     * stored as the event's args; it is copied. */
    void (*span_end)(tern_ctx *ctx, uint64_t token, const char *args_json);

    /* ---- Clock and randomness ---------------------------------------- */

    /* Monotonic clock in nanoseconds (CLOCK_MONOTONIC); only differences mean
     * something. */
    uint64_t (*now_ns)(void);
    /* A 64-bit seed derived from the run's `run.seed`, the instance name and
     * `stream`: the same inputs give the same seed in every run, different
     * streams give independent seeds. Feed it to tern_rng_seed() (rng.h). */
    uint64_t (*rng_seed)(tern_ctx *ctx, const char *stream);

    /* ---- Tasks --------------------------------------------------------- */
    /* Read fields of a task object. `key` is a top-level field or a dotted
     * path into nested objects ("meta.difficulty"). */

    /* The string field `key`, or NULL if absent or not a string. Valid while
     * the task is. */
    const char *(*task_string)(const tern_task *task, const char *key);
    /* The number field `key` into *out: TERN_OK, TERN_ENOTFOUND or TERN_EINVAL
     * (not a number). */
    int (*task_number)(const tern_task *task, const char *key, double *out);
    /* Field `key` (any JSON type) serialized as compact JSON text, or NULL if
     * absent or out of memory; "" is the whole task object. The caller frees
     * it with host->free(). */
    char *(*task_json)(const tern_task *task, const char *key);
    /* Frees memory the host allocated for the plugin (task_json). NULL is fine. */
    void (*free)(void *p);

    /* ---- Added in ABI 1.3 (check TERN_HAS(host, task_origin)) --------- */

    /* The path of the tasks file the task was read from, as the config gave
     * it (relative paths are relative to the working directory), or NULL when
     * the task came from elsewhere (`tern reward score` reads standard input).
     * Plugins resolve paths inside tasks (a vision task's `image`) against
     * its directory. Valid while the task is. */
    const char *(*task_origin)(const tern_task *task);

    /* ---- Added in ABI 1.9 (check TERN_HAS(host, note)) ---------------- */

    /* Record a fact about how this instance computes that can change its
     * figures from one machine to another: a code path chosen at run time
     * from the CPU's features (AVX512-BF16 products, an AVX2 exp), a BLAS
     * library's kernel, a GPU's name. `key` is [a-z0-9_.]+ (at most 63
     * bytes), `value` one line of text (at most 255 bytes; longer is cut);
     * both are copied. A run writes its notes to log.txt and to
     * summary.json ("notes": {"<instance>": {"<key>": "<value>"}}), so two
     * runs whose figures differ show whether they took different paths.
     * A later note with the same key replaces the earlier one. Call it from
     * create or later; a NULL ctx or a bad key is ignored. */
    void (*note)(tern_ctx *ctx, const char *key, const char *value);

    /* ---- Added in ABI 1.10 (check TERN_HAS(host, config_dir)) --------- */

    /* The absolute directory of the config file this instance's settings
     * come from, or the working directory when they come from elsewhere
     * (`tern reward score`'s flags): resolve a relative path a user gives
     * in a setting (a script, a command) against it, as tern resolves the
     * config's data paths. Valid while the instance is; never NULL. */
    const char *(*config_dir)(tern_ctx *ctx);
} tern_host;

#ifdef __cplusplus
}
#endif
#endif /* TERN_HOST_H */
