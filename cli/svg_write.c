/* svg_write.c: what the commands' SVG writers share (svg_write.h). */
#include "svg_write.h"

#include <math.h>
#include <string.h>

#include "tern/support/utf8.h"

void svg_put_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t n = tern_utf8_len(p, strnlen((const char *)p, 4));
        if (!n) {
            fputc('?', f);
            p++;
            continue;
        }
        if (n > 1)
            fwrite(p, 1, n, f);
        else if (c == '&')
            fputs("&amp;", f);
        else if (c == '<')
            fputs("&lt;", f);
        else if (c == '>')
            fputs("&gt;", f);
        else if (c == '"')
            fputs("&quot;", f);
        else if (c < 0x20 || c == 0x7f)
            fputc('?', f);
        else
            fputc((int)c, f);
        p += n;
    }
}

double svg_nice_step(double want)
{
    double p = pow(10, floor(log10(want)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < 5; i++)
        if (m[i] * p >= want * (1 - 1e-9))
            return m[i] * p;
    return 10 * p;
}
