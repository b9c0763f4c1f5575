/* test_ledger.c: the consumption ledger (core/src/loop/ledger.c): the
 * watermark moves past a batch only once every group of it is consumed,
 * groups above it are kept one by one, pending ids are kept in order until
 * committed, and a checkpoint's JSON reads back the same ledger. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"

#include "loop/ledger.h"

Test(ledger, the_watermark_passes_a_batch_only_when_all_its_groups_are_consumed)
{
    tern_ledger l;
    tern_ledger_init(&l, 4);
    uint64_t first3[] = {0, 1, 2}; /* batch 0 but its last group */
    cr_assert_eq(tern_ledger_consume(&l, first3, 3), TERN_OK);
    cr_expect_eq(l.from, 0, "batch 0 has group 3 left");
    cr_expect(tern_ledger_consumed(&l, 2) && !tern_ledger_consumed(&l, 3));
    cr_expect_eq(tern_ledger_above(&l), 3);
    uint64_t later[] = {9, 5}; /* batch 2 group 1, batch 1 group 1: out of order */
    cr_assert_eq(tern_ledger_consume(&l, later, 2), TERN_OK);
    cr_expect_eq(l.from, 0);
    uint64_t last[] = {3};
    cr_assert_eq(tern_ledger_consume(&l, last, 1), TERN_OK);
    cr_expect_eq(l.from, 1, "batch 0 whole: the watermark moves to batch 1");
    cr_expect_eq(tern_ledger_above(&l), 2, "groups 5 and 9 stay counted above it");
    cr_expect(tern_ledger_consumed(&l, 0) && tern_ledger_consumed(&l, 5) &&
              tern_ledger_consumed(&l, 9) && !tern_ledger_consumed(&l, 4) &&
              !tern_ledger_consumed(&l, 8) && !tern_ledger_consumed(&l, 1000));
    uint64_t again[] = {5};
    cr_assert_eq(tern_ledger_consume(&l, again, 1), TERN_OK);
    cr_expect_eq(tern_ledger_above(&l), 2, "a group consumed again counts once");
    cr_expect_eq(l.n_pending, 7, "every id consumed is pending, in order");
    cr_expect(l.pending[0] == 0 && l.pending[3] == 9 && l.pending[5] == 3 && l.pending[6] == 5);
    tern_ledger_committed(&l);
    cr_expect_eq(l.n_pending, 0);
    tern_ledger_free(&l);
}

Test(ledger, a_checkpoint_reads_back_the_same_ledger)
{
    tern_ledger l, r;
    tern_ledger_init(&l, 4);
    tern_ledger_init(&r, 4);
    uint64_t ids[] = {0, 1, 2, 3, 4, 6, 13};
    cr_assert_eq(tern_ledger_consume(&l, ids, 7), TERN_OK);
    json_t *j = tern_ledger_to_json(&l);
    cr_assert_not_null(j);
    cr_expect_eq(json_integer_value(json_object_get(j, "from")), 1);
    cr_expect_eq(json_array_size(json_object_get(j, "consumed")), 3, "4, 6 and 13");
    cr_expect_eq(json_array_size(json_object_get(j, "uncommitted")), 7);
    cr_assert_eq(tern_ledger_from_json(&r, j, 0, "ckpt"), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(r.from, 1);
    cr_expect_eq(tern_ledger_above(&r), 3);
    for (uint64_t id = 0; id < 20; id++)
        cr_expect_eq(tern_ledger_consumed(&r, id), tern_ledger_consumed(&l, id), "id %llu",
                     (unsigned long long)id);
    cr_expect_eq(r.n_pending, 7, "the uncommitted ids come back, for the resume to commit");
    json_decref(j);
    /* none: a fixed schedule's position */
    cr_assert_eq(tern_ledger_from_json(&r, NULL, 5, "ckpt"), TERN_OK);
    cr_expect(r.from == 5 && tern_ledger_above(&r) == 0 && r.n_pending == 0);
    /* malformed: refused with the checkpoint named */
    json_t *bad = json_pack("{s:s}", "from", "x");
    cr_expect_eq(tern_ledger_from_json(&r, bad, 0, "runs/x/checkpoints/step-4"), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "runs/x/checkpoints/step-4/state.json"), "%s",
              tern_error_message());
    json_decref(bad);
    tern_ledger_free(&l);
    tern_ledger_free(&r);
}

Test(ledger, held_ids_are_looked_up)
{
    tern_ledger l;
    tern_ledger_init(&l, 4);
    uint64_t *held = malloc(3 * sizeof *held);
    held[0] = 17, held[1] = 2, held[2] = 9;
    tern_ledger_set_held(&l, held, 3);
    cr_expect(tern_ledger_held(&l, 2) && tern_ledger_held(&l, 9) && tern_ledger_held(&l, 17));
    cr_expect(!tern_ledger_held(&l, 3) && !tern_ledger_held(&l, 0));
    tern_ledger_free(&l);
}
