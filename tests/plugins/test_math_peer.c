/* test_math_peer.c: the `math` reward against a peer verifier, class by
 * class (docs/rewards.md, "math: against math-verify"). tests/corpora/
 * math_peer.jsonl holds tern's own cases, each with Hugging Face
 * math-verify's verdict (written by tests/ref/math_peer_ref.py); a case
 * where tern's documented policy differs carries "policy", the verdict tern
 * gives instead, and "why". The test judges every case with the default
 * settings, prints the agreement per class, and fails when a class falls
 * below its floor (what it agrees on now), or when a policy case is judged
 * otherwise than its policy. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reward_case.h"
#include "data/task.h"
#include "tern/reward.h"

#define CORPUS TERN_TEST_SOURCE_DIR "/tests/corpora/math_peer.jsonl"

/* The agreement each class keeps at least, in percent of its cases that
 * have no policy of their own. Raise a floor when a class gets better. */
static const struct {
    const char *name;
    double floor;
} classes[] = {
    {"finding", 100},  {"equals", 94},   {"relations", 100}, {"matrices", 100},
    {"tuples", 100},   {"numbers", 100}, {"sets", 100},      {"fractions", 100},
    {"percent", 100},  {"expressions", 100},
};
#define N_CLASSES (sizeof classes / sizeof classes[0])

Test(math_peer, agreement_with_math_verify_by_class, .timeout = 120)
{
    harness h;
    cr_assert_eq(harness_open(&h, "math", TERN_KIND_REWARD, ""), TERN_OK, "%s", h.error);
    FILE *f = fopen(CORPUS, "r");
    cr_assert_not_null(f, "cannot read %s", CORPUS);
    size_t cases[N_CLASSES] = {0}, agree[N_CLASSES] = {0}, policy[N_CLASSES] = {0};
    size_t total = 0, total_agree = 0, line_no = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        line_no++;
        json_error_t e;
        json_t *c = json_loads(line, 0, &e);
        cr_assert_not_null(c, "%s:%zu: %s", CORPUS, line_no, e.text);
        const char *cls = json_string_value(json_object_get(c, "class"));
        const char *response = json_string_value(json_object_get(c, "response"));
        json_t *peer = json_object_get(c, "peer"), *pol = json_object_get(c, "policy");
        size_t k = 0;
        while (k < N_CLASSES && (!cls || strcmp(classes[k].name, cls) != 0))
            k++;
        cr_assert(k < N_CLASSES && response && json_is_integer(peer), "%s:%zu: a case needs a "
                  "known class, a response and the peer's verdict", CORPUS, line_no);
        json_t *task_json = json_pack("{s:O}", "answer", json_object_get(c, "answer"));
        char *task_text = json_dumps(task_json, JSON_COMPACT);
        tern_task *t = reward_task_of(task_text);
        tern_reward_result r = reward_score_bytes(&h, t, response, strlen(response));
        const int ours = r.reward > 0.5;
        if (pol) {
            policy[k]++;
            cr_expect_eq(ours, (int)json_integer_value(pol), "%s:%zu (%s): policy %d, judged %d: "
                         "%s", CORPUS, line_no, cls, (int)json_integer_value(pol), ours, r.reason);
        } else {
            cases[k]++, total++;
            agree[k] += ours == json_integer_value(peer);
            total_agree += ours == json_integer_value(peer);
            if (ours != json_integer_value(peer))
                printf("math_peer: %s: differs from the peer (%d, tern %d): gold %s, response "
                       "%.120s; %s\n", cls, (int)json_integer_value(peer), ours,
                       json_string_value(json_object_get(c, "answer")), response, r.reason);
        }
        tern_task_free(t);
        free(task_text);
        json_decref(task_json), json_decref(c);
    }
    fclose(f);
    printf("math_peer: agreement with math-verify by class (cases without a policy of tern's "
           "own)\n");
    for (size_t k = 0; k < N_CLASSES; k++) {
        double pct = cases[k] ? 100.0 * (double)agree[k] / (double)cases[k] : 100.0;
        printf("math_peer:   %-12s %3zu/%3zu  %5.1f%%  (+%zu by policy)\n", classes[k].name,
               agree[k], cases[k], pct, policy[k]);
        cr_expect_gt(cases[k], 0, "class %s has no cases", classes[k].name);
        cr_expect_geq(pct, classes[k].floor, "class %s: %.1f%% agreement, its floor is %.1f%%",
                      classes[k].name, pct, classes[k].floor);
    }
    printf("math_peer:   %-12s %3zu/%3zu  %5.1f%%\n", "all", total_agree, total,
           total ? 100.0 * (double)total_agree / (double)total : 100.0);
    cr_assert_geq(total, 100, "the corpus has %zu cases", total);
    harness_close(&h);
}
