/* rewarder.h: the master's reward routing (DESIGN.md §2): each response goes
 * to the reward plugins configured for its task's domain; its reward is the
 * weighted sum of theirs, its accuracy the "accuracy" component of the first
 * of them that gives one (else: reward > 0). */
#ifndef TERN_LOOP_REWARDER_H
#define TERN_LOOP_REWARDER_H

#include <stddef.h>
#include <stdint.h>

#include "experience/experience.h"
#include "loop/run.h"

typedef struct tern_verdict {
    double reward;
    double accuracy; /* 1 right, 0 wrong */
    int failed;      /* the plugin failed or gave a non-finite reward: scored 0 */
    /* the named components the plugins gave (finite values, in route order;
     * the first TERN_EXPERIENCE_MAX_PARTS), as the experience keeps them */
    uint32_t n_parts;
    char part_name[TERN_EXPERIENCE_MAX_PARTS][TERN_EXPERIENCE_NAME_MAX + 1];
    double part_value[TERN_EXPERIENCE_MAX_PARTS];
} tern_verdict;

/* Build run->routes from the session's reward instances. */
int tern_rewards_route(tern_run *run);
/* Check that every domain of `set` has a route: TERN_ECONFIG naming the
 * domain, how many tasks have it, and the fix. */
int tern_rewards_check_domains(const tern_run *run, const tern_task_set *set);
/* Score n responses. texts[i] answers tasks[i]; ntok[i] is its token count.
 * A failing plugin does not fail the call: its items are scored 0 and
 * marked failed (and counted in *failures). With `observe`, each named
 * component a plugin gives is observed there as "reward/<name>" (the step's
 * metrics line gets their means). Each verdict keeps the components too.
 * TERN_ENOMEM only. */
int tern_rewards_score(tern_run *run, const tern_task *const *tasks, const char *const *texts,
                       const uint32_t *ntok, size_t n, tern_verdict *out, uint64_t *failures,
                       tern_metrics *observe);

#endif
