/* svg_checks.h: checks of the SVG pictures `tern timeline` and `tern plot`
 * write (test_timeline, test_plot). */
#ifndef TERN_TEST_SVG_CHECKS_H
#define TERN_TEST_SVG_CHECKS_H

/* How many times `what` occurs in `text` (overlapping ones too). */
int svg_count(const char *text, const char *what);

/* The picture is one svg element, whole: it starts with "<svg " and ends
 * with "</svg>\n", and its text and title elements are closed. Criterion
 * expectations (the test goes on). */
void expect_whole_svg(const char *text);

/* 1 when `rel` (a path relative to the test's work directory) exists. */
int work_file_exists(const char *rel);

#endif
