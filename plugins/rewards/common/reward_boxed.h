/* reward_boxed.h: the last balanced \boxed{X} of a response, as the math and
 * k12 plugins find it; each says which command opens a box (math also takes
 * \fbox) and what of X is an answer. Header-only (static inline), like
 * reward_text.h, so that each plugin stays one self-contained shared object. */
#ifndef TERN_REWARD_BOXED_H
#define TERN_REWARD_BOXED_H

#include <stddef.h>

/* The '}' matching the '{' at s[open]; the caller knows there is one. */
static inline size_t reward_matching_brace(const char *s, size_t len, size_t open)
{
    size_t depth = 0;
    for (size_t i = open; i < len; i++) {
        if (s[i] == '{')
            depth++;
        else if (s[i] == '}' && --depth == 0)
            return i;
    }
    return len; /* not reached */
}

/* Scanning backwards, a '{' is balanced exactly when some '}' to its right is
 * still unmatched, so one counter finds the last balanced \boxed{ with no
 * stack, and only that one is then matched forwards: linear in len even for
 * a megabyte of unclosed "\boxed{". An empty box holds no braces, so skipping
 * it costs only its own bytes.
 *
 * For each balanced '{' at s[i], last first, that opens(s, i) says is a
 * box's: take(out, s, i + 1, e) with s[e] its matching '}'. Returns 1 as soon
 * as take() does (it has set *out), else 0. */
static inline int reward_find_boxed(const char *s, size_t len,
                                    int (*opens)(const char *s, size_t i),
                                    int (*take)(void *out, const char *s, size_t b, size_t e),
                                    void *out)
{
    size_t unmatched = 0; /* '}' to the right of i that no '{' has claimed */
    for (size_t i = len; i-- > 0;) {
        if (s[i] == '}') {
            unmatched++;
            continue;
        }
        if (s[i] != '{' || unmatched == 0)
            continue;
        unmatched--;
        if (opens(s, i) && take(out, s, i + 1, reward_matching_brace(s, len, i)))
            return 1;
    }
    return 0;
}

#endif
