/* messages.c: freeing the messages of run.h, failure reports, seeds and
 * checkpoint names shared by the roles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "loop/run.h"
#include "tern/rng.h"

static void free_strings(char **s, uint32_t n)
{
    for (uint32_t i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

void tern_msg_free(void *msg)
{
    if (!msg)
        return;
    switch (*(tern_msg_kind *)msg) {
    case TERN_MSG_EXPLORE: {
        tern_explore_job *j = msg;
        free(j->task_index);
        free_strings(j->prompt, j->n);
        break;
    }
    case TERN_MSG_SFT_BATCH: {
        tern_sft_job *j = msg;
        free_strings(j->prompt, j->n);
        free_strings(j->answer, j->n);
        break;
    }
    case TERN_MSG_ROLLOUT: {
        tern_rollout_msg *r = msg;
        for (uint32_t i = 0; r->prompt_tokens && i < r->n; i++)
            free(r->prompt_tokens[i]);
        for (size_t i = 0; r->resp && i < (size_t)r->n * r->group_size; i++) {
            free(r->resp[i].tokens);
            free(r->resp[i].logp);
            free(r->resp[i].text);
        }
        free(r->prompt_tokens);
        free(r->prompt_len);
        free(r->task_index);
        free(r->resp);
        break;
    }
    default: {
        tern_step_msg *s = msg;
        tern_snapshot_free(s->eval);
        free(s->saved);
        free(s->error);
        break;
    }
    }
    free(msg);
}

void tern_report_failure(tern_run *run, const char *role, int status)
{
    atomic_store(&run->failed, 1);
    tern_step_msg *m = calloc(1, sizeof *m);
    const char *text = tern_error_message();
    if (m) {
        m->kind = TERN_MSG_FAILED;
        m->role = role;
        m->status = status;
        m->error = strdup(*text ? text : "failed without a message (a bug)");
        if (tern_queue_push(&run->inbox, m) == TERN_OK)
            return;
        tern_msg_free(m);
    }
    /* nobody can be told: the master sees run->failed when it next looks */
    fprintf(stderr, "tern: %s: %s\n", role, *text ? text : "failed");
}

uint64_t tern_run_seed(const tern_run *run, const char *stream, uint64_t a, uint64_t b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)stream; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    uint64_t x = run->seed ^ h;
    uint64_t s = tern_splitmix64(&x);
    x = s ^ (a * 0x9e3779b97f4a7c15ull);
    s = tern_splitmix64(&x);
    x = s ^ (b * 0xc2b2ae3d27d4eb4full);
    return tern_splitmix64(&x);
}

void tern_checkpoint_dir(const tern_run *run, int64_t sft_step, int64_t step, int temporary,
                         char *buf, size_t n)
{
    if (step > 0 || sft_step < 0)
        snprintf(buf, n, "%s/checkpoints/step-%lld%s", run->dir, (long long)step,
                 temporary ? ".tmp" : "");
    else
        snprintf(buf, n, "%s/checkpoints/sft-%lld%s", run->dir, (long long)sft_step,
                 temporary ? ".tmp" : "");
}
