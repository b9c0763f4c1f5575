/* evaluate.h: greedy accuracy and mean reward on the eval split, run by the
 * master on its own model instance (the evaluator) loaded with a snapshot the
 * trainer sent, so that evaluation sees exactly the weights of one version.
 * A response is right only when a reward plugin says so with an "accuracy"
 * component; the domains whose rewards give none have a mean reward and no
 * accuracy (docs/rewards.md, "Accuracy"). */
#ifndef TERN_LOOP_EVALUATE_H
#define TERN_LOOP_EVALUATE_H

#include <jansson.h>

#include "loop/run.h"

typedef struct tern_eval_result {
    /* fraction of the judged tasks answered right; -1 when no task was
     * judged (no reward of theirs gave an "accuracy" component) */
    double accuracy;
    size_t tasks;
    size_t judged_tasks;    /* the tasks of the domains that have an accuracy */
    double reward_mean;     /* over every evaluated task */
    double mean_length;     /* response tokens */
    double seconds;
    json_t *per_domain;     /* {"math": 0.42, ...}, domains with an accuracy; owned (json_decref) */
    /* each task's response and verdict, in task order: {"task", "domain",
     * "prompt", "answer" (when the task has one), "response", "tokens",
     * "finish", "reward", "right" (true, false, or null where no reward gave
     * an "accuracy"), "reason", "failure" (when it got no verdict)}; owned */
    json_t *responses;
} tern_eval_result;

/* Load `w` into the evaluator and evaluate. TERN_OK or a status with a message. */
int tern_evaluate(tern_run *run, const tern_snapshot *w, tern_eval_result *out);

#endif
