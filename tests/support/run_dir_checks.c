/* run_dir_checks.c: see run_dir_checks.h. */
#include "run_dir_checks.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

void check_steps_once(const char *dir, int steps)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    json_t *lines = json_lines(path, "reward_mean");
    int *seen = calloc((size_t)steps + 1, sizeof *seen), batch_seen[4096] = {0};
    cr_assert_not_null(seen);
    size_t i;
    json_t *o;
    json_array_foreach(lines, i, o) {
        long step = (long)json_integer_value(json_object_get(o, "step"));
        long batch = (long)json_integer_value(json_object_get(o, "batch"));
        cr_assert(step >= 1 && step <= steps && batch >= 0 && batch < 4096,
                  "%s: step %ld batch %ld", dir, step, batch);
        seen[step]++;
        cr_expect_eq(++batch_seen[batch], 1, "%s: batch %ld trained twice", dir, batch);
    }
    for (int s = 1; s <= steps; s++)
        cr_expect_eq(seen[s], 1, "%s: step %d appears %d times", dir, s, seen[s]);
    free(seen);
    json_decref(lines);
}

int is_timing_figure(const char *key)
{
    size_t n = strlen(key);
    return strncmp(key, "wait_s/", 7) == 0 || (n > 6 && strcmp(key + n - 6, "_per_s") == 0) ||
           strcmp(key, "eval/seconds") == 0 || strcmp(key, "wall_seconds") == 0 ||
           strcmp(key, "buffer_size") == 0;
}
