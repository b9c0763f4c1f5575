/* chat_prompt.c: tern_chat_encode (see chat_prompt.h). */
#include "chat_prompt.h"

#include "errmsg.h"

int tern_chat_encode(const tern_model_ops *ops, void *state, const char *system,
                     const char *prompt, int32_t **ids, size_t *n)
{
    tern_chat_message msgs[2];
    size_t k = 0;
    if (system)
        msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "system",
                                        .content = system};
    msgs[k++] = (tern_chat_message){.size = sizeof msgs[0], .role = "user", .content = prompt};
    *ids = NULL;
    *n = 0;
    tern_error_clear();
    return ops->encode_chat(state, msgs, k, ids, n, NULL, NULL);
}
