/* cmd_data.c: `tern data arith` (tern/libtern.h): write the arithmetic task
 * files of the quickstart (data/arith.h) into a directory, never over a file
 * that is there. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/arith.h"
#include "base/errmsg.h"
#include "tern/support/paths.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"

#define LABEL "tern data arith"
#define TRAIN_FILE "arith-train.jsonl"
#define EVAL_FILE "arith-eval.jsonl"

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
static int check_targets(const tern_invocation *inv, const char *dir, const char *train,
                         const char *eval)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            cmd_report(inv, LABEL,
                       "%s: exists and is not a directory; give a directory for the task "
                       "files (it is created if missing)",
                       dir);
            return TERN_EXIT_USAGE;
        }
    } else if (errno == ENOTDIR) {
        cmd_report(inv, LABEL, "%s: cannot be a directory: %s; give another OUT_DIR", dir,
                   strerror(errno));
        return TERN_EXIT_USAGE;
    } else if (errno != ENOENT) {
        cmd_report(inv, LABEL, "%s: cannot use it: %s", dir, strerror(errno));
        return TERN_EXIT_FAILURE;
    }
    int code = TERN_EXIT_OK;
    const char *files[2] = {train, eval};
    for (int i = 0; i < 2; i++)
        if (lstat(files[i], &st) == 0) {
            cmd_report(inv, LABEL,
                       "%s: exists; nothing is ever overwritten: remove it or give another "
                       "OUT_DIR",
                       files[i]);
            code = TERN_EXIT_USAGE;
        }
    return code;
}

int tern_cmd_data_arith(const tern_invocation *inv, const tern_arith_args *a)
{
    if (cmd_structs_too_old(inv, LABEL, a ? a->size : 0, sizeof(tern_arith_args)))
        return TERN_EXIT_USAGE;
    if (!a->out_dir || !*a->out_dir) {
        cmd_report(inv, LABEL,
                   "needs OUT_DIR, the directory to write " TRAIN_FILE " and " EVAL_FILE " to");
        return TERN_EXIT_USAGE;
    }
    if (a->n_train > SIZE_MAX || a->n_eval > SIZE_MAX) {
        cmd_report(inv, LABEL, "--train and --eval must be at most %zu", (size_t)SIZE_MAX);
        return TERN_EXIT_USAGE;
    }
    tern_arith_spec spec = {.seed = a->seed, .n_train = (size_t)a->n_train,
                            .n_eval = (size_t)a->n_eval, .max_operand = a->max_operand,
                            .ops = a->ops ? a->ops : "+"};
    int rc = tern_arith_check(&spec);
    if (rc != TERN_OK) {
        cmd_report(inv, LABEL, "%s", tern_error_message());
        return exit_code(rc);
    }

    char *train = tern_path_join(a->out_dir, TRAIN_FILE), *eval = tern_path_join(a->out_dir, EVAL_FILE);
    if (!train || !eval) {
        free(train);
        free(eval);
        cmd_report(inv, LABEL, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    int code = check_targets(inv, a->out_dir, train, eval);
    tern_made_dirs made = {0};
    if (code == TERN_EXIT_OK && tern_make_dirs(a->out_dir, &made, NULL, 0) != 0) {
        int e = errno;
        cmd_report(inv, LABEL, "%s: cannot create the directory: %s", a->out_dir, strerror(e));
        code = e == ENOTDIR || e == EEXIST ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK) {
        rc = tern_arith_write(&spec, train, eval);
        if (rc != TERN_OK) {
            cmd_report(inv, LABEL, "%s", tern_error_message());
            code = exit_code(rc);
        }
    }
    if (code != TERN_EXIT_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    if (code == TERN_EXIT_OK) {
        FILE *out = cmd_out(inv);
        fprintf(out, "%s: %zu tasks\n", train, spec.n_train);
        fprintf(out, "%s: %zu tasks, held out (no problem of it is in the train file)\n", eval,
                spec.n_eval);
        fprintf(out, "ops %s, operands 0..%d, seed %llu: %llu distinct problems\n", spec.ops,
                spec.max_operand, (unsigned long long)spec.seed,
                (unsigned long long)tern_arith_problems(spec.max_operand, spec.ops));
    }
    free(train);
    free(eval);
    return code;
}
