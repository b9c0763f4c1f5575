/*
 * value.h: what the interpreter does with values, as Python and Jinja2 do
 * it. Values are jansson values; NULL is Jinja's Undefined (a missing
 * variable, attribute or key). Internal to jinja/.
 */
#ifndef TERN_JINJA_VALUE_H
#define TERN_JINJA_VALUE_H

#include <jansson.h>
#include <stddef.h>

#include "tern/support/text_buf.h"

/* Python's truth: Undefined, None, False, 0, 0.0, "", [] and {} are false. */
int jv_truthy(const json_t *v);
/* The name of v's type in messages ("string", "list", "undefined", ...). */
const char *jv_type(const json_t *v);
/* Python's str(v) appended to b: strings as they are, None, True, False,
 * repr() of lists and dicts, Undefined as "". */
void jv_str(tern_text_buf *b, const json_t *v);
/* Python's repr(v). */
void jv_repr(tern_text_buf *b, const json_t *v);
/* json.dumps(v, ensure_ascii=False, indent=indent (< 0: None),
 * sort_keys=sort), with Python's default separators. 0, or -1 for a value
 * JSON cannot hold (Undefined inside). */
int jv_tojson(tern_text_buf *b, const json_t *v, int indent, int sort);
/* Python's ==: numbers by value (True == 1), strings by bytes, lists and
 * dicts by content. */
int jv_equal(const json_t *a, const json_t *b);
/* Python's ordering of numbers, strings and lists: *cmp < 0, 0 or > 0.
 * -1 when the two cannot be ordered. */
int jv_order(const json_t *a, const json_t *b, int *cmp);
/* A number's value as a double (bools count); 0 for a non-number. */
double jv_number(const json_t *v);
int jv_is_number(const json_t *v); /* integer, real or bool */

/* UTF-8 by characters, as Python's str indexes: the number of characters
 * in s[0..n), and the byte offset of character k (k <= count). */
size_t jv_chars(const char *s, size_t n);
size_t jv_char_offset(const char *s, size_t n, size_t k);

/* How deeply v nests containers (a scalar is 0), looking no deeper than
 * limit (returns limit + 1 then); every container visited takes one from
 * *budget, and 0 left also stops the walk (returns limit + 1). */
size_t jv_depth(const json_t *v, size_t limit, size_t *budget);
/* Whether container `target` is v or inside it (so that putting v into
 * target would make a cycle); each container visited takes one from
 * *budget, and running out counts as found. */
int jv_reaches(const json_t *v, const json_t *target, size_t *budget);

#endif
