/* chat_prompt.h: a prompt as the model's chat template sees it, shared by
 * `tern run` (loop/messages.c) and `tern generate --chat` (cmd_model.c). */
#ifndef TERN_CHAT_PROMPT_H
#define TERN_CHAT_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "tern/model.h"

/* Call ops->encode_chat (which must exist) with an optional system turn
 * (NULL: none) and `prompt` as the user turn. *ids is the model's buffer
 * (free it with ops->free_buffer); the plugin's status, with its message. */
int tern_chat_encode(const tern_model_ops *ops, void *state, const char *system,
                     const char *prompt, int32_t **ids, size_t *n);

#endif
