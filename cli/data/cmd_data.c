/* cmd_data.c: `tern data arith` and `tern data countdown` (commands.h):
 * write a task set's two files (the quickstart's arithmetic, data/arith.h;
 * Countdown-style puzzles, data/countdown.h) into a directory, never over a
 * file that is there. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/arith.h"
#include "data/countdown.h"
#include "base/errmsg.h"
#include "tern/support/paths.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"


/* The exit code of a failing status (tern/libtern.h). */
static int exit_code(int status)
{
    if (status == TERN_OK)
        return TERN_EXIT_OK;
    if (status == TERN_EINVAL)
        return TERN_EXIT_USAGE;
    return TERN_EXIT_FAILURE;
}

/* OUT_DIR must be a directory or absent, and neither file may exist. */
static int check_targets(const tern_invocation *inv, const char *label, const char *dir,
                         const char *train, const char *eval)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            cmd_report(inv, label,
                       "%s: exists and is not a directory; give a directory for the task "
                       "files (it is created if missing)",
                       dir);
            return TERN_EXIT_USAGE;
        }
    } else if (errno == ENOTDIR) {
        cmd_report(inv, label, "%s: cannot be a directory: %s; give another OUT_DIR", dir,
                   strerror(errno));
        return TERN_EXIT_USAGE;
    } else if (errno != ENOENT) {
        cmd_report(inv, label, "%s: cannot use it: %s", dir, strerror(errno));
        return TERN_EXIT_FAILURE;
    }
    int code = TERN_EXIT_OK;
    const char *files[2] = {train, eval};
    for (int i = 0; i < 2; i++)
        if (lstat(files[i], &st) == 0) {
            cmd_report(inv, label,
                       "%s: exists; nothing is ever overwritten: remove it or give another "
                       "OUT_DIR",
                       files[i]);
            code = TERN_EXIT_USAGE;
        }
    return code;
}

/* What the commands differ in: their names, and the generator's check and
 * writer of a spec (data/arith.h, data/countdown.h). */
typedef struct task_set_kind {
    const char *label, *train_name, *eval_name;
    const char *item; /* "problem", "puzzle": what the held-out line names */
    int (*check)(const void *spec);
    int (*write)(const void *spec, const char *train, const char *eval);
} task_set_kind;

/* The part the commands share: the arguments and the spec checked, OUT_DIR
 * checked and created, the two files written, and on failure what this call
 * created removed; on success the two paths and their counts printed. The
 * exit code. */
static int write_task_set(const tern_invocation *inv, const task_set_kind *k, size_t size,
                          size_t known, const char *out_dir, unsigned long long n_train,
                          unsigned long long n_eval, const void *spec)
{
    if (cmd_structs_too_old(inv, k->label, size, known))
        return TERN_EXIT_USAGE;
    if (!out_dir || !*out_dir) {
        cmd_report(inv, k->label, "needs OUT_DIR, the directory to write %s and %s to",
                   k->train_name, k->eval_name);
        return TERN_EXIT_USAGE;
    }
    if (n_train > SIZE_MAX || n_eval > SIZE_MAX) {
        cmd_report(inv, k->label, "--train and --eval must be at most %zu", (size_t)SIZE_MAX);
        return TERN_EXIT_USAGE;
    }
    int rc = k->check(spec);
    if (rc != TERN_OK) {
        cmd_report(inv, k->label, "%s", tern_error_message());
        return exit_code(rc);
    }
    char *train = tern_path_join(out_dir, k->train_name);
    char *eval = tern_path_join(out_dir, k->eval_name);
    if (!train || !eval) {
        free(train);
        free(eval);
        cmd_report(inv, k->label, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    int code = check_targets(inv, k->label, out_dir, train, eval);
    tern_made_dirs made = {0};
    if (code == TERN_EXIT_OK && tern_make_dirs(out_dir, &made, NULL, 0) != 0) {
        int e = errno;
        cmd_report(inv, k->label, "%s: cannot create the directory: %s", out_dir, strerror(e));
        code = e == ENOTDIR || e == EEXIST ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK && (rc = k->write(spec, train, eval)) != TERN_OK) {
        cmd_report(inv, k->label, "%s", tern_error_message());
        code = exit_code(rc);
    }
    if (code != TERN_EXIT_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    if (code == TERN_EXIT_OK) {
        FILE *out = cmd_out(inv);
        fprintf(out, "%s: %llu tasks\n", train, n_train);
        fprintf(out, "%s: %llu tasks, held out (no %s of it is in the train file)\n", eval,
                n_eval, k->item);
    }
    free(train);
    free(eval);
    return code;
}

static int check_arith(const void *spec) { return tern_arith_check(spec); }

static int write_arith(const void *spec, const char *train, const char *eval)
{
    return tern_arith_write(spec, train, eval);
}

int tern_cmd_data_arith(const tern_invocation *inv, const tern_arith_args *a)
{
    static const task_set_kind kind = {"tern data arith", "arith-train.jsonl",
                                       "arith-eval.jsonl", "problem", check_arith, write_arith};
    tern_arith_spec spec = {0};
    if (a && a->size >= sizeof *a)
        spec = (tern_arith_spec){.seed = a->seed, .n_train = (size_t)a->n_train,
                                 .n_eval = (size_t)a->n_eval, .max_operand = a->max_operand,
                                 .ops = a->ops ? a->ops : "+", .question = a->question};
    int code = write_task_set(inv, &kind, a ? a->size : 0, sizeof *a, a ? a->out_dir : NULL,
                              a ? a->n_train : 0, a ? a->n_eval : 0, &spec);
    if (code == TERN_EXIT_OK)
        fprintf(cmd_out(inv), "ops %s, operands 0..%d, seed %llu: %llu distinct problems\n",
                spec.ops, spec.max_operand, (unsigned long long)spec.seed,
                (unsigned long long)tern_arith_problems(spec.max_operand, spec.ops));
    return code;
}

static int check_countdown(const void *spec) { return tern_countdown_check(spec); }

static int write_countdown(const void *spec, const char *train, const char *eval)
{
    return tern_countdown_write(spec, train, eval);
}

int tern_cmd_data_countdown(const tern_invocation *inv, const tern_countdown_args *a)
{
    static const task_set_kind kind = {"tern data countdown", "countdown-train.jsonl",
                                       "countdown-eval.jsonl", "puzzle", check_countdown,
                                       write_countdown};
    tern_countdown_spec spec = {0};
    if (a && a->size >= sizeof *a)
        spec = (tern_countdown_spec){
            .seed = a->seed, .n_train = (size_t)a->n_train, .n_eval = (size_t)a->n_eval,
            .count = a->count, .max_number = a->max_number, .ops = a->ops ? a->ops : "+-",
            .n_answers = a->n_answers > SIZE_MAX ? SIZE_MAX : (size_t)a->n_answers};
    int code = write_task_set(inv, &kind, a ? a->size : 0, sizeof *a, a ? a->out_dir : NULL,
                              a ? a->n_train : 0, a ? a->n_eval : 0, &spec);
    if (code != TERN_EXIT_OK)
        return code;
    FILE *out = cmd_out(inv);
    fprintf(out, "%d numbers from 1..%d, ops %s, seed %llu\n", spec.count, spec.max_number,
            spec.ops, (unsigned long long)spec.seed);
    if (spec.n_answers < spec.n_train)
        fprintf(out, "the first %zu training tasks carry their answer (the warm-up's), the "
                "other %zu have \"answer\":\"\" (for RL alone)\n", spec.n_answers,
                spec.n_train - spec.n_answers);
    return code;
}
