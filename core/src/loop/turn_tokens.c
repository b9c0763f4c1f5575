/* turn_tokens.c: the tokens a trajectory's chat turns are made of, from
 * the model's own template (see turn_tokens.h). */
#include "loop/turn_tokens.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "loop/run.h"
#include "model/chat_suffix.h"

/* What b adds after a and the assistant's end-of-turn token (a and b freed). */
static int tokens_after(int32_t *a, size_t na, int32_t *b, size_t nb, int32_t eos,
                        const char *what, int32_t **ids, size_t *n)
{
    int rc = tern_chat_suffix(a, na, b, nb, eos, "explorer", what, ids, n);
    free(a);
    free(b);
    return rc;
}

int tern_observation_tokens(const tern_model *m, int32_t eos, const char *system,
                            const char *observation, int32_t **ids, size_t *n)
{
    tern_chat_message msgs[4];
    size_t k = 0;
    if (system)
        msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "system",
                                        .content = system};
    msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "user", .content = "x"};
    size_t before = k;
    msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "assistant", .content = "ok"};
    msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "user",
                                    .content = observation};
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    *ids = NULL, *n = 0;
    int rc = tern_model_chat_turns(m, "explorer: the chat template", msgs, before, &a, &na);
    if (rc == TERN_OK)
        rc = tern_model_chat_turns(m, "explorer: the chat template", msgs, k, &b, &nb);
    if (rc != TERN_OK) {
        free(a), free(b);
        return rc;
    }
    return tokens_after(a, na, b, nb, eos, "observations", ids, n);
}

/* The tokens the template puts after an assistant turn's end-of-turn token
 * for the messages `after` (a JSON array: tool turns), rendered with the
 * model's own template as tern_observation_tokens renders a user turn. */
static int turn_tokens_json(const tern_model *m, int32_t eos, const char *system,
                            json_t *after, int32_t **ids, size_t *n)
{
    const char *what = "explorer: the chat template (tool turns)";
    json_t *msgs = json_array();
    if (msgs && system)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", system));
    if (msgs)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", "x"));
    char *before = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
    if (msgs) {
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "assistant", "content", "ok"));
        json_array_extend(msgs, after);
    }
    char *all = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
    json_decref(msgs);
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    *ids = NULL, *n = 0;
    int rc = before && all ? TERN_OK : tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    if (rc == TERN_OK)
        rc = tern_model_chat_json(m, what, before, NULL, &a, &na);
    if (rc == TERN_OK)
        rc = tern_model_chat_json(m, what, all, NULL, &b, &nb);
    free(before), free(all);
    if (rc != TERN_OK) {
        free(a), free(b);
        return rc;
    }
    return tokens_after(a, na, b, nb, eos, "tool results", ids, n);
}

int tern_tool_turn_tokens(const tern_model *m, int32_t eos, const char *system,
                          const char *const *names, const char *const *outputs, size_t k,
                          int32_t **ids, size_t *n)
{
    json_t *after = json_array();
    for (size_t i = 0; after && i < k; i++)
        if (json_array_append_new(after, json_pack("{s:s, s:s, s:s}", "role", "tool", "name",
                                                   names[i], "content", outputs[i])) != 0) {
            json_decref(after);
            after = NULL;
        }
    if (!after) {
        *ids = NULL, *n = 0;
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    }
    int rc = turn_tokens_json(m, eos, system, after, ids, n);
    json_decref(after);
    return rc;
}

int tern_traj_prompt(const tern_run *run, const tern_model *m, const char *system,
                     const char *prompt, int32_t **ids, size_t *n)
{
    const tern_toolbox *box = &run->tools;
    if (box->n == 0)
        return tern_run_prompt(m, "explorer", system, prompt, NULL, ids, n);
    if (box->system_block) { /* no tool block in the template: tern's, in the system turn */
        size_t len = (system ? strlen(system) + 2 : 0) + strlen(box->system_block) + 1;
        char *sys = malloc(len);
        if (!sys)
            return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
        snprintf(sys, len, "%s%s%s", system ? system : "", system ? "\n\n" : "",
                 box->system_block);
        int rc = tern_run_prompt(m, "explorer", sys, prompt, NULL, ids, n);
        free(sys);
        return rc;
    }
    json_t *msgs = json_array();
    if (msgs && system)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", system));
    if (msgs)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", prompt));
    char *text = msgs ? json_dumps(msgs, JSON_COMPACT) : NULL;
    json_decref(msgs);
    if (!text)
        return tern_errorf(TERN_ENOMEM, "explorer: out of memory");
    int rc = tern_model_chat_json(m, "explorer: format the prompt with the chat template and "
                                  "the tools", text, box->schemas, ids, n);
    free(text);
    return rc;
}
