/* exec_engine.h: what the `exec` and `python` reward plugins share: a
 * long-lived command (exec_child.h) that judges responses over the line
 * protocol (exec_protocol.h), one verdict line per request line, in order,
 * supervised as an isolated reward worker is. A batch's requests are sent
 * while its verdicts are read (exec_child_pump); each verdict must come
 * within the reply timeout of the one before it. A command that dies, runs
 * past that timeout or answers garbage costs the response it was judging
 * (result.failure: crash, timeout, garbage) and is started again for the
 * rest of the batch, whose requests are sent again; three deaths in a row
 * without a verdict between them fail the rest of the batch ("start")
 * rather than restart it for every response. */
#ifndef TERN_EXEC_ENGINE_H
#define TERN_EXEC_ENGINE_H

#include <stdint.h>

#include "exec_child.h"
#include "exec_protocol.h"
#include "tern/host.h"
#include "tern/reward.h"

#define EXEC_MAX_ARGS 64

typedef struct exec_engine {
    const tern_host *host;
    tern_ctx *ctx;
    char *argv[EXEC_MAX_ARGS + 1]; /* owned, NULL-terminated */
    char *dir;                     /* where the command runs */
    int64_t timeout_ms;            /* per response; 0 none */
    /* the command says {"ready": true} once it has loaded (python), or gives
     * {"error": ...} and exits when it cannot, within ready_ms (a start, a
     * restart); 0: no such line (exec) */
    int64_t ready_ms;
    exec_child child;
    exec_names names;
    int deaths; /* in a row, without a verdict between them */
} exec_engine;

/* Start the command argv (copied) in `dir` (copied); ready_ms as in
 * exec_engine. TERN_OK, or
 * host->setting_error() on `key` saying why it cannot start (a config
 * problem: TERN_ECONFIG). exec_engine_free() is needed whatever the result. */
int exec_engine_start(exec_engine *e, const tern_host *host, tern_ctx *ctx,
                      const char *const *argv, const char *dir, int64_t timeout_ms,
                      int64_t ready_ms, const char *key);

/* The reward ops' score(): a verdict or a failure for every item. TERN_OK,
 * or TERN_ENOMEM / TERN_EINVAL (a core older than ABI 1.10) via host->fail. */
int exec_engine_score(exec_engine *e, const tern_reward_item *items, tern_reward_result *results,
                      size_t n);

/* Ask the command to finish, then kill it; free everything. */
void exec_engine_free(exec_engine *e);

#endif
