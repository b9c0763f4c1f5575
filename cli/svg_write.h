/* svg_write.h: what the commands that draw SVG pictures (`tern timeline`,
 * `tern plot`) share: escaped text and round tick steps. */
#ifndef TERN_CLI_SVG_WRITE_H
#define TERN_CLI_SVG_WRITE_H

#include <stdio.h>

/* Write `s` as SVG text content or an attribute value: XML-escaped (& < >
 * "), and control bytes and bytes that are not UTF-8 written as '?', so any
 * run or directory name gives valid XML. */
void svg_put_text(FILE *f, const char *s);

/* The smallest 1, 2, 2.5 or 5 x 10^k at or above `want` (> 0): a tick step
 * a reader can count in. */
double svg_nice_step(double want);

#endif
