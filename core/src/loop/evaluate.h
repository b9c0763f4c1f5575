/* evaluate.h: greedy accuracy on the eval split, run by the master on its
 * own model instance (the evaluator) loaded with a snapshot the trainer sent,
 * so that evaluation sees exactly the weights of one version. */
#ifndef TERN_LOOP_EVALUATE_H
#define TERN_LOOP_EVALUATE_H

#include <jansson.h>

#include "loop/run.h"

typedef struct tern_eval_result {
    double accuracy;        /* fraction of the evaluated tasks answered right */
    size_t tasks;
    double mean_length;     /* response tokens */
    double seconds;
    json_t *per_domain;     /* {"math": 0.42, ...}; owned (json_decref) */
} tern_eval_result;

/* Load `w` into the evaluator and evaluate. TERN_OK or a status with a message. */
int tern_evaluate(tern_run *run, const tern_snapshot *w, tern_eval_result *out);

#endif
