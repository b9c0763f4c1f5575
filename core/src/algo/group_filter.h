/* group_filter.h: DAPO's dynamic sampling (Yu et al. 2025, §3.2): a group
 * whose G rewards are all equal has every advantage 0 under GRPO (and RLOO,
 * and Dr. GRPO), so it adds nothing to the gradient but dilutes the batch.
 * Such groups are dropped before they reach the buffer, and the explorers
 * generate stand-ins until a step's `per_step` groups all carry a signal:
 *
 *   keep(g)  <=>  max_j r_gj != min_j r_gj
 *
 * A step examines at most max_batches * per_step groups: past that budget
 * (tasks all solved, or all failed) the filter keeps what comes, equal or
 * not, until the step is full, so a run never deals forever. The groups are
 * judged in the order they reach the buffer, which fills the steps in that
 * order (FIFO); with a replay buffer the budget is per per_step groups kept.
 */
#ifndef TERN_ALGO_GROUP_FILTER_H
#define TERN_ALGO_GROUP_FILTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct tern_group_filter {
    uint32_t per_step;    /* groups a step trains on (explorer.batch_tasks), >= 1 */
    uint32_t max_batches; /* the budget: groups examined per step <= max_batches * per_step */
    uint32_t kept;        /* groups kept toward the step being filled, < per_step */
    uint64_t seen;        /* groups examined for it */
    uint64_t filtered;    /* dropped, in all */
    uint64_t kept_equal;  /* kept with equal rewards because the budget ran out, in all */
} tern_group_filter;

/* A filter for steps of `per_step` groups and a budget of `max_batches`
 * (both >= 1; 0 is taken as 1). */
void tern_group_filter_init(tern_group_filter *f, uint32_t per_step, uint32_t max_batches);

/* 1 when the G rewards are not all equal (the group has a signal). NaN
 * rewards never reach here (a reward that is not finite is a failure). */
int tern_group_has_signal(const double *rewards, size_t G);

/* Judge the next group: 1 keep it, 0 drop it (counted in f->filtered).
 * *over_budget is set to 1 when it is kept with equal rewards because the
 * step's budget ran out, else 0. */
int tern_group_filter_judge(tern_group_filter *f, const double *rewards, size_t G,
                            int *over_budget);

#endif
