/* test_data_cli.c: `tern data arith` end to end, as a user runs it: the files
 * it writes, refusing to overwrite, bad flags, and its help. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR

Test(data_cli, help_texts)
{
    result r;
    run(&r, "%s help data", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern data arith [--seed S] [--train N] [--eval M] [--max K] "
                            "[--ops OPS]\n                 [--question] OUT_DIR"), "%s", r.out);
    cr_expect(strstr(r.out, "--ops OPS"), "%s", r.out);
    cr_expect(strstr(r.out, "never\noverwritten"), "%s", r.out);
    run(&r, "%s data arith --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern data arith"), "%s", r.out);
    run(&r, "%s data --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "--train N"), "%s", r.out);
    run(&r, "%s help", TERN);
    cr_expect(strstr(r.out, "  tern data arith"), "the overview lists it: %s", r.out);
}

Test(data_cli, writes_both_files)
{
    result r;
    char text[16384];
    run(&r, "rm -rf dc && %s data arith --seed 3 --train 40 --eval 7 --max 20 --ops '+-*' dc/a/b",
        TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect(strstr(r.out, "dc/a/b/arith-train.jsonl: 40 tasks\n"), "%s", r.out);
    cr_expect(strstr(r.out, "dc/a/b/arith-eval.jsonl: 7 tasks"), "%s", r.out);
    cr_expect(strstr(r.out, "ops +-*, operands 0..20, seed 3"), "%s", r.out);
    slurp(WORK "/dc/a/b/arith-train.jsonl", text, sizeof text);
    cr_expect_eq(count_lines(text), 40);
    cr_expect(strncmp(text, "{\"id\":\"arith-train-00001\",\"domain\":\"math\",\"prompt\":\"", 52)
              == 0, "%s", text);
    slurp(WORK "/dc/a/b/arith-eval.jsonl", text, sizeof text);
    cr_expect_eq(count_lines(text), 7);
    cr_expect(strstr(text, "{\"id\":\"arith-eval-00007\","), "%s", text);

    /* the defaults, with a trailing slash; same seed, same bytes */
    run(&r, "rm -rf dd1 dd2 && %s data arith dd1/ && %s data arith --seed=1 dd2 && "
        "cmp dd1/arith-train.jsonl dd2/arith-train.jsonl && "
        "cmp dd1/arith-eval.jsonl dd2/arith-eval.jsonl && wc -l < dd1/arith-train.jsonl",
        TERN, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "dd1/arith-train.jsonl: 2000 tasks"), "%s", r.out);
    cr_expect(strstr(r.out, "dd1/arith-eval.jsonl: 200 tasks"), "%s", r.out);
    cr_expect(strstr(r.out, "ops +, operands 0..49, seed 1: 2500 distinct problems"), "%s",
              r.out);
    cr_expect(strstr(r.out, "\n2000\n"), "%s", r.out);
    run(&r, "rm -rf dd3 && %s data arith --seed 2 dd3 && "
        "! cmp -s dd1/arith-train.jsonl dd3/arith-train.jsonl", TERN);
    cr_expect_eq(r.code, 0, "another seed, other tasks: %s", r.err);

    /* an existing empty directory is fine; no temporary file is left */
    run(&r, "rm -rf de && mkdir de && %s data arith --train 5 --eval 5 de && ls -A de", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "arith-eval.jsonl\narith-train.jsonl\n"), "%s", r.out);
    cr_expect_null(strstr(r.out, "tmp"), "%s", r.out);
    run(&r, "rm -rf dc dd1 dd2 dd3 de");
}

