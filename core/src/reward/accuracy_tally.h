/* accuracy_tally.h: which responses count as right, per domain, for the
 * evaluation and a step's figures (docs/rewards.md, "Accuracy").
 *
 * A response is right only when a reward plugin says so with an "accuracy"
 * component of at least 0.5. A domain has an accuracy when some response in
 * it carried the component: its other responses (failed, or without one)
 * count wrong. A domain where none did (a reward that gives a bare number,
 * a partial credit) has no accuracy at all: a reward above 0 is not an answer
 * counted right. */
#ifndef TERN_REWARD_ACCURACY_TALLY_H
#define TERN_REWARD_ACCURACY_TALLY_H

#include <jansson.h>
#include <stddef.h>

#include "experience/experience.h"

/* Counts by domain ({"math": n, ...}); "" is the domain of tasks without
 * one (in the totals, never in the per-domain figures). */
typedef struct tern_accuracy_tally {
    json_t *right, *judged, *total;
} tern_accuracy_tally;

/* 0, or -1 when out of memory (the tally is then empty and safe to free). */
int tern_accuracy_tally_init(tern_accuracy_tally *t);
void tern_accuracy_tally_free(tern_accuracy_tally *t);

/* One response of `domain` (NULL: ""): judged when it carried an
 * "accuracy" component, right when judged and its accuracy is 1. */
void tern_accuracy_tally_add(tern_accuracy_tally *t, const char *domain, int judged, int right);

/* Whether a response's components include "accuracy". */
int tern_parts_judged(const tern_reward_part *parts, uint32_t n_parts);

/* The fraction right over the responses of the domains that have an
 * accuracy, or -1 when none has; *judged (may be NULL) gets how many
 * responses those domains hold. per_domain (may be NULL) gets "domain":
 * fraction for each named domain that has an accuracy, `prefix` before each
 * key (NULL: none). Returns -2 when out of memory. */
double tern_accuracy_tally_result(const tern_accuracy_tally *t, json_t *per_domain,
                                  const char *prefix, size_t *judged);

#endif
