/* arith.h: the synthetic arithmetic tasks of the quickstart (`tern data
 * arith`, docs/data.md): "37+45=" with the answer "82", domain "math".
 *
 * A problem is a triple (a, op, b) with operands a, b from 0..max_operand
 * and op one of ops ('-' only with a >= b, so no answer is negative). The
 * n_eval + n_train problems are drawn uniformly, without repetition, from
 * all the distinct problems: no problem repeats within a split, and no eval
 * problem is in train (the eval split is held out). Eval is drawn first, so
 * the eval split of a seed does not depend on n_train. Everything follows
 * from the spec: the same spec gives the same bytes. */
#ifndef TERN_DATA_ARITH_H
#define TERN_DATA_ARITH_H

#include <stddef.h>
#include <stdint.h>

typedef struct tern_arith_spec {
    uint64_t seed;    /* default 1 */
    size_t n_train;   /* default 2000 */
    size_t n_eval;    /* default 200 */
    int max_operand;  /* operands drawn from 0..max_operand, default 49 */
    const char *ops;  /* non-empty subset of "+-*", default "+" */
    int question;     /* 1: prompts as questions ("What is 37 + 45?"), for chat models */
} tern_arith_spec;

#define TERN_ARITH_SPEC_DEFAULT                                                                \
    {.seed = 1, .n_train = 2000, .n_eval = 200, .max_operand = 49, .ops = "+"}

/* How many distinct problems max_operand and ops allow; 0 if either is
 * invalid (max_operand < 0, ops empty or not a subset of "+-*"). */
uint64_t tern_arith_problems(int max_operand, const char *ops);

/* Check a spec: TERN_OK, or TERN_EINVAL with a message saying what is wrong
 * and how to fix it (in terms of the `tern data arith` flags): ops, the
 * operand range, counts of at least 1, and n_train + n_eval at most
 * tern_arith_problems(). */
int tern_arith_check(const tern_arith_spec *s);

/* Write the n_train tasks to train_path and the n_eval tasks to eval_path,
 * one JSON object per line:
 *   {"id":"arith-train-00001","domain":"math","prompt":"37+45=","answer":"82"}
 * (with question: "prompt":"What is 37 + 45?"; ids numbered from 1, zero-padded to 5 digits or to the digits of the
 * count when that is more; eval ids are "arith-eval-NNNNN"). Each file is
 * written to a temporary file beside it and renamed into place, so a reader
 * never sees half a file; an existing file at either path is replaced (the
 * caller checks first if it must not be). TERN_EINVAL (tern_arith_check),
 * TERN_EIO "PATH: cannot write: <why>" or TERN_ENOMEM; on failure neither
 * path is created. */
int tern_arith_write(const tern_arith_spec *s, const char *train_path, const char *eval_path);

#endif
