/* corpus.h: run a reward corpus (tests/corpora/NAME.jsonl) through a plugin
 * instance opened with harness_open(). Each line of a corpus is a task object
 * whose extra fields "response" (string) and "expect" (number, the reward the
 * plugin must give) make it a case; "why" (string) optionally says what the
 * case checks. Blank lines are skipped. */
#ifndef TERN_TEST_CORPUS_H
#define TERN_TEST_CORPUS_H

#include <stddef.h>

#include "harness.h"

typedef struct corpus_result {
    size_t cases; /* lines scored */
    size_t right; /* reward within 1e-6 of "expect" */
    char first_wrong[1024]; /* "FILE:LINE: reward R (reason), expected E" of the first miss */
} corpus_result;

/* Score every case of `path` one at a time through h's score op. Returns
 * TERN_OK, or a failing status with h->error saying which line is malformed
 * (no "response" string, no "expect" number, bad JSON) or that the plugin
 * failed. Misses are printed to stderr, one line each. */
int corpus_run(harness *h, const char *path, corpus_result *out);

#endif
