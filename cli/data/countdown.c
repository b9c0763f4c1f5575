/* countdown.c: synthetic Countdown-style puzzles (see countdown.h).
 *
 * Puzzles are drawn with the tern_rng stream of the seed and kept when new:
 * an open-addressing set holds the identities (sorted numbers and target)
 * drawn so far. The distinct puzzles of a spec are not counted up front
 * (they depend on which values the operations reach), so the draw stops when
 * DRAWS_PER_TASK times the tasks asked for found too few, and says so. */
#include "data/countdown.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "data/ops_check.h"
#include "data/split_files.h"
#include "tern/rng.h"

/* Draws allowed per task asked for before giving up on finding new puzzles. */
#define DRAWS_PER_TASK 200

typedef struct puzzle {
    int64_t target;
    int numbers[TERN_COUNTDOWN_COUNT_MAX]; /* in the order of the answer */
    int sorted[TERN_COUNTDOWN_COUNT_MAX];
    char ops[TERN_COUNTDOWN_COUNT_MAX];    /* ops[i] between numbers[i] and numbers[i + 1] */
} puzzle;

static const char *ops_or_default(const char *ops) { return ops ? ops : "+-"; }

int tern_countdown_check(const tern_countdown_spec *s)
{
    const char *ops = ops_or_default(s->ops);
    int rc = tern_data_check_ops(ops, "+-*/");
    if (rc != TERN_OK)
        return rc;
    if (s->count < 2 || s->count > TERN_COUNTDOWN_COUNT_MAX)
        return tern_errorf(TERN_EINVAL, "--count is %d; give the numbers per puzzle, 2 to %d "
                           "(e.g. --count 3)", s->count, TERN_COUNTDOWN_COUNT_MAX);
    if (s->max_number < 1 || s->max_number > TERN_COUNTDOWN_NUMBER_MAX)
        return tern_errorf(TERN_EINVAL, "--max is %d; give the largest number, 1 to %d "
                           "(e.g. --max 19)", s->max_number, TERN_COUNTDOWN_NUMBER_MAX);
    if (s->n_train < 1)
        return tern_errorf(TERN_EINVAL, "--train is 0; give at least 1 training task");
    if (s->n_eval < 1)
        return tern_errorf(TERN_EINVAL, "--eval is 0; give at least 1 evaluation task");
    if (s->n_train > TERN_COUNTDOWN_TASKS_MAX || s->n_eval > TERN_COUNTDOWN_TASKS_MAX - s->n_train)
        return tern_errorf(TERN_EINVAL, "--train %zu and --eval %zu are more than %d tasks in "
                           "all; lower them", s->n_train, s->n_eval, TERN_COUNTDOWN_TASKS_MAX);
    return TERN_OK;
}

/* The value of p's expression with * and / first into p->target: 1 when it
 * is a whole number >= 1 and every division is exact, else 0. The numbers
 * are at most 1000 and at most 6 of them: every value fits 64 bits. */
