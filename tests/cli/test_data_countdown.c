/* test_data_countdown.c: `tern data countdown` end to end, as a user runs it:
 * the files it writes, that every task's own answer is judged right by the
 * `countdown` reward, that no puzzle repeats and eval is held out, the same
 * bytes from the same seed, and bad flags. (Overwriting and OUT_DIR are the
 * code `tern data arith` shares, tested in test_data_cli.c.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR

Test(data_countdown, writes_puzzles_whose_answers_the_reward_accepts, .timeout = 60)
{
    result r;
    static char text[1 << 16];
    run(&r, "rm -rf dcd && %s data countdown --seed 3 --train 60 --eval 9 --count 4 --max 9 "
        "--ops '+-*/' dcd", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect(strstr(r.out, "dcd/countdown-train.jsonl: 60 tasks\n"), "%s", r.out);
    cr_expect(strstr(r.out, "dcd/countdown-eval.jsonl: 9 tasks, held out"), "%s", r.out);
    cr_expect(strstr(r.out, "4 numbers from 1..9, ops +-*/, seed 3"), "%s", r.out);
    slurp(WORK "/dcd/countdown-train.jsonl", text, sizeof text);
    cr_expect_eq(count_lines(text), 60);
    cr_expect(strncmp(text, "{\"id\":\"countdown-train-00001\",\"domain\":\"countdown\","
                            "\"prompt\":\"", 61) == 0, "%.200s", text);
    /* each task's answer, given as the response, is right: 69 verdicts of 1 */
    run(&r, "cat dcd/countdown-train.jsonl dcd/countdown-eval.jsonl | "
        "sed -E 's/\"answer\":\"([^\"]*)\"}$/\"answer\":\"\\1\",\"response\":\"\\1\"}/' | "
        "%s reward score --plugin countdown > dcd/verdicts && "
        "grep -c '\"accuracy\":1.0' dcd/verdicts", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "69\n", "every answer is a solution");
    /* a puzzle (its prompt: sorted numbers and target) never repeats, and no
     * eval puzzle is in train */
    run(&r, "cat dcd/*.jsonl | sed -E 's/.*\"prompt\":\"([^\"]*)\".*/\\1/' | sort | uniq -d | "
        "wc -l");
    cr_expect_str_eq(r.out, "0\n", "distinct puzzles");
    /* the same seed and flags give the same bytes; another seed other ones */
    run(&r, "rm -rf dcd2 dcd3 && %s data countdown --seed 3 --train 60 --eval 9 --count 4 "
        "--max 9 --ops '+-*/' dcd2 >/dev/null && %s data countdown --seed 4 --train 60 "
        "--eval 9 --count 4 --max 9 --ops '+-*/' dcd3 >/dev/null && "
        "cmp dcd/countdown-train.jsonl dcd2/countdown-train.jsonl && "
        "cmp dcd/countdown-eval.jsonl dcd2/countdown-eval.jsonl && "
        "! cmp -s dcd/countdown-train.jsonl dcd3/countdown-train.jsonl && echo same", TERN, TERN);
    cr_expect_str_eq(r.out, "same\n", "%s", r.err);
    /* --answers: the first A training tasks keep their answer, the rest have ""
     * (eval keeps all); the puzzles are the same as without it */
    run(&r, "rm -rf dcd5 && %s data countdown --seed 3 --train 60 --eval 9 --count 4 --max 9 "
        "--ops '+-*/' --answers 7 dcd5", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "the first 7 training tasks carry their answer (the warm-up's), the "
                            "other 53 have \"answer\":\"\" (for RL alone)"), "%s", r.out);
    run(&r, "grep -c '\"answer\":\"\"}' dcd5/countdown-train.jsonl; "
        "grep -c '\"answer\":\"\"}' dcd5/countdown-eval.jsonl; "
        "head -7 dcd/countdown-train.jsonl > dcd5/a && head -7 dcd5/countdown-train.jsonl | "
        "cmp - dcd5/a && sed -E 's/\"answer\":\"[^\"]*\"//' dcd/countdown-train.jsonl > dcd5/b "
        "&& sed -E 's/\"answer\":\"[^\"]*\"//' dcd5/countdown-train.jsonl | cmp - dcd5/b && "
        "echo same");
    cr_expect_str_eq(r.out, "53\n0\nsame\n", "%s", r.err);
    /* defaults: 3 numbers from 1..19 with + and -, targets >= 1 */
    run(&r, "rm -rf dcd4 && %s data countdown --train 5 --eval 2 dcd4", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "3 numbers from 1..19, ops +-, seed 1"), "%s", r.out);
    run(&r, "rm -rf dcd dcd2 dcd3 dcd4 dcd5");
}

Test(data_countdown, bad_flags_exit_2_and_write_nothing)
{
    const struct {
        const char *args;
        const char *message;
    } bad[] = {
        {"--count 1 db", "tern: --count needs a whole number from 2 to 6 (got '1')"},
        {"--count 7 db", "tern: --count needs a whole number from 2 to 6 (got '7')"},
        {"--max 0 db", "tern: --max needs a whole number from 1 to 1000 (got '0')"},
        {"--max 1001 db", "tern: --max needs a whole number from 1 to 1000"},
        {"--train 0 db", "tern: --train needs a whole number >= 1 (got '0')"},
        {"--ops '' db", "tern: --ops needs some of + - * /"},
        {"--ops '+x' db", "tern data countdown: --ops has 'x', which is not an operation; give "
                          "some of + - * / (e.g. --ops '+-*')"},
        {"--ops '--' db", "--ops has '-' twice"},
        {"--max 3 --train 500 db",
         "tern data countdown: --train 500 and --eval 200 ask for more distinct puzzles than "
         "140000 draws found (26): 3 numbers from 1..3 with ops +-; raise --max or --count, add "
         "--ops, or lower --train/--eval"},
        {"--train 9999999 --eval 2 db", "more than 10000000 tasks in all"},
        {"", "tern: data countdown needs OUT_DIR"},
    };
    result r;
    run(&r, "rm -rf db");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "%s data countdown %s", TERN, bad[i].args);
        cr_expect_eq(r.code, 2, "%s: %s", bad[i].args, r.err);
        cr_expect(strstr(r.err, bad[i].message), "%s:\n%s", bad[i].args, r.err);
        cr_expect_str_eq(r.out, "", "%s", bad[i].args);
        cr_expect(!path_exists(WORK "/db"), "%s: nothing created", bad[i].args);
    }
    run(&r, "%s help data", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "tern data countdown [--seed S] [--train N] [--eval M] [--count C]"),
              "%s", r.out);
}