/* --question: the same problems, asked as a chat model is asked */
Test(data_cli, question_prompts)
{
    result r;
    run(&r, "rm -rf q1 q2 && %s data arith --seed 4 --max 9 --ops '+-' --train 5 --eval 3 q1 && "
        "%s data arith --seed 4 --max 9 --ops '+-' --train 5 --eval 3 --question q2", TERN, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char plain[4096], asked[4096];
    slurp(WORK "/q1/arith-train.jsonl", plain, sizeof plain);
    slurp(WORK "/q2/arith-train.jsonl", asked, sizeof asked);
    int n = 0;
    for (char *p = plain, *q = asked; *p && *q; n++) {
        unsigned a, b, x, y;
        char op, op2;
        cr_assert_eq(sscanf(strstr(p, "\"prompt\":\"") + 10, "%u%c%u=", &a, &op, &b), 3);
        cr_assert_eq(sscanf(strstr(q, "\"prompt\":\"") + 10, "What is %u %c %u?", &x, &op2, &y),
                     3, "%s", q);
        cr_expect(a == x && b == y && op == op2, "line %d: %u%c%u against %u %c %u", n, a, op, b,
                  x, op2, y);
        p = strchr(p, '\n') + 1, q = strchr(q, '\n') + 1;
    }
    cr_expect_eq(n, 5);
}

Test(data_cli, never_overwrites)
{
    result r;
    char before[8192], after[8192];
    run(&r, "rm -rf dw && %s data arith --train 20 --eval 3 dw", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    slurp(WORK "/dw/arith-train.jsonl", before, sizeof before);

    run(&r, "%s data arith --seed 9 --train 20 --eval 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern data arith: dw/arith-train.jsonl: exists; nothing is ever "
                            "overwritten"), "%s", r.err);
    cr_expect(strstr(r.err, "dw/arith-eval.jsonl: exists"), "%s", r.err);
    cr_expect_str_eq(r.out, "");
    slurp(WORK "/dw/arith-train.jsonl", after, sizeof after);
    cr_expect_str_eq(after, before, "untouched");

    /* one of them is enough to refuse, and the other is not written */
    run(&r, "rm dw/arith-eval.jsonl && echo mine > dw/arith-train.jsonl && "
        "%s data arith --train 20 --eval 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/arith-train.jsonl: exists"), "%s", r.err);
    cr_expect_null(strstr(r.err, "arith-eval"), "%s", r.err);
    cr_expect(!path_exists(WORK "/dw/arith-eval.jsonl"));
    slurp(WORK "/dw/arith-train.jsonl", after, sizeof after);
    cr_expect_str_eq(after, "mine\n");

    run(&r, "rm -rf dw && mkdir dw && echo x > dw/arith-eval.jsonl && "
        "%s data arith --train 20 --eval 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/arith-eval.jsonl: exists"), "%s", r.err);
    cr_expect(!path_exists(WORK "/dw/arith-train.jsonl"));

    /* a dangling symbolic link is a file there too */
    run(&r, "rm -rf dw && mkdir dw && ln -s nowhere dw/arith-train.jsonl && "
        "%s data arith --train 20 --eval 3 dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw/arith-train.jsonl: exists"), "%s", r.err);

    /* OUT_DIR a file */
    run(&r, "rm -rf dw && echo x > dw && %s data arith dw", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "dw: exists and is not a directory"), "%s", r.err);
    run(&r, "%s data arith dw/sub", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "dw/sub"), "%s", r.err);
    run(&r, "rm -rf dw");
}

Test(data_cli, bad_flags_exit_2_and_write_nothing)
{
    const struct {
        const char *args;
        const char *message;
    } bad[] = {
        {"--train abc db", "tern: --train needs a whole number >= 1 (got 'abc')"},
        {"--train 0 db", "tern: --train needs a whole number >= 1 (got '0')"},
        {"--eval -3 db", "tern: --eval needs a whole number >= 1 (got '-3')"},
        {"--max -1 db", "tern: --max needs a whole number from 0 to 2147483647 (got '-1')"},
        {"--max 99999999999 db", "--max needs a whole number from 0 to 2147483647"},
        {"--seed x db", "tern: --seed needs a whole number from 0 to"},
        {"--seed -1 db", "tern: --seed needs a whole number from 0 to"},
        {"--ops '' db", "tern: --ops needs some of + - *"},
        {"--ops '+/' db", "tern data arith: --ops has '/', which is not an operation; give "
                          "some of + - * (e.g. --ops '+-*')"},
        {"--ops '++' db", "--ops has '+' twice"},
        {"--max 9 --train 95 --eval 10 db",
         "tern data arith: --train 95 and --eval 10 ask for more distinct problems than there "
         "are: ops + with operands 0..9 give 100 at most (train and eval never share one); "
         "raise --max or lower --train/--eval"},
        {"--bogus db", "tern: unknown option '--bogus'"},
        {"db extra", "tern: unexpected argument 'extra'"},
        {"--train", "tern: --train needs a value"},
        {"", "tern: data arith needs OUT_DIR"},
    };
    result r;
    run(&r, "rm -rf db");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "%s data arith %s", TERN, bad[i].args);
        cr_expect_eq(r.code, 2, "%s: %s", bad[i].args, r.err);
        cr_expect(strstr(r.err, bad[i].message), "%s:\n%s", bad[i].args, r.err);
        cr_expect_str_eq(r.out, "", "%s", bad[i].args);
        cr_expect(!path_exists(WORK "/db"), "%s: nothing created", bad[i].args);
    }
    run(&r, "%s data", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern: data needs a subcommand: arith"), "%s", r.err);
    run(&r, "%s data frob db", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern: unknown subcommand 'data frob' (there are: arith, countdown, shapes)"), "%s",
              r.err);
    cr_expect(strstr(r.err, "usage: tern data arith"), "%s", r.err);
}
