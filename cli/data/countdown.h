/* countdown.h: synthetic Countdown-style puzzles (`tern data countdown`,
 * docs/data.md): "make the target from these numbers", judged by the
 * `countdown` reward, which accepts any expression that uses the numbers and
 * is worth the target.
 *
 * A puzzle draws `count` numbers uniformly from 1..max_number and count - 1
 * operations from `ops`, and evaluates numbers[0] op numbers[1] op ... with
 * the usual precedence (* and / before + and -). It is kept when the value is
 * a whole number >= 1 and every division is exact; its identity is the
 * sorted numbers and the target, and no identity repeats within or across the
 * two files (eval is drawn first and held out). The drawing expression is the
 * task's `answer`, one solution among the many the reward accepts (the
 * supervised warm-up learns from it). The same spec gives the same bytes. */
#ifndef TERN_DATA_COUNTDOWN_H
#define TERN_DATA_COUNTDOWN_H

#include <stddef.h>
#include <stdint.h>

#define TERN_COUNTDOWN_COUNT_MAX 6
#define TERN_COUNTDOWN_NUMBER_MAX 1000
#define TERN_COUNTDOWN_TASKS_MAX 10000000 /* train + eval */

typedef struct tern_countdown_spec {
    uint64_t seed;    /* default 1 */
    size_t n_train;   /* default 2000 */
    size_t n_eval;    /* default 200 */
    int count;        /* numbers per puzzle, 2..TERN_COUNTDOWN_COUNT_MAX, default 3 */
    int max_number;   /* numbers drawn from 1..max_number (<= TERN_COUNTDOWN_NUMBER_MAX), default 19 */
    const char *ops;  /* the operations, a non-empty subset of + - * and /, default "+-" */
    size_t n_answers; /* training tasks that carry their answer, the first ones; the others
                         have "answer": "" (puzzles for RL alone). >= n_train: all (default) */
} tern_countdown_spec;

#define TERN_COUNTDOWN_SPEC_DEFAULT                                                             \
    {.seed = 1, .n_train = 2000, .n_eval = 200, .count = 3, .max_number = 19, .ops = "+-",       \
     .n_answers = SIZE_MAX}

/* Check a spec: TERN_OK, or TERN_EINVAL with a message in terms of the
 * command's flags (ops, count, the number range, counts of at least 1 and
 * TERN_COUNTDOWN_TASKS_MAX in all). */
int tern_countdown_check(const tern_countdown_spec *s);

/* Draw the puzzles and write the n_train tasks to train_path and the n_eval
 * to eval_path, one JSON object per line:
 *   {"id":"countdown-train-00001","domain":"countdown","prompt":"6 8 12 -> 14:",
 *    "numbers":[6,8,12],"target":14,"answer":"12-6+8"}
 * (the prompt lists the numbers sorted; a training task past the first
 * n_answers has "answer":""). Both files or neither
 * (data/split_files.h). TERN_EINVAL (tern_countdown_check, or fewer distinct
 * puzzles than asked for: the message says how many were found), TERN_EIO or
 * TERN_ENOMEM. */
int tern_countdown_write(const tern_countdown_spec *s, const char *train_path,
                         const char *eval_path);

#endif
