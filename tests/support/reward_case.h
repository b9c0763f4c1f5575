/* reward_case.h: the small steps of reward plugin tests (test_math_reward,
 * test_k12_reward, test_vision_reward, test_code_reward): a task from JSON,
 * one response scored through an instance opened with harness_open(), a
 * named component, a long hostile response, a scoring thread. Each fails the
 * calling test on error. */
#ifndef TERN_TEST_REWARD_CASE_H
#define TERN_TEST_REWARD_CASE_H

#include <stddef.h>

#include "harness.h"
#include "data/task.h"
#include "tern/reward.h"

/* The task parsed from `json` (free it with tern_task_free). */
tern_task *reward_task_of(const char *json);
/* Score response[0..len) alone. The bytes are copied into a heap block of
 * exactly len bytes with no NUL after them, so AddressSanitizer catches any
 * read past response_len. */
tern_reward_result reward_score_bytes(const harness *h, const tern_task *task,
                                      const char *response, size_t len);
/* The value of component `name` (the test fails if there is none). */
double reward_component(const tern_reward_result *r, const char *name);
/* `unit` repeated to n bytes (rounded down to whole units), then `tail`;
 * *len is the length. Free the result. */
char *reward_repeat(const char *unit, size_t n, const char *tail, size_t *len);

/* One thread of a concurrency test: scores items[0..n) into results[0..n)
 * `rounds` times over (results reset each round), stopping at the first
 * failing status, which is left in rc. Start it with
 * pthread_create(..., reward_worker_run, &w). */
typedef struct reward_worker {
    const harness *h;
    tern_reward_item *items;
    tern_reward_result *results;
    size_t n;
    int rounds;
    int rc;
} reward_worker;
void *reward_worker_run(void *arg);

#endif
