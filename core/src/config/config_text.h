/* config_text.h: a config's text as libconfig is given it. tern reads the
 * file and its @include files itself and hands libconfig one string, so
 * that:
 *   - a FIFO, a device or a directory is refused instead of hanging or
 *     ending the process (libconfig's scanner exits on a directory);
 *   - files and lines have limits, and libconfig's scanner, which is
 *     quadratic in the length of a token when it reads a FILE *, reads from
 *     memory, where it is linear;
 *   - an @include is taken from the folder of the file that holds it and a
 *     failing one is named with FILE:LINE;
 *   - an integer past 32 bits gets the L that libconfig 1.5 needs to keep it
 *     (without it, 4294967296 silently reads as 0), and one past 64 bits is
 *     refused.
 * Lines of the string map back to FILE:LINE through spans. */
#ifndef TERN_CONFIG_TEXT_H
#define TERN_CONFIG_TEXT_H

#include <stddef.h>

#include "config/diag.h"

/* A config file, and the whole of it with its @include files. */
#define TERN_CONFIG_FILE_MAX (16ull << 20)
/* One line of a config file. */
#define TERN_CONFIG_LINE_MAX (1u << 20)
/* @include files nested in one another (libconfig's own limit is 10). */
#define TERN_CONFIG_INCLUDE_DEPTH 10
/* @include directives in all, so that nesting cannot multiply them without end. */
#define TERN_CONFIG_INCLUDE_MAX 1000

/* Lines out_line.. of the text came from lines line.. of `file` (NULL: the
 * string given, which is no file). */
typedef struct tern_config_span {
    unsigned out_line;
    unsigned line;
    const char *file; /* one of tern_config_text.files, or NULL */
} tern_config_span;

typedef struct tern_config_text {
    char *text; /* NUL-terminated */
    size_t len;
    tern_config_span *spans; /* by out_line */
    size_t n_spans, cap_spans;
    char **files; /* the files read, malloc'd */
    size_t n_files;
} tern_config_text;

/* Messages are "LABEL: ..." rather than "LABEL:LINE: ..." (an -o value). */
#define TERN_CONFIG_TEXT_NO_LINES 1u

/* Read the file `path`, or take `text` (named `label` in messages) when it
 * is not NULL, expanding @include files. TERN_OK, or TERN_ECONFIG /
 * TERN_ENOMEM with one message in `d` and *t freed. */
int tern_config_text_load(tern_config_text *t, const char *path, const char *text,
                          const char *label, unsigned flags, tern_diag *d);

/* The file (NULL: the string) and line of line `out_line` of the text. */
void tern_config_text_where(const tern_config_text *t, unsigned out_line, const char **file,
                            unsigned *line);

/* Free the text and the spans; the file names are kept (and must be freed
 * with tern_config_text_free_files) as settings point at them. */
void tern_config_text_free_text(tern_config_text *t);
void tern_config_text_free_files(char **files, size_t n);

#endif
