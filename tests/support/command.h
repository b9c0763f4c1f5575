/* command.h: run a shell command as a user would, for end-to-end tests of
 * the `tern` command: in the test executable's own work directory, without
 * TERN_PLUGIN_PATH, capturing exit code, stdout and stderr. A sanitizer report on stderr (the
 * sanitizer build instruments the command too) fails the calling test. */
#ifndef TERN_TEST_COMMAND_H
#define TERN_TEST_COMMAND_H

#include <stddef.h>

typedef struct result {
    int code;
    char out[16384];
    char err[16384];
} result;

/* This test executable's own work directory, TERN_TEST_WORK_ROOT/<its name>
 * (= TERN_TEST_WORK_DIR in its sources), made if missing: no two test
 * executables share one, so ctest -j cannot mix their files. */
const char *test_work_dir(void);

/* How to launch MPI ranks ("" in a build without MPI): TERN_TEST_MPIRUN,
 * with Open MPI's components kept loaded and, when LeakSanitizer is on
 * (LSAN_OPTIONS set), slow unwinding, so that the suppressions of Open MPI's
 * own leaks (tests/lsan.supp) match their frames. Append "-np N CMD". */
const char *test_mpirun(void);
/* Skip the calling test, with the reason, in a build without MPI. */
void test_need_mpi(void);

/* printf-style command line, run by /bin/sh as `{ CMD ; }` in
 * test_work_dir() so redirections apply to whole pipelines. */
void run(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The lines of the JSON Lines file `path`, each of which must be a JSON
 * object (the test fails otherwise), in order, keeping those that have the
 * key `with` (NULL: all): a new array. */
struct json_t;
struct json_t *json_lines(const char *path, const char *with);
/* The ids `tern` (the binary) `score`s with `model` for the text shell
 * printf makes of `text` (escapes such as \\n), as it prints them: run
 * after a leading "x" whose own id it does not print, and before a trailing
 * <|im_end|> that keeps the shell from eating the last newline (a ChatML
 * model: the test fixtures'). A new array; the test fails if tern score
 * does. */
struct json_t *score_ids(const char *tern, const char *model, const char *text);
/* The newlines in text. */
int count_lines(const char *text);
/* Whether something is at `path` (lstat: a dangling link counts). */
int path_exists(const char *path);
/* Read up to n - 1 bytes of `path` into buf ("" if unreadable). */
void slurp(const char *path, char *buf, size_t n);
/* Write `text` to `path` (the test fails if it cannot). */
void write_file(const char *path, const char *text);

#endif
