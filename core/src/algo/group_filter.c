/* group_filter.c: DAPO's dynamic sampling (see group_filter.h). */
#include "algo/group_filter.h"

void tern_group_filter_init(tern_group_filter *f, uint32_t per_step, uint32_t max_batches)
{
    *f = (tern_group_filter){.per_step = per_step ? per_step : 1,
                             .max_batches = max_batches ? max_batches : 1};
}

int tern_group_has_signal(const double *rewards, size_t G)
{
    for (size_t j = 1; j < G; j++)
        if (rewards[j] != rewards[0])
            return 1;
    return 0;
}

int tern_group_filter_judge(tern_group_filter *f, const double *rewards, size_t G,
                            int *over_budget)
{
    *over_budget = 0;
    f->seen++;
    int keep = tern_group_has_signal(rewards, G);
    if (!keep && f->seen > (uint64_t)f->max_batches * f->per_step) {
        keep = 1; /* the budget is spent: fill the step with what comes */
        *over_budget = 1;
        f->kept_equal++;
    }
    if (!keep) {
        f->filtered++;
        return 0;
    }
    if (++f->kept == f->per_step) { /* the step is full: the next one starts */
        f->kept = 0;
        f->seen = 0;
    }
    return 1;
}
