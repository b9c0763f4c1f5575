/* worker.h: a reward plugin run in a supervised worker process (a route with
 * `isolate = true`, docs/rewards.md "Isolation").
 *
 * The worker is a fork of tern that creates its own instance of the plugin
 * and scores the responses it is sent, one score() call per response, so
 * that a crash or a hang is pinned on the response that caused it. The
 * parent sends each batch whole over a socket and reads the verdicts back
 * one at a time, each within the timeout. When the worker dies or runs out
 * of time, that response is scored as failed, the worker is killed and
 * started again, and the rest of the batch goes to the new one. */
#ifndef TERN_REWARD_WORKER_H
#define TERN_REWARD_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "tern/host.h"
#include "tern/reward.h"

/* tern_reward_failure (why a response got no verdict) is the SDK's, tern/reward.h. */

/* Whether name[0..len) is a component name the core keeps: [a-z0-9_]+, at
 * most TERN_EXPERIENCE_NAME_MAX (64) bytes. */
int tern_reward_name_ok(const char *name, size_t len);

/* A plugin's result.failure as a tern_reward_failure: an unknown value is
 * TERN_REWARD_ERROR. */
tern_reward_failure tern_reward_failure_of(uint32_t value);

/* The metric-friendly name of a failure ("crash", "timeout", ...). */
const char *tern_reward_failure_name(tern_reward_failure f);

typedef struct tern_reward_worker tern_reward_worker;

/* Fork a worker for the plugin `ops` with the instance context `ctx` (its
 * settings) and wait for its create() to return. TERN_OK with *out set, or
 * the failure with a message naming `label` (create() failed in the worker:
 * its message; fork failed: the reason). */
int tern_reward_worker_start(tern_reward_worker **out, const tern_reward_ops *ops, tern_ctx *ctx,
                             const char *label);

/* Score items[0..n) into res[0..n) (zeroed, size set by the caller);
 * fail[i] gets TERN_REWARD_OK or why item i has no verdict, with res[i].reason
 * saying it for a user. `timeout_ms` > 0 bounds each response. A dead worker
 * is restarted; *restarts counts the restarts. Component names in res point
 * into the worker and stay valid until tern_reward_worker_stop(). Returns
 * TERN_OK, or TERN_ENOMEM. Not thread-safe: one caller at a time. */
int tern_reward_worker_score(tern_reward_worker *w, const tern_reward_item *items,
                             tern_reward_result *res, tern_reward_failure *fail, size_t n,
                             int64_t timeout_ms, uint64_t *restarts);

/* The worker's process id (0 when it is down), for tests and logs. */
long tern_reward_worker_pid(const tern_reward_worker *w);

/* Ask the worker to finish (it calls destroy()), wait up to a second, then
 * kill it; free everything. NULL is fine. */
void tern_reward_worker_stop(tern_reward_worker *w);

#endif
