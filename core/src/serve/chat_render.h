/* chat_render.h: a chat request's conversation as the model's own template
 * renders it (docs/serve.md). */
#ifndef TERN_SERVE_CHAT_RENDER_H
#define TERN_SERVE_CHAT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "serve/serve_request.h"

/* The ids of `messages` (compact JSON, as tern_serve_request holds them)
 * with the function schemas `tools` (NULL: none), ending with the
 * generation prompt: the model's JSON template, or for a model with only a
 * text template, its rendering of `plain` messages (system, user and
 * assistant text). *ids our own. 0, or -1 with the client's error in e. */
int tern_serve_render_chat(const tern_model *m, const char *messages, int plain,
                           const char *tools, int32_t **ids, size_t *n, tern_serve_error *e);

/* The text that starts a turn calling function `name` (NULL: a call of any
 * function), as the model's template writes calls: `messages` rendered
 * (ids[0..n), the generation prompt) and then again with an assistant turn
 * calling `name` (or the first of tools) with no arguments; what the second
 * adds is the template's call, and its text up to the arguments (a named
 * function) or up to the name (any) is the opening a forced call starts
 * from, "<tool_call>\n{\"name\": \"" for Hermes, "{\"name\": \"" for Llama
 * 3.1; *open_ids[0..*n_open) its tokens (the template's own as far as they
 * lie within it, then the rest tokenized). Both our own. 0, or -1 with the
 * client's error in e (a template that is not prefix-stable there, or
 * writes no name). */
int tern_serve_call_opening(const tern_model *m, const char *messages, const char *tools,
                            const char *name, const int32_t *ids, size_t n, char **opening,
                            int32_t **open_ids, size_t *n_open, tern_serve_error *e);

#endif
