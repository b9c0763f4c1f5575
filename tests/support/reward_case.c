/* reward_case.c: see reward_case.h. */
#include "reward_case.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

tern_task *reward_task_of(const char *json)
{
    tern_task *t = NULL;
    int rc = tern_task_parse(json, strlen(json), "test", &t);
    cr_assert_eq(rc, TERN_OK, "task %s: %s", json, tern_error_message());
    return t;
}

tern_reward_result reward_score_bytes(const harness *h, const tern_task *task,
                                      const char *response, size_t len)
{
    const tern_reward_ops *ops = harness_ops(h);
    char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, response, len);
    tern_reward_item item = {.size = sizeof item, .task = task, .response = copy,
                             .response_len = len};
    tern_reward_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    cr_assert_eq(ops->score(h->state, &item, &r, 1), TERN_OK, "%s", tern_error_message());
    free(copy);
    return r;
}

double reward_component(const tern_reward_result *r, const char *name)
{
    for (uint32_t i = 0; i < r->n_components; i++)
        if (strcmp(r->components[i].name, name) == 0)
            return r->components[i].value;
    cr_assert_fail("no component '%s' in the result (%u components)", name, r->n_components);
    return -1;
}

char *reward_repeat(const char *unit, size_t n, const char *tail, size_t *len)
{
    size_t u = strlen(unit), t = strlen(tail);
    n -= n % u;
    char *s = malloc(n + t + 1);
    cr_assert_not_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = unit[i % u];
    memcpy(s + n, tail, t + 1);
    *len = n + t;
    return s;
}

void *reward_worker_run(void *arg)
{
    reward_worker *w = arg;
    const tern_reward_ops *ops = harness_ops(w->h);
    for (int round = 0; round < w->rounds && w->rc == TERN_OK; round++) {
        for (size_t i = 0; i < w->n; i++) {
            memset(&w->results[i], 0, sizeof w->results[i]);
            w->results[i].size = sizeof w->results[i];
        }
        w->rc = ops->score(w->h->state, w->items, w->results, w->n);
    }
    return NULL;
}
