/* chat_suffix.h: what a chat template adds for the turns after an
 * assistant's, so they can be appended to the ids a model sampled instead of
 * rendering the conversation again (docs/agents.md, "Templates and token
 * exactness"; docs/serve.md, "Workflows"). */
#ifndef TERN_MODEL_CHAT_SUFFIX_H
#define TERN_MODEL_CHAT_SUFFIX_H

#include <stddef.h>
#include <stdint.h>

/* a[0..na) is a template's rendering of some turns ending with the
 * generation prompt of an assistant turn, b[0..nb) its rendering of the same
 * turns, that assistant turn and more: the ids b has after a, past the first
 * end-of-turn token `eos` (the assistant turn's end), as our own array of *n
 * (+1) ids. TERN_EUNSUPPORTED with a message naming `who` and `what` (the
 * turns appended: "observations", "tool results") when a is not b's prefix
 * (the template is not prefix-stable) or no eos follows it; TERN_ENOMEM.
 * a and b stay the caller's. */
int tern_chat_suffix(const int32_t *a, size_t na, const int32_t *b, size_t nb, int32_t eos,
                     const char *who, const char *what, int32_t **ids, size_t *n);

#endif
