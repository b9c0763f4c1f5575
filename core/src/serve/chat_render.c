/* chat_render.c: a conversation rendered by the model's chat template (see
 * chat_render.h). */
#include "serve/chat_render.h"

#include <jansson.h>
#include <stdlib.h>

#include "base/errmsg.h"

/* The conversation as tern_chat_message for a model without JSON templates. */
static int chat_turns(const tern_model *m, const char *messages, int32_t **ids, size_t *n)
{
    json_t *msgs = json_loads(messages, 0, NULL);
    size_t k = json_array_size(msgs);
    tern_chat_message *cm = calloc(k ? k : 1, sizeof *cm);
    int rc = msgs && cm ? TERN_OK : tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; rc == TERN_OK && i < k; i++) {
        json_t *o = json_array_get(msgs, i);
        cm[i] = (tern_chat_message){.size = sizeof cm[i],
                                    .role = json_string_value(json_object_get(o, "role")),
                                    .content = json_string_value(json_object_get(o, "content"))};
    }
    if (rc == TERN_OK)
        rc = tern_model_chat_turns(m, "the model cannot render the messages", cm, k, ids, n);
    free(cm);
    json_decref(msgs);
    return rc;
}

int tern_serve_render_chat(const tern_model *m, const char *messages, int plain,
                           const char *tools, int32_t **ids, size_t *n, tern_serve_error *e)
{
    int rc = TERN_EUNSUPPORTED;
    *ids = NULL, *n = 0;
    if (tern_model_has_chat_json(m)) {
        rc = tern_model_chat_json(m, "the model's chat template", messages, tools, ids, n);
        if (rc != TERN_OK && rc != TERN_EUNSUPPORTED)
            return tern_serve_fail(e, 400, "invalid_request_error", "messages", NULL, "%s",
                                   tern_error_message());
    }
    if (rc == TERN_EUNSUPPORTED && plain && tern_model_has_chat(m))
        rc = chat_turns(m, messages, ids, n);
    else if (rc == TERN_EUNSUPPORTED)
        return tern_serve_fail(
            e, 400, "invalid_request_error", tools ? "tools" : "messages", NULL,
            "this model's chat template %s: use /v1/completions, or a model whose "
            "tokenizer_config.json has a chat_template",
            tern_model_has_chat(m) ? "renders only system, user and assistant text (no tools, "
                                     "tool calls or tool messages)"
                                   : "is missing (it has none)");
    if (rc != TERN_OK)
        return tern_serve_fail(e, 400, "invalid_request_error", "messages", NULL, "%s",
                               tern_error_message());
    return 0;
}
