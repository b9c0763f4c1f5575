/* accuracy_tally.c: right answers per domain (see accuracy_tally.h). */
#include "reward/accuracy_tally.h"

#include <stdio.h>
#include <string.h>

int tern_accuracy_tally_init(tern_accuracy_tally *t)
{
    t->right = json_object();
    t->judged = json_object();
    t->total = json_object();
    if (t->right && t->judged && t->total)
        return 0;
    tern_accuracy_tally_free(t);
    return -1;
}

void tern_accuracy_tally_free(tern_accuracy_tally *t)
{
    json_decref(t->right);
    json_decref(t->judged);
    json_decref(t->total);
    t->right = t->judged = t->total = NULL;
}

static void count_in(json_t *counts, const char *dom, int add)
{
    json_object_set_new(counts, dom,
                        json_integer(json_integer_value(json_object_get(counts, dom)) + add));
}

void tern_accuracy_tally_add(tern_accuracy_tally *t, const char *domain, int judged, int right)
{
    const char *dom = domain ? domain : "";
    count_in(t->right, dom, judged && right);
    count_in(t->judged, dom, judged != 0);
    count_in(t->total, dom, 1);
}

int tern_parts_judged(const tern_reward_part *parts, uint32_t n_parts)
{
    for (uint32_t c = 0; c < n_parts; c++)
        if (parts[c].name && strcmp(parts[c].name, "accuracy") == 0)
            return 1;
    return 0;
}

double tern_accuracy_tally_result(const tern_accuracy_tally *t, json_t *per_domain,
                                  const char *prefix, size_t *judged)
{
    size_t right = 0, held = 0;
    const char *dom;
    json_t *total;
    json_object_foreach(t->total, dom, total) {
        if (json_integer_value(json_object_get(t->judged, dom)) == 0)
            continue; /* no reward here says what is right */
        json_int_t r = json_integer_value(json_object_get(t->right, dom));
        right += (size_t)r;
        held += (size_t)json_integer_value(total);
        if (!per_domain || !*dom)
            continue;
        char key[160];
        snprintf(key, sizeof key, "%s%s", prefix ? prefix : "", dom);
        if (json_object_set_new(per_domain, key,
                                json_real((double)r / (double)json_integer_value(total))) != 0)
            return -2;
    }
    if (judged)
        *judged = held;
    return held ? (double)right / (double)held : -1;
}
