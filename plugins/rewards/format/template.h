/* template.h: the `format` reward's response templates. A template is
 * literal text with "..." standing for any text; a run of whitespace in the
 * template, and the place right after a '>' inside it (between two tags),
 * match any run of whitespace in the response, none included, and the
 * response's leading and trailing whitespace is ignored. So
 *   <think>...</think><answer>...</answer>
 * matches "<think>2+2 is 4</think>\n<answer>4</answer>\n". */
#ifndef FORMAT_TEMPLATE_H
#define FORMAT_TEMPLATE_H

#include <stddef.h>

#define TEMPLATE_MAX_PARTS 32 /* literal pieces of one template */

typedef struct template_t {
    size_t n;                        /* literal pieces: n - 1 wildcards between them */
    const char *part[TEMPLATE_MAX_PARTS]; /* into the template text (not owned) */
    size_t len[TEMPLATE_MAX_PARTS];
} template_t;

/* Split `text` into its pieces. 0, or -1 when it has more than
 * TEMPLATE_MAX_PARTS - 1 wildcards. */
int template_parse(template_t *t, const char *text);

/* Whether s[0..n) matches the template. With `nonempty`, each "..." must
 * hold some non-whitespace text. Greedy leftmost matching is exact here (each
 * wildcard ending as early as it can leaves the most room for the rest), and
 * costs O(n * template length) at worst. */
int template_match(const template_t *t, const char *s, size_t n, int nonempty);

#endif
