/* arith.c: the synthetic arithmetic tasks (see arith.h).
 *
 * The distinct problems are numbered 0..T-1, op by op in the order `ops`
 * gives them: for '+' and '*' the (max+1)^2 ordered pairs (a, b), index
 * a * (max+1) + b; for '-' the (max+1)(max+2)/2 pairs with a >= b, index
 * a(a+1)/2 + b. n distinct indices are drawn uniformly with the tern_rng
 * stream of the seed: by a partial Fisher-Yates shuffle of all T indices
 * when T is small, else by drawing and rejecting repeats (n <= T, and n is
 * well below T in that case unless the caller asks for millions of tasks). */
#include "data/arith.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "data/ops_check.h"
#include "data/split_files.h"
#include "tern/rng.h"

/* Up to this many problems, the draw shuffles the whole list (4 bytes each). */
#define SHUFFLE_MAX ((uint64_t)1 << 22)

static const char *ops_or_default(const char *ops) { return ops ? ops : "+"; }

static uint64_t op_problems(char op, uint64_t w)
{
    return op == '-' ? w * (w + 1) / 2 : w * w;
}

uint64_t tern_arith_problems(int max_operand, const char *ops)
{
    ops = ops_or_default(ops);
    if (max_operand < 0 || !*ops)
        return 0;
    uint64_t w = (uint64_t)max_operand + 1, total = 0;
    for (const char *p = ops; *p; p++) {
        if (!strchr("+-*", *p) || strchr(p + 1, *p))
            return 0;
        total += op_problems(*p, w); /* < 2^62 + 2^62 + 2^61: no overflow */
    }
    return total;
}

int tern_arith_check(const tern_arith_spec *s)
{
    const char *ops = ops_or_default(s->ops);
    int rc = tern_data_check_ops(ops, "+-*");
    if (rc != TERN_OK)
        return rc;
    if (s->max_operand < 0)
        return tern_errorf(TERN_EINVAL, "--max is %d; give the largest operand, a whole number "
                           ">= 0 (e.g. --max 49)", s->max_operand);
    if (s->n_train < 1)
        return tern_errorf(TERN_EINVAL, "--train is 0; give at least 1 training task");
    if (s->n_eval < 1)
        return tern_errorf(TERN_EINVAL, "--eval is 0; give at least 1 evaluation task");
    uint64_t total = tern_arith_problems(s->max_operand, ops);
    if (s->n_train > SIZE_MAX - s->n_eval || (uint64_t)(s->n_train + s->n_eval) > total)
        return tern_errorf(TERN_EINVAL, "--train %zu and --eval %zu ask for more distinct "
                           "problems than there are: ops %s with operands 0..%d give %llu at "
                           "most (train and eval never share one); raise --max or lower "
                           "--train/--eval", s->n_train, s->n_eval, ops, s->max_operand,
                           (unsigned long long)total);
    return TERN_OK;
}

