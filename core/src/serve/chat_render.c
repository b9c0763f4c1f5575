/* chat_render.c: a conversation rendered by the model's chat template (see
 * chat_render.h). */
#include "serve/chat_render.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

/* messages with an assistant turn calling `name` with no arguments, compact
 * JSON (malloc'd), NULL when out of memory. */
static char *with_call(const char *messages, const char *name)
{
    json_t *msgs = json_loads(messages, 0, NULL);
    json_t *turn = json_pack("{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:{}}}]}", "role", "assistant",
                             "content", "tool_calls", "id", "call_0", "type", "function",
                             "function", "name", name, "arguments");
    char *out = NULL;
    if (msgs && turn && json_array_append(msgs, turn) == 0)
        out = json_dumps(msgs, JSON_COMPACT);
    json_decref(msgs), json_decref(turn);
    return out;
}

int tern_serve_call_opening(const tern_model *m, const char *messages, const char *tools,
                            const char *name, const int32_t *ids, size_t n, char **opening,
                            int32_t **open_ids, size_t *n_open, tern_serve_error *e)
{
    *opening = NULL, *open_ids = NULL, *n_open = 0;
    json_t *fns = json_loads(tools, 0, NULL);
    const char *fn = name ? name
                          : json_string_value(json_object_get(
                                json_object_get(json_array_get(fns, 0), "function"), "name"));
    char *msgs = fn ? with_call(messages, fn) : NULL;
    int32_t *all = NULL;
    size_t na = 0;
    char *text = NULL;
    int rc = msgs ? TERN_OK : tern_errorf(TERN_ENOMEM, "out of memory");
    if (rc == TERN_OK)
        rc = tern_model_chat_json(m, "the model's chat template", msgs, tools, &all, &na);
    if (rc == TERN_OK && (na <= n || memcmp(all, ids, n * sizeof *ids) != 0))
        rc = tern_errorf(TERN_EUNSUPPORTED, "its template renders the conversation differently "
                         "once the assistant's call follows it (not prefix-stable)");
    if (rc == TERN_OK)
        rc = tern_model_text(m, "the template's call", all + n, na - n, &text, NULL);
    /* the name as the call writes it, and what comes after it */
    size_t fl = fn ? strlen(fn) : 0;
    const char *at = NULL;
    for (const char *p = text; rc == TERN_OK && p && (p = strstr(p, fn)); p += fl)
        if (p > text && p[-1] == '"' && p[fl] == '"') {
            at = p;
            break;
        }
    const char *args = at ? strstr(at + fl, "{}") : NULL;
    if (rc == TERN_OK && (!at || (name && !args)))
        rc = tern_errorf(TERN_EUNSUPPORTED, "its template writes a call without its name and "
                         "arguments as JSON (%.80s)", text ? text : "");
    /* the opening's ids: the template's own tokens while they lie within it
     * (a tag stays the one token the template wrote), then the rest of its
     * text tokenized */
    const size_t keep = rc != TERN_OK ? 0 : name ? (size_t)(args - text) : (size_t)(at - text);
    size_t whole = 0, whole_bytes = 0;
    for (size_t i = 1; rc == TERN_OK && n + i <= na; i++) {
        char *piece = NULL;
        size_t pl = 0;
        rc = tern_model_text(m, "the template's call", all + n, i, &piece, &pl);
        int inside = rc == TERN_OK && pl <= keep && memcmp(piece, text, pl) == 0;
        free(piece);
        if (!inside)
            break;
        whole = i, whole_bytes = pl;
    }
    int32_t *rest = NULL;
    size_t nr = 0;
    if (rc == TERN_OK && keep > whole_bytes)
        rc = tern_model_tokenize(m, "the call's opening", text + whole_bytes, keep - whole_bytes,
                                 0, &rest, &nr);
    if (rc == TERN_OK) {
        *opening = strndup(text, keep);
        *open_ids = malloc((whole + nr + 1) * sizeof **open_ids);
        if (!*opening || !*open_ids) {
            free(*opening), free(*open_ids);
            *opening = NULL, *open_ids = NULL;
            rc = tern_errorf(TERN_ENOMEM, "out of memory");
        } else {
            memcpy(*open_ids, all + n, whole * sizeof **open_ids);
            if (nr) /* the opening ends at a token's end: nothing tokenized */
                memcpy(*open_ids + whole, rest, nr * sizeof **open_ids);
            *n_open = whole + nr;
        }
    }
    free(rest);
    json_decref(fns);
    free(msgs), free(all), free(text);
    if (rc == TERN_OK)
        return 0;
    return tern_serve_fail(e, rc == TERN_ENOMEM ? 500 : 400,
                           rc == TERN_ENOMEM ? "server_error" : "invalid_request_error",
                           "tool_choice", rc == TERN_ENOMEM ? NULL : "unsupported_parameter",
                           "tern serve starts a forced call with the opening of the model's own "
                           "call format, and cannot for this model: %s. Use tool_choice "
                           "\"auto\"", tern_error_message());
}
