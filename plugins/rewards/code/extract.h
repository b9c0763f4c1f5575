/* extract.h: finding the program in a response (private to the code plugin).
 *
 * Code blocks are fenced as in CommonMark:
 *   opening fence  a line of 0-3 spaces (a tab is too deep), then a run of 3
 *                  or more backticks or of 3 or more tildes, then the info
 *                  string (trimmed of blanks: space, \t, \r, \f, \v). A
 *                  backtick fence's info string may not hold a backtick
 *                  ("```py```" on one line is inline code, not a fence). The
 *                  info string's first word (up to a blank) is the language
 *                  tag, compared ASCII case-insensitively: "```Python title=x"
 *                  is python
 *   closing fence  a line of 0-3 spaces, then the opening fence's character
 *                  at least as many times as it opened, then only blanks.
 *                  Any other line, "```python" included, is content. A block
 *                  left open runs to the end of the response (a truncated
 *                  response: the block is still taken, `how` says "unclosed")
 *   content        each line loses up to as many leading spaces as the
 *                  opening fence was indented, and ends in "\n" in the copy
 * Lines end at "\n" or "\r\n"; a '\r' at the very end of the response ends
 * its last line too. Every other byte, NUL included, is an ordinary byte.
 *
 * Tags: python <- python, python3, py, py3; c <- c, h. Any other tag (cpp,
 * c++, bash, text, ...) is another language's block, never taken.
 *
 * The program is, the first that exists:
 *   1. the last block tagged with the language,
 *   2. the last untagged block (empty info string),
 *   3. with `unfenced`, when no line even looks like a fence (0-3 spaces, then
 *      ``` or ~~~, valid opening fence or not), the whole response less its
 *      leading and trailing blank lines, "\r\n" read as "\n": a model that
 *      answered with bare code. A response that tried to fence and failed is
 *      not run whole, prose and all.
 * A block of only whitespace (space, tab, \r, \f, \v, \n) is no program and
 * is passed over, so an earlier block of the same kind is taken instead.
 *
 * The scan reads only response[0..len) and is linear in len. */
#ifndef CODE_EXTRACT_H
#define CODE_EXTRACT_H

#include <stddef.h>

typedef enum code_lang { CODE_LANG_PYTHON = 0, CODE_LANG_C = 1 } code_lang;

/* The language a task names in its `language` field: "python" or "c",
 * exactly (lower case). 0 and *out set, or -1 for another name or NULL. */
int code_lang_parse(const char *name, code_lang *out);

/* "python" or "c" ("?" for a value outside the enum). */
const char *code_lang_name(code_lang lang);

/* Capacity `how` needs for every phrase code_extract writes. */
#define CODE_HOW_MAX 64

/* Find the program for `lang` in response[0..len) (rules above). Returns 1
 * with *program a malloc'd copy of *program_len bytes plus a NUL after them
 * (the program itself may hold NULs: use *program_len, not strlen), 0 when
 * there is none (*program NULL, *program_len 0), -1 when out of memory.
 * `how` (how_cap >= CODE_HOW_MAX; NULL or 0 for none) gets a short phrase
 * for a reason: "the last ```python block (3 of 4)", "the ```c block",
 * "the last untagged ``` block (2 of 2)", "an unclosed ```py block (2 of 2)",
 * "the whole response (no code fence)", "no ```python or untagged code
 * block", "no ```c or untagged code block (2 other blocks)", "only empty
 * ```python or untagged code blocks", "a blank response". The tag in it is
 * the one written (lower-cased), the fence character the one used, "last"
 * says there were other non-empty blocks of that kind, and "(k of n)" places
 * the block among all n blocks of the response, when there are several. */
int code_extract(const char *response, size_t len, code_lang lang, int unfenced, char **program,
                 size_t *program_len, char *how, size_t how_cap);

#endif
