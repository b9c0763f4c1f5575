/* chat_suffix.c: the ids a chat template adds after an assistant turn (see
 * chat_suffix.h). */
#include "model/chat_suffix.h"

#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

int tern_chat_suffix(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t eos,
                     const char *who, const char *what, int32_t **ids, size_t *n)
{
    *ids = NULL, *n = 0;
    if (nb < na || memcmp(a, b, na * sizeof *a) != 0)
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model's chat template renders the turns "
                           "before an assistant's differently once more turns follow (it is "
                           "not prefix-stable), so %s cannot be appended token for token", who,
                           what);
    size_t p = na;
    while (p < nb && b[p] != eos)
        p++;
    if (p >= nb)
        return tern_errorf(TERN_EUNSUPPORTED, "%s: the model's chat template closes an "
                           "assistant turn without its end-of-turn token (id %d): %s cannot be "
                           "appended after the model's turns", who, eos, what);
    *n = nb - p - 1;
    if (!(*ids = malloc((*n ? *n : 1) * sizeof **ids))) {
        *n = 0;
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", who);
    }
    memcpy(*ids, b + p + 1, *n * sizeof **ids);
    return TERN_OK;
}
