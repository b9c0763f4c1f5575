/* suggest.c: nearest-name suggestions by edit distance (see suggest.h). */
#include "config/suggest.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SUGGEST_MAX_LEN 64 /* longer words are compared on their first 64 bytes */

size_t tern_edit_distance(const char *a, const char *b)
{
    size_t n = strnlen(a, SUGGEST_MAX_LEN), m = strnlen(b, SUGGEST_MAX_LEN);
    /* d[i][j]: distance between a[0..i) and b[0..j) */
    size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t cost = ca != cb;
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

void tern_suggest_init(tern_suggest *s, const char *word)
{
    s->word = word;
    s->best = NULL;
    s->best_dist = SIZE_MAX;
}

void tern_suggest_offer(tern_suggest *s, const char *spelling, const char *name)
{
    size_t dist = tern_edit_distance(s->word, spelling);
    if (dist < s->best_dist) {
        s->best_dist = dist;
        s->best = name;
    }
}

/* Offers each '|'-separated spelling in `list` as `name`; with `name` NULL
 * each spelling is offered as a name of its own. */
static void each_spelling(tern_suggest *s, const char *list, const char *name)
{
    while (list && *list) {
        const char *bar = strchr(list, '|');
        size_t len = bar ? (size_t)(bar - list) : strlen(list);
        char spelling[SUGGEST_MAX_LEN + 1];
        if (len > SUGGEST_MAX_LEN)
            len = SUGGEST_MAX_LEN;
        memcpy(spelling, list, len);
        spelling[len] = '\0';
        if (name) {
            tern_suggest_offer(s, spelling, name);
        } else {
            size_t dist = tern_edit_distance(s->word, spelling);
            if (dist < s->best_dist) {
                s->best_dist = dist;
                memcpy(s->own, spelling, len + 1);
                s->best = s->own;
            }
        }
        list = bar ? bar + 1 : NULL;
    }
}

void tern_suggest_offer_akas(tern_suggest *s, const char *name, const char *akas)
{
    tern_suggest_offer(s, name, name);
    each_spelling(s, akas, name);
}

void tern_suggest_offer_choices(tern_suggest *s, const char *choices)
{
    each_spelling(s, choices, NULL);
}

const char *tern_suggest_best(const tern_suggest *s)
{
    /* A likely typo: about one edit per three characters, at least one. */
    size_t len = strnlen(s->word, SUGGEST_MAX_LEN);
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    if (s->best && s->best_dist <= limit && strcmp(s->word, s->best) != 0)
        return s->best;
    return NULL;
}
