/* flag_config.c: see flag_config.h. */
#include "flag_config.h"

#include <stdlib.h>
#include <string.h>

void tern_tb_quoted(tern_text_buf *b, const char *s)
{
    tern_text_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            tern_text_put(b, esc, 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", *p);
            tern_text_puts(b, esc);
        } else {
            tern_text_put(b, (const char *)p, 1);
        }
    }
    tern_text_puts(b, "\"");
}

void tern_print_flag_problems(FILE *err, const char *label, const tern_diag *d)
{
    size_t ll = strlen(label);
    for (size_t i = 0; i < d->n; i++) {
        /* Drop every "LABEL:LINE: " (a plugin's setting_error() nests one in
         * its message) and a leading "LABEL: ". */
        char *m = strdup(d->msgs[i]);
        if (!m) {
            fprintf(err, "%s: %s\n", label, d->msgs[i]);
            continue;
        }
        char *w = m;
        for (const char *r = m; *r;) {
            if (strncmp(r, label, ll) == 0 && r[ll] == ':') {
                const char *p = r + ll + 1;
                while (*p >= '0' && *p <= '9')
                    p++;
                if (p > r + ll + 1 && p[0] == ':' && p[1] == ' ') {
                    r = p + 2;
                    continue;
                }
                if (r == m && r[ll + 1] == ' ') {
                    r += ll + 2;
                    continue;
                }
            }
            *w++ = *r++;
        }
        *w = '\0';
        fprintf(err, "%s: %s\n", label, m);
        free(m);
    }
    if (d->oom)
        fprintf(err, "%s: out of memory (some messages were lost)\n", label);
}
