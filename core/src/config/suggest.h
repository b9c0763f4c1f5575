/* suggest.h: "did you mean ...?" for mistyped keys, plugin names and choices,
 * and for the tern command's commands (cli/main.c). */
#ifndef TERN_SUGGEST_H
#define TERN_SUGGEST_H

#include <stddef.h>

#include "base/export.h"

/* Optimal string alignment distance (insertions, deletions, substitutions
 * and adjacent transpositions), ASCII case-insensitive. */
TERN_INTERNAL size_t tern_edit_distance(const char *a, const char *b);

/* Finds the candidate nearest to `word`. Call tern_suggest_offer() for each
 * spelling (the name itself and its aka spellings), then tern_suggest_best(). */
typedef struct tern_suggest {
    const char *word;
    const char *best;  /* the name suggested */
    size_t best_dist;
    char own[65];      /* holds `best` when it came from tern_suggest_offer_choices */
} tern_suggest;

TERN_INTERNAL void tern_suggest_init(tern_suggest *s, const char *word);
/* Offer `name`, reached through `spelling` (== name, or one of its akas). */
TERN_INTERNAL void tern_suggest_offer(tern_suggest *s, const char *spelling, const char *name);
/* Offer `name` and each '|'-separated spelling in `akas` (may be NULL). */
TERN_INTERNAL void tern_suggest_offer_akas(tern_suggest *s, const char *name, const char *akas);
/* Offer each '|'-separated value of `choices` as a name of its own. */
TERN_INTERNAL void tern_suggest_offer_choices(tern_suggest *s, const char *choices);
/* The nearest name if it is close enough to be a likely typo, else NULL. */
TERN_INTERNAL const char *tern_suggest_best(const tern_suggest *s);

#endif
