/* run_checks.c: checks of the tasks against the model (see run_checks.h). */
#include "loop/run_checks.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "data/task.h"
#include "loop/run.h"

int tern_check_prompt_lengths(const tern_model *m, const char *system_prompt,
                              const tern_task_set *set, tern_diag *d)
{
    tern_special_tokens sp;
    int rc = tern_model_special(m, "model: the context length", &sp);
    if (rc == TERN_EUNSUPPORTED || (rc == TERN_OK && sp.context_len <= 0))
        return TERN_OK; /* the model does not say: its own op refuses at run time */
    if (rc != TERN_OK)
        return rc;
    size_t too_long = 0;
    for (size_t i = 0; i < set->n; i++) {
        const tern_task *t = set->tasks[i];
        /* the prompt as the master deals it: strings as they are, numbers as JSON */
        const char *text = tern_task_string(t, "prompt");
        char *owned = text ? NULL : tern_task_json(t, "prompt");
        if (!text && !owned)
            return tern_errorf(TERN_ENOMEM, "out of memory");
        const char *system = tern_task_string(t, "system");
        int32_t *ids = NULL;
        size_t n = 0;
        rc = tern_run_prompt(m, "check", system ? system : system_prompt, text ? text : owned,
                             &ids, &n);
        free(owned);
        free(ids);
        if (rc != TERN_OK)
            return rc;
        if (n < (size_t)sp.context_len)
            continue;
        if (too_long++ < 5) {
            char id[128];
            tern_diag_addf(d, "%s:%zu: task %s: the prompt is %zu tokens as the model formats "
                           "it; the model's context holds %d, prompt and response together: "
                           "shorten the prompt, or use a model with a longer context",
                           set->path, tern_task_line(t), tern_task_id_text(t, id, sizeof id), n,
                           sp.context_len);
        }
    }
    if (too_long > 5)
        tern_diag_addf(d, "%s: %zu tasks in all have a prompt too long for the model's context "
                       "of %d tokens", set->path, too_long, sp.context_len);
    return too_long ? TERN_ECONFIG : TERN_OK;
}
