/* test_accuracy_tally.c: what counts as right (reward/accuracy_tally.h):
 * only an "accuracy" component says so; a domain where no response carried
 * one has no accuracy; in a domain that has one, a response without it
 * (failed) counts wrong; with no domain judged there is no accuracy at all. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "reward/accuracy_tally.h"

Test(accuracy_tally, only_judged_domains_count)
{
    tern_accuracy_tally t;
    cr_assert_eq(tern_accuracy_tally_init(&t), 0);
    /* math: 3 judged (2 right), 1 failed without the component: 2 of 4 */
    tern_accuracy_tally_add(&t, "math", 1, 1);
    tern_accuracy_tally_add(&t, "math", 1, 1);
    tern_accuracy_tally_add(&t, "math", 1, 0);
    tern_accuracy_tally_add(&t, "math", 0, 1); /* "right" without a verdict is not */
    /* style: partial credits only, never judged */
    tern_accuracy_tally_add(&t, "style", 0, 1);
    tern_accuracy_tally_add(&t, "style", 0, 1);
    json_t *per = json_object();
    size_t judged = 0;
    double acc = tern_accuracy_tally_result(&t, per, "accuracy/", &judged);
    cr_expect_float_eq(acc, 0.5, 1e-12);
    cr_expect_eq(judged, 4);
    cr_expect_float_eq(json_real_value(json_object_get(per, "accuracy/math")), 0.5, 1e-12);
    cr_expect_null(json_object_get(per, "accuracy/style"), "a domain nobody judges");
    cr_expect_eq(json_object_size(per), 1);
    json_decref(per);
    tern_accuracy_tally_free(&t);
}

Test(accuracy_tally, nothing_judged_is_no_accuracy)
{
    tern_accuracy_tally t;
    cr_assert_eq(tern_accuracy_tally_init(&t), 0);
    tern_accuracy_tally_add(&t, "math", 0, 1);
    tern_accuracy_tally_add(&t, NULL, 0, 1);
    size_t judged = 7;
    cr_expect_eq(tern_accuracy_tally_result(&t, NULL, NULL, &judged), -1);
    cr_expect_eq(judged, 0);
    tern_accuracy_tally_free(&t);
    tern_accuracy_tally_free(&t); /* twice is harmless */
}

Test(accuracy_tally, tasks_without_a_domain_count_in_the_whole_only)
{
    tern_accuracy_tally t;
    cr_assert_eq(tern_accuracy_tally_init(&t), 0);
    tern_accuracy_tally_add(&t, NULL, 1, 1);
    tern_accuracy_tally_add(&t, "", 1, 0);
    json_t *per = json_object();
    cr_expect_float_eq(tern_accuracy_tally_result(&t, per, NULL, NULL), 0.5, 1e-12);
    cr_expect_eq(json_object_size(per), 0, "no accuracy/ figure for the empty domain");
    json_decref(per);
    tern_accuracy_tally_free(&t);
}

Test(accuracy_tally, judged_is_the_accuracy_component)
{
    tern_reward_part with[2] = {{"format", 1}, {"accuracy", 0}}, without[1] = {{"format", 1}};
    cr_expect(tern_parts_judged(with, 2));
    cr_expect_not(tern_parts_judged(without, 1));
    cr_expect_not(tern_parts_judged(NULL, 0));
}
