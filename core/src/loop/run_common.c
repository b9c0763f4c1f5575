/* run_common.c: what the roles share beside the queues: failure reports,
 * the clock, seeds, checkpoint names, and a task's prompt as the model sees
 * it (its image placeholder included). Model calls go through the proxy
 * (model/model.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "image/task_image.h"
#include "loop/run.h"
#include "tern/rng.h"

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

double tern_run_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

uint64_t tern_run_unix_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int tern_role_failed(int rc, const char *role, const char *what)
{
    const char *m = tern_error_message();
    return tern_errorf(rc < 0 ? rc : TERN_ERR, "%s: %s: %s", role, what,
                       *m ? m : "the plugin gave no reason (a bug in the plugin)");
}

int tern_run_prompt(const tern_model *m, const char *role, const char *system,
                    const char *prompt, const char *placeholder, int32_t **ids, size_t *n)
{
    char what[96];
    if (!tern_model_has_chat(m) && system)
        return tern_errorf(TERN_EINVAL, "%s: a system turn is given (data.system_prompt or "
                           "a task's \"system\") but the model plugin has no chat template "
                           "op (encode_chat, ABI 1.4): remove it or use a model with one",
                           role);
    int oom = 0;
    char *marked = placeholder ? tern_prompt_with_placeholder(system, prompt, placeholder, &oom)
                               : NULL;
    if (oom)
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", role);
    const char *text = marked ? marked : prompt;
    int rc;
    if (!tern_model_has_chat(m)) {
        snprintf(what, sizeof what, "%s: tokenize", role);
        rc = tern_model_tokenize(m, what, text, strlen(text), 1, ids, n);
    } else {
        snprintf(what, sizeof what, "%s: format the prompt with the chat template", role);
        rc = tern_model_chat(m, what, system, text, ids, n);
    }
    free(marked);
    return rc;
}

const char *tern_run_placeholder(const tern_run *run, int has_image)
{
    return has_image && run->reads_images ? run->image_spec.placeholder : NULL;
}

const char *tern_task_system(const tern_run *run, const tern_task *t)
{
    const char *s = tern_task_string(t, "system");
    return s ? s : run->set.system_prompt;
}
