/* gold.h: a task's gold answer as a list of acceptable answers, and its
 * options (private to the k12 plugin).
 *
 * A gold answer is
 *   - a JSON string: '|' separates acceptable answers ("北京|Beijing",
 *     "5 cm|50 mm"); each is trimmed, empty ones are dropped;
 *   - a JSON number (5, 2.5) or boolean (true, false): that one answer;
 *   - a JSON list of strings, numbers or booleans: each element is one
 *     acceptable answer, taken whole ('|' inside it is kept). For a choice
 *     question the elements together are the set of right options instead:
 *     ["A", "C"] is "AC" (judge.c). */
#ifndef K12_GOLD_H
#define K12_GOLD_H

#include <stddef.h>

typedef struct k12_gold {
    size_t n;
    char **text; /* n NUL-terminated answers, owned */
    size_t *len;
    int from_list; /* given as a JSON list */
} k12_gold;

#define K12_GOLD_OK 0
#define K12_GOLD_NOMEM (-1)
#define K12_GOLD_EMPTY 1    /* nothing is left of it */
#define K12_GOLD_BAD_TYPE 2 /* null, an object, or a list holding one */

/* From a string gold (json = 0) or the JSON text of a gold of another type
 * (json = 1). Free with k12_gold_free() whatever it returns. */
int k12_gold_read(const char *s, size_t len, int json, k12_gold *g);
void k12_gold_free(k12_gold *g);

/* The options of a choice question from the JSON text of the task's options
 * field: a list (["12 cm", "15 cm"] are A and B) or an object with letter keys
 * ({"A": "12 cm", "B": "15 cm"}). text[k] is option A+k's text, NULL when
 * absent; K12_GOLD_BAD_TYPE when it is neither. */
typedef struct k12_options {
    char *text[8];
    size_t len[8];
} k12_options;

int k12_options_read(const char *json, size_t len, k12_options *o);
void k12_options_free(k12_options *o);

#endif
