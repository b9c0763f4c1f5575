/* skip_exit.c: linked into every test executable (tests/CMakeLists.txt), so
 * that a test that skips (a GPU test on a machine without one) reaches ctest
 * as Skipped, never as Passed. Criterion exits 0 when a test skips, and a
 * rule matching the skip's words in the output (SKIP_REGULAR_EXPRESSION)
 * would call a run with a failure in it skipped too. With this file the
 * executable exits 77 (ctest's SKIP_RETURN_CODE) only when some test skipped
 * and none failed or crashed: a failure beside skips stays a failure. Each
 * skip is printed as "tern-test: skipped SUITE::TEST: REASON", the line
 * scripts/test.sh lists at the end. */
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

/* Each skipped test, with its reason, whatever Criterion's verbosity. */
ReportHook(POST_TEST)(struct criterion_test_stats *st)
{
    if (st->test_status == CR_STATUS_SKIPPED)
        fprintf(stderr, "tern-test: skipped %s::%s: %s\n", st->test->category, st->test->name,
                st->message ? st->message : "(no reason given)");
}

/* Runs in the runner process once every test is done (not in the workers). */
ReportHook(POST_ALL)(struct criterion_global_stats *st)
{
    if (st->tests_skipped > 0 && st->tests_failed == 0 && st->tests_crashed == 0)
        atexit(exit_skipped);
}
