/*
 * tern/reward.h: the ops table of a reward plugin (TERN_KIND_REWARD).
 *
 * The master routes each finished response to the reward plugins configured
 * for its task's `domain` (config `rewards`), in batches. A reward plugin reads
 * what it needs from the task (host->task_string(task, "answer"), ...) and
 * writes one tern_reward_result per response: the reward, optional named
 * components (accuracy, format, length_penalty, ...) that land in the metrics,
 * and a short reason a user reads when debugging a reward.
 *
 * A response the plugin cannot judge (malformed, unparseable) is not an error:
 * it gets a verdict (usually 0) and a reason. When the plugin could not judge
 * one response at all (its checker died on it, a user function raised),
 * it says so in that result's `failure` (ABI 1.10): that response is scored
 * as failed, the others stand. Return a failure status only when the plugin
 * itself is broken (out of memory); the core then scores the whole batch as
 * failed and counts it.
 *
 * Thread-safety: without TERN_CAP_THREAD_SAFE the core never calls score()
 * concurrently on one instance.
 */
#ifndef TERN_REWARD_H
#define TERN_REWARD_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most named components one result may carry. */
#define TERN_REWARD_MAX_COMPONENTS 8
/* Bytes of tern_reward_result.reason, the terminating NUL included. */
#define TERN_REWARD_REASON_MAX 160
/* The largest |reward| the core takes: beyond it (1e308, say) a batch's sums
 * and squares would overflow its figures, so the response gets no verdict
 * ("nonfinite"). Far above any reward in use; it may grow, never shrink. */
#define TERN_REWARD_MAGNITUDE_MAX 1e9

/* Why a response got no verdict (tern_reward_result.failure, ABI 1.10), as
 * the metrics count it: reward/failed/<name> with the names in comments. */
typedef enum tern_reward_failure {
    TERN_REWARD_OK = 0,    /* "ok": judged, the result holds the verdict */
    TERN_REWARD_ERROR,     /* "error": the plugin could not judge it (a user
                              function raised; score() returned a failure) */
    TERN_REWARD_NONFINITE, /* "nonfinite": the reward was NaN, infinite or beyond
                              ±TERN_REWARD_MAGNITUDE_MAX (the core) */
    TERN_REWARD_CRASH,     /* "crash": what judges it died (a worker, a child process) */
    TERN_REWARD_TIMEOUT,   /* "timeout": no verdict in time */
    TERN_REWARD_GARBAGE,   /* "garbage": what judges it answered something malformed */
    TERN_REWARD_START      /* "start": what judges it could not be (re)started */
} tern_reward_failure;

/* One response to score. */
typedef struct tern_reward_item {
    size_t size;            /* sizeof(tern_reward_item) as built by the core */
    const tern_task *task;  /* the task the response answers */
    const char *response;   /* the response text (UTF-8, not validated), NUL-terminated */
    size_t response_len;    /* its length in bytes, without the NUL */
    uint32_t response_tokens; /* its length in tokens (for length penalties) */
} tern_reward_item;

/* A named part of a reward; the name is a static string owned by the plugin. */
typedef struct tern_reward_component {
    const char *name; /* [a-z0-9_]+, e.g. "accuracy" */
    double value;
} tern_reward_component;

/* The verdict on one response, filled by the plugin. The core zeroes it and
 * sets `size` before the call. */
typedef struct tern_reward_result {
    size_t size;     /* sizeof(tern_reward_result) as built by the core */
    double reward;   /* the scalar reward (finite; NaN/inf are scored as failed) */
    uint32_t n_components;
    tern_reward_component components[TERN_REWARD_MAX_COMPONENTS];
    char reason[TERN_REWARD_REASON_MAX]; /* e.g. "extracted 41, expected 42" */

    /* ---- Added in ABI 1.10 (write it only if TERN_HAS(result, failure)) -- */

    /* TERN_REWARD_OK (the core zeroes it), or a tern_reward_failure saying
     * why this response got no verdict, with `reason` saying it for a user:
     * the response scores 0, counts as failed and is kept in the run's
     * reward_failures.jsonl, while the other results of the call stand. */
    uint32_t failure;
} tern_reward_result;

typedef struct tern_reward_ops {
    size_t size; /* sizeof(tern_reward_ops) as built */

    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);

    /* Score items[0..n) into results[0..n). TERN_OK when every result was
     * written, even if some responses were judged wrong or malformed. */
    int (*score)(void *state, const tern_reward_item *items, tern_reward_result *results,
                 size_t n);
} tern_reward_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_REWARD_H */