static int evaluate(puzzle *p, int count)
{
    int64_t sum = 0, term = p->numbers[0];
    char sign = '+';
    for (int i = 0; i < count; i++) {
        char op = i + 1 < count ? p->ops[i] : '+';
        int64_t next = i + 1 < count ? p->numbers[i + 1] : 0;
        if (op == '*' || op == '/') {
            if (op == '*')
                term *= next;
            else if (term % next != 0)
                return 0; /* next >= 1 */
            else
                term /= next;
            continue;
        }
        sum = sign == '+' ? sum + term : sum - term;
        sign = op;
        term = next;
    }
    p->target = sum;
    return sum >= 1;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void draw_one(tern_rng *r, const char *ops, size_t n_ops, int count, int max, puzzle *p)
{
    for (int i = 0; i < count; i++)
        p->numbers[i] = 1 + (int)tern_rng_below(r, (uint64_t)max);
    for (int i = 0; i + 1 < count; i++)
        p->ops[i] = ops[tern_rng_below(r, n_ops)];
    memcpy(p->sorted, p->numbers, (size_t)count * sizeof p->numbers[0]);
    qsort(p->sorted, (size_t)count, sizeof p->sorted[0], cmp_int);
}

static uint64_t identity_hash(const puzzle *p, int count)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)p->target;
    for (int i = 0; i < count; i++)
        h = (h ^ (uint64_t)p->sorted[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int same_identity(const puzzle *a, const puzzle *b, int count)
{
    return a->target == b->target &&
           memcmp(a->sorted, b->sorted, (size_t)count * sizeof a->sorted[0]) == 0;
}

/* n distinct puzzles into out[n]: TERN_OK, TERN_ENOMEM, or TERN_EINVAL when
 * the draws ran out first (*found says how many there were). */
static int draw_all(const tern_countdown_spec *s, puzzle *out, size_t n, size_t *found)
{
    const char *ops = ops_or_default(s->ops);
    size_t cap = 64;
    while (cap < n * 2)
        cap *= 2;
    size_t *set = malloc(cap * sizeof *set); /* index + 1 into out; 0: free */
    if (!set)
        return TERN_ENOMEM;
    memset(set, 0, cap * sizeof *set);
    tern_rng r;
    tern_rng_seed(&r, s->seed);
    size_t k = 0;
    for (uint64_t draws = 0; k < n && draws < (uint64_t)n * DRAWS_PER_TASK; draws++) {
        puzzle *p = &out[k];
        draw_one(&r, ops, strlen(ops), s->count, s->max_number, p);
        if (!evaluate(p, s->count))
            continue;
        size_t i = (size_t)identity_hash(p, s->count) & (cap - 1);
        while (set[i] && !same_identity(&out[set[i] - 1], p, s->count))
            i = (i + 1) & (cap - 1);
        if (set[i])
            continue; /* drawn before */
        set[i] = ++k;
    }
    free(set);
    *found = k;
    return k == n ? TERN_OK : TERN_EINVAL;
}

typedef struct countdown_lines {
    const puzzle *puzzles; /* eval first, then train */
    size_t n_eval, n_answers;
    int count;
} countdown_lines;

static int countdown_line(FILE *f, const char *split, size_t i, int width, void *ctx)
{
    const countdown_lines *cl = ctx;
    const puzzle *p = &cl->puzzles[(split[0] == 't' ? cl->n_eval : 0) + i];
    char prompt[96], numbers[96], answer[96];
    size_t a = 0, b = 0, c = 0;
    for (int j = 0; j < cl->count; j++) {
        a += (size_t)snprintf(prompt + a, sizeof prompt - a, "%s%d", j ? " " : "", p->sorted[j]);
        b += (size_t)snprintf(numbers + b, sizeof numbers - b, "%s%d", j ? "," : "", p->sorted[j]);
        c += (size_t)snprintf(answer + c, sizeof answer - c, "%d", p->numbers[j]);
        if (j + 1 < cl->count)
            answer[c++] = p->ops[j];
    }
    answer[c] = '\0';
    if (split[0] == 't' && i >= cl->n_answers)
        answer[0] = '\0'; /* a puzzle for RL alone: the verifier needs no answer */
    return fprintf(f, "{\"id\":\"countdown-%s-%0*zu\",\"domain\":\"countdown\",\"prompt\":"
                      "\"%s -> %lld:\",\"numbers\":[%s],\"target\":%lld,\"answer\":\"%s\"}\n",
                   split, width, i + 1, prompt, (long long)p->target, numbers,
                   (long long)p->target, answer) > 0 ? 0 : -1;
}

int tern_countdown_write(const tern_countdown_spec *s, const char *train_path,
                         const char *eval_path)
{
    int rc = tern_countdown_check(s);
    if (rc != TERN_OK)
        return rc;
    size_t n = s->n_eval + s->n_train, found = 0;
    puzzle *puzzles = n <= SIZE_MAX / sizeof *puzzles ? malloc(n * sizeof *puzzles) : NULL;
    if (!puzzles)
        return tern_errorf(TERN_ENOMEM, "out of memory for %zu tasks", n);
    rc = draw_all(s, puzzles, n, &found);
    if (rc == TERN_ENOMEM) {
        free(puzzles);
        return tern_errorf(TERN_ENOMEM, "out of memory drawing %zu puzzles", n);
    }
    if (rc != TERN_OK) {
        free(puzzles);
        return tern_errorf(TERN_EINVAL, "--train %zu and --eval %zu ask for more distinct "
                           "puzzles than %llu draws found (%zu): %d numbers from 1..%d with ops "
                           "%s; raise --max or --count, add --ops, or lower --train/--eval",
                           s->n_train, s->n_eval, (unsigned long long)n * DRAWS_PER_TASK, found,
                           s->count, s->max_number, ops_or_default(s->ops));
    }
    countdown_lines cl = {.puzzles = puzzles, .n_eval = s->n_eval, .n_answers = s->n_answers,
                          .count = s->count};
    rc = tern_split_files_write(train_path, s->n_train, eval_path, s->n_eval, countdown_line, &cl);
    free(puzzles);
    return rc;
}
