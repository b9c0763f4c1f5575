/* svg_checks.c: checks of the commands' SVG pictures (svg_checks.h). */
#include "svg_checks.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"

int svg_count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

void expect_whole_svg(const char *text)
{
    cr_expect(strncmp(text, "<svg ", 5) == 0, "%.80s", text);
    size_t n = strlen(text);
    cr_expect(n > 7 && strcmp(text + n - 7, "</svg>\n") == 0, "%s", text + (n > 40 ? n - 40 : 0));
    cr_expect_eq(svg_count(text, "<svg"), 1);
    cr_expect_eq(svg_count(text, "<text"), svg_count(text, "</text>"));
    cr_expect_eq(svg_count(text, "<title>"), svg_count(text, "</title>"));
}

int work_file_exists(const char *rel)
{
    char path[1600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", test_work_dir(), rel);
    return stat(path, &st) == 0;
}
