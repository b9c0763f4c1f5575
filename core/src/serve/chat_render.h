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

#endif
