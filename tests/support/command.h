/* command.h: run a shell command as a user would, for end-to-end tests of
 * the `tern` command: in the tests' work directory, without TERN_PLUGIN_PATH,
 * capturing exit code, stdout and stderr. A sanitizer report on stderr (the
 * sanitizer build instruments the command too) fails the calling test. */
#ifndef TERN_TEST_COMMAND_H
#define TERN_TEST_COMMAND_H

#include <stddef.h>

typedef struct result {
    int code;
    char out[16384];
    char err[16384];
} result;

/* printf-style command line, run by /bin/sh as `{ CMD ; }` so redirections
 * apply to whole pipelines. */
void run(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Read up to n - 1 bytes of `path` into buf ("" if unreadable). */
void slurp(const char *path, char *buf, size_t n);
/* Write `text` to `path` (the test fails if it cannot). */
void write_file(const char *path, const char *text);

#endif
