/* skip_exit.c: linked into a test executable whose tests may skip (a GPU
 * test on a machine without one). Criterion exits 0 when a test skips, and a
 * rule matching the skip's words in the output (SKIP_REGULAR_EXPRESSION)
 * would call a run with a failure in it skipped too. With this file the
 * executable exits 77 (ctest's SKIP_RETURN_CODE) only when some test skipped
 * and none failed or crashed: a failure beside skips stays a failure. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { EXIT_SKIPPED = 77 };

/* After Criterion's own exit work: the run's status becomes "skipped". */
static void exit_skipped(void)
{
    fflush(NULL);
    _exit(EXIT_SKIPPED);
}

/* Runs in the runner process once every test is done (not in the workers). */
ReportHook(POST_ALL)(struct criterion_global_stats *st)
{
    if (st->tests_skipped > 0 && st->tests_failed == 0 && st->tests_crashed == 0)
        atexit(exit_skipped);
}