/* n distinct indices of [0, total) in draw order, into out[n]. */
static int draw(tern_rng *r, uint64_t total, size_t n, uint64_t *out)
{
    if (total <= SHUFFLE_MAX) {
        uint32_t *perm = malloc((size_t)total * sizeof *perm);
        if (!perm)
            return TERN_ENOMEM;
        for (uint64_t i = 0; i < total; i++)
            perm[i] = (uint32_t)i;
        for (size_t i = 0; i < n; i++) {
            size_t j = i + (size_t)tern_rng_below(r, total - i);
            uint32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            out[i] = perm[i];
        }
        free(perm);
        return TERN_OK;
    }
    /* An open-addressing set of the drawn indices (UINT64_MAX: free; every
     * index is below total < 2^64 - 1). */
    size_t cap = 64;
    while (cap < n * 2)
        cap *= 2;
    uint64_t *set = malloc(cap * sizeof *set);
    if (!set)
        return TERN_ENOMEM;
    memset(set, 0xff, cap * sizeof *set);
    for (size_t k = 0; k < n;) {
        uint64_t x = tern_rng_below(r, total);
        size_t i = (size_t)((x * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
        while (set[i] != UINT64_MAX && set[i] != x)
            i = (i + 1) & (cap - 1);
        if (set[i] == x)
            continue; /* drawn before */
        set[i] = x;
        out[k++] = x;
    }
    free(set);
    return TERN_OK;
}

typedef struct problem {
    char op;
    uint64_t a, b, answer;
} problem;

static problem decode(uint64_t idx, const char *ops, uint64_t w)
{
    problem p = {0};
    for (const char *o = ops; *o; o++) {
        uint64_t cnt = op_problems(*o, w);
        if (idx >= cnt) {
            idx -= cnt;
            continue;
        }
        p.op = *o;
        if (*o == '-') {
            uint64_t a = (uint64_t)((sqrt(8.0 * (double)idx + 1.0) - 1.0) / 2.0);
            while (a > 0 && a * (a + 1) / 2 > idx)
                a--;
            while ((a + 1) * (a + 2) / 2 <= idx)
                a++;
            p.a = a;
            p.b = idx - a * (a + 1) / 2;
            p.answer = p.a - p.b;
        } else {
            p.a = idx / w;
            p.b = idx % w;
            p.answer = *o == '+' ? p.a + p.b : p.a * p.b;
        }
        break;
    }
    return p;
}

/* What the lines of both splits are drawn from: eval is idx[0..n_eval), train
 * idx[n_eval..). */
typedef struct arith_lines {
    const uint64_t *idx;
    size_t n_eval;
    const char *ops;
    uint64_t w;
    int question;
} arith_lines;

static int arith_line(FILE *f, const char *split, size_t i, int width, void *ctx)
{
    const arith_lines *al = ctx;
    problem p = decode(al->idx[(split[0] == 't' ? al->n_eval : 0) + i], al->ops, al->w);
    const char *form = al->question ? "{\"id\":\"arith-%s-%0*zu\",\"domain\":\"math\",\"prompt\":"
                                      "\"What is %llu %c %llu?\",\"answer\":\"%llu\"}\n"
                                    : "{\"id\":\"arith-%s-%0*zu\",\"domain\":\"math\",\"prompt\":"
                                      "\"%llu%c%llu=\",\"answer\":\"%llu\"}\n";
    return fprintf(f, form, split, width, i + 1, (unsigned long long)p.a, p.op,
                   (unsigned long long)p.b, (unsigned long long)p.answer) > 0 ? 0 : -1;
}

int tern_arith_write(const tern_arith_spec *s, const char *train_path, const char *eval_path)
{
    int rc = tern_arith_check(s);
    if (rc != TERN_OK)
        return rc;
    if (strcmp(train_path, eval_path) == 0)
        return tern_errorf(TERN_EINVAL, "%s: the train and eval files must differ", train_path);
    const char *ops = ops_or_default(s->ops);
    uint64_t w = (uint64_t)s->max_operand + 1;
    uint64_t total = tern_arith_problems(s->max_operand, ops);
    size_t n = s->n_eval + s->n_train;
    uint64_t *idx = n <= SIZE_MAX / sizeof *idx ? malloc(n * sizeof *idx) : NULL;
    if (!idx)
        return tern_errorf(TERN_ENOMEM, "out of memory for %zu tasks", n);
    tern_rng r;
    tern_rng_seed(&r, s->seed);
    rc = draw(&r, total, n, idx);
    if (rc != TERN_OK) {
        free(idx);
        return tern_errorf(rc, "out of memory drawing %zu of %llu problems", n,
                           (unsigned long long)total);
    }
    arith_lines al = {.idx = idx, .n_eval = s->n_eval, .ops = ops, .w = w,
                      .question = s->question};
    rc = tern_split_files_write(train_path, s->n_train, eval_path, s->n_eval, arith_line, &al);
    free(idx);
    return rc;
}
