/*
 * tern/environment.h: the ops table of an environment plugin
 * (TERN_KIND_ENVIRONMENT, ABI 1.13): what the policy talks to for many
 * turns before a trajectory ends (docs/agents.md).
 *
 * A run with an `environment` section samples trajectories, not single
 * answers. For each of a task's G trajectories the explorer opens an
 * episode with reset(task), which gives the first observation (the user
 * turn the model answers first; NULL or "" keeps the task's prompt). Then,
 * turn after turn: the model writes its turn, the explorer hands it to
 * step(), and the environment answers an observation (the next user turn),
 * a reward for that turn and whether the episode is done. The trajectory
 * ends when step() says done, when the turns reach the run's max_turns,
 * when the context is full, or when the environment fails; close() then
 * frees the episode. The trajectory's return is the sum of its turns'
 * rewards (plus any `rewards` section's verdict on the final turn), and
 * advantages compare the G returns of one task.
 *
 * Episodes: one instance serves many episodes at once (an explorer keeps a
 * whole batch's trajectories in flight); each has its own handle, made by
 * reset() and freed by close(). Strings the plugin hands back (observation,
 * reason) are owned by the plugin and stay valid until the next call on the
 * same episode.
 *
 * Failure: an episode the environment cannot go on with (its code raised,
 * crashed, hung, answered garbage, was stepped after done) is not an error of
 * the call: the op returns TERN_OK with out->failure set and a reason, that one
 * trajectory ends there, it is kept in reward_failures.jsonl, and the run goes
 * on. Return a failure status only when the plugin itself is broken (out of
 * memory, its worker cannot be started at all); the explorer then fails.
 *
 * Thread-safety: without TERN_CAP_THREAD_SAFE the core never calls ops on one
 * instance concurrently.
 */
#ifndef TERN_ENVIRONMENT_H
#define TERN_ENVIRONMENT_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"
#include "tool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most turns of the model one trajectory may have (the environment
 * slot's max_turns is at most this). */
#define TERN_ENV_MAX_TURNS 1024
/* Bytes of tern_env_result.reason, the terminating NUL included. */
#define TERN_ENV_REASON_MAX 160
/* The most bytes of one observation the core takes; a longer one ends the
 * episode as garbage (a runaway tool output belongs truncated by the tool). */
#define TERN_ENV_OBSERVATION_MAX (1u << 20)

/* Why an episode ended (tern_env_result.failure), as reward_failures.jsonl
 * and the metrics (env/failed/<name>) name it. */
typedef enum tern_env_failure {
    TERN_ENV_OK = 0,         /* "ok": the call answered */
    TERN_ENV_ERROR = 1,      /* "error": the environment's code raised */
    TERN_ENV_CRASH = 2,      /* "crash": its process died */
    TERN_ENV_TIMEOUT = 3,    /* "timeout": no answer within its timeout */
    TERN_ENV_GARBAGE = 4,    /* "garbage": an answer of the wrong shape or type, a
                                NaN or infinite reward, an observation too long */
    TERN_ENV_AFTER_DONE = 5, /* "after_done": stepped after it said done (a plugin
                                that keeps its own turns reports it; the core never
                                steps a done episode) */
    TERN_ENV_START = 6       /* "start": what runs it could not be (re)started */
} tern_env_failure;

/* Why a trajectory ended, as the experience records it (docs/buffers.md). */
typedef enum tern_traj_end {
    TERN_END_ANSWER = 0,    /* one answer, no environment */
    TERN_END_DONE = 1,      /* the environment said done */
    TERN_END_MAX_TURNS = 2, /* the environment's max_turns were used up */
    TERN_END_CONTEXT = 3,   /* no room left in the model's context for another turn */
    TERN_END_FAILED = 4     /* the environment failed (a tern_env_failure says how) */
} tern_traj_end;
#define TERN_END_LAST TERN_END_FAILED

/* What reset() and step() answer. The core zeroes it and sets `size`. */
typedef struct tern_env_result {
    size_t size;             /* sizeof(tern_env_result) as built by the core */
    /* The next user turn's text (UTF-8, NUL-terminated), owned by the plugin
     * until its next call on this episode; NULL: none (step: the episode
     * must be done; reset: the task's prompt is the first turn). */
    const char *observation;
    double reward;           /* this turn's reward (finite); reset: unused */
    int done;                /* 1: the episode is over (step only) */
    uint32_t failure;        /* TERN_ENV_OK, or a tern_env_failure: the episode ends */
    char reason[TERN_ENV_REASON_MAX]; /* why it is done, or what failed (may be "") */
} tern_env_result;

/* The model's turn, handed to step(). */
typedef struct tern_env_action {
    size_t size;             /* sizeof(tern_env_action) as built by the core */
    const char *text;        /* the turn's text, end-of-turn token removed, NUL-terminated */
    size_t text_len;         /* its bytes without the NUL */
    const int32_t *tokens;   /* the turn's token ids as sampled (end-of-turn included) */
    size_t n_tokens;
    uint32_t turn;           /* 1 for the model's first turn */
} tern_env_action;

typedef struct tern_environment_ops {
    size_t size; /* sizeof(tern_environment_ops) as built */

    /* Make an instance from the settings in ctx (host->get_*). On failure a
     * status after host->fail(); *state is then unused. */
    int (*create)(tern_ctx *ctx, void **state);
    /* Free the instance; every episode was closed before. */
    void (*destroy)(void *state);

    /* Begin an episode of `task` (valid until close): *episode gets its
     * handle, *out the first observation (or a failure, then *episode is
     * still closed with close()). `seed`: the episode's own seed (same run
     * seed, same episode: same seed), for an environment that draws. */
    int (*reset)(void *state, const tern_task *task, uint64_t seed, void **episode,
                 tern_env_result *out);
    /* The model's turn `action` on the episode: *out the answer. */
    int (*step)(void *state, void *episode, const tern_env_action *action,
                tern_env_result *out);
    /* End the episode, done or not, and free it. */
    void (*close)(void *state, void *episode);

    /* ---- appended in ABI 1.14 (check TERN_HAS(ops, call_tool)) ---- */

    /* The environment's own tools (docs/agents.md, "Tools"), which the
     * model may call in its turns beside the run's tool plugins: *schemas
     * a JSON array of function schemas in tern/tool.h describe()'s form,
     * owned by the instance until destroy; NULL or "[]" for none. Optional
     * (NULL): none. */
    int (*tools)(void *state, const char **schemas);
    /* One call of one of them on an episode (between its reset and close;
     * the tool may read and change the episode's state), as
     * tern_tool_ops.call answers it: TERN_OK with out filled (a call that
     * cannot be made, because the episode's worker died, is
     * TERN_TOOL_FAILED with the reason), a failure status only when the
     * plugin itself is broken. Required when tools() gives any. */
    int (*call_tool)(void *state, void *episode, const tern_tool_call *call,
                     tern_tool_result *out);
} tern_environment_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_ENVIRONMENT_H */
