/* test_code_text.c: the `code` reward's text handling without the plugin:
 * finding the program in a response (plugins/rewards/code/extract.h: fences,
 * indentation, tags and their aliases, which block wins, unclosed and empty
 * blocks, "\r\n", bare code, NUL bytes, reading nothing past len, linear
 * time) and judging a program's output (judge.h: tokens, whitespace,
 * tolerances, what counts as a number, reasons with token and line numbers,
 * cut and valid UTF-8). Every response and output is copied into a block of
 * exactly its length, so AddressSanitizer catches a read past it. */
#include <criterion/criterion.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/reward_text.h"
#include "extract.h"
#include "judge.h"

/* ---- Helpers ------------------------------------------------------------------------ */

static char *exact_copy(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);
    cr_assert_not_null(p);
    memcpy(p, s, len);
    return p;
}

typedef struct found {
    int rc;
    char *program; /* NULL when none */
    size_t len;
    char how[CODE_HOW_MAX];
} found;

static found extract_bytes(const char *s, size_t len, code_lang lang, int unfenced)
{
    found f;
    memset(&f, 0, sizeof f);
    char *copy = exact_copy(s, len);
    f.rc = code_extract(copy, len, lang, unfenced, &f.program, &f.len, f.how, sizeof f.how);
    free(copy);
    cr_assert(f.rc == 0 || f.rc == 1, "rc %d", f.rc);
    if (f.rc == 1) {
        cr_assert_not_null(f.program);
        cr_assert_eq(f.program[f.len], '\0');
    } else {
        cr_assert_null(f.program);
        cr_assert_eq(f.len, 0);
    }
    cr_assert_lt(strlen(f.how), sizeof f.how - 1, "how may have been cut: %s", f.how);
    return f;
}

static found extract(const char *s, code_lang lang, int unfenced)
{
    return extract_bytes(s, strlen(s), lang, unfenced);
}

/* The program found for `lang` in s must be `want` (NULL: none), and `how` must read `how`. */
static void expect_program(const char *s, code_lang lang, int unfenced, const char *want,
                           const char *how)
{
    found f = extract(s, lang, unfenced);
    if (want) {
        cr_expect_eq(f.rc, 1, "no program in:\n%s\n(how: %s)", s, f.how);
        if (f.rc == 1)
            cr_expect_str_eq(f.program, want, "in:\n%s", s);
        if (f.rc == 1)
            cr_expect_eq(f.len, strlen(want));
    } else
        cr_expect_eq(f.rc, 0, "found '%s' in:\n%s", f.program ? f.program : "", s);
    if (how)
        cr_expect_str_eq(f.how, how, "in:\n%s", s);
    free(f.program);
}

static const code_judge_opts EXACT = {0, 0};

typedef struct verdict {
    int match;
    char why[CODE_WHY_MAX];
} verdict;

static verdict judge_bytes(const char *got, size_t gl, const char *want, size_t wl,
                           const code_judge_opts *o, size_t why_cap)
{
    verdict v;
    memset(v.why, 'X', sizeof v.why);
    cr_assert_leq(why_cap, sizeof v.why);
    char *g = exact_copy(got, gl), *w = exact_copy(want, wl);
    v.match = code_output_matches(g, gl, w, wl, o, v.why, why_cap);
    free(g);
    free(w);
    cr_assert(v.match == 0 || v.match == 1);
    cr_assert_not_null(memchr(v.why, '\0', why_cap), "why is not terminated within its cap");
    return v;
}

static verdict judge(const char *got, const char *want, const code_judge_opts *o)
{
    return judge_bytes(got, strlen(got), want, strlen(want), o, sizeof(((verdict *)0)->why));
}

static void expect_match(const char *got, const char *want, const code_judge_opts *o)
{
    verdict v = judge(got, want, o);
    cr_expect_eq(v.match, 1, "'%s' vs '%s': %s", got, want, v.why);
    cr_expect_str_eq(v.why, "");
}

static void expect_mismatch(const char *got, const char *want, const code_judge_opts *o,
                            const char *why)
{
    verdict v = judge(got, want, o);
    cr_expect_eq(v.match, 0, "'%s' vs '%s' matched", got, want);
    if (why)
        cr_expect_str_eq(v.why, why, "'%s' vs '%s'", got, want);
}

static int valid_utf8(const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t k = tern_utf8_len((const unsigned char *)s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- Languages ---------------------------------------------------------------------- */

Test(code_lang, parse_takes_the_exact_lower_case_names)
{
    code_lang l = CODE_LANG_C;
    cr_expect_eq(code_lang_parse("python", &l), 0);
    cr_expect_eq(l, CODE_LANG_PYTHON);
    cr_expect_eq(code_lang_parse("c", &l), 0);
    cr_expect_eq(l, CODE_LANG_C);
    const char *bad[] = {"Python", "PYTHON", "py", "python3", "C", "cpp", "c++", "", " c", "c ",
                         "rust"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        l = CODE_LANG_C;
        cr_expect_eq(code_lang_parse(bad[k], &l), -1, "'%s' parsed", bad[k]);
        cr_expect_eq(l, CODE_LANG_C, "'%s' changed *out", bad[k]);
    }
    cr_expect_eq(code_lang_parse(NULL, &l), -1);
    cr_expect_str_eq(code_lang_name(CODE_LANG_PYTHON), "python");
    cr_expect_str_eq(code_lang_name(CODE_LANG_C), "c");
    cr_expect_str_eq(code_lang_name((code_lang)7), "?");
}

/* ---- Fences ------------------------------------------------------------------------- */

Test(code_extract, a_fenced_block_between_prose)
{
    expect_program("Here is my solution:\n```python\nn = int(input())\nprint(n * 2)\n```\n"
                   "It doubles n.\n",
                   CODE_LANG_PYTHON, 0, "n = int(input())\nprint(n * 2)\n", "the ```python block");
    expect_program("```c\nint main(void) { return 0; }\n```", CODE_LANG_C, 0,
                   "int main(void) { return 0; }\n", "the ```c block");
}

Test(code_extract, the_fence_may_be_indented_up_to_three_spaces)
{
    for (int k = 0; k <= 3; k++) {
        char s[128];
        snprintf(s, sizeof s, "%*s```python\nx = 1\n%*s```\n", k, "", k, "");
        expect_program(s, CODE_LANG_PYTHON, 0, "x = 1\n", "the ```python block");
    }
    /* four spaces is an indented code block, not a fence; a tab is as deep */
    expect_program("    ```python\n    x = 1\n    ```\n", CODE_LANG_PYTHON, 0, NULL,
                   "no ```python or untagged code block");
    expect_program("\t```python\nx = 1\n\t```\n", CODE_LANG_PYTHON, 0, NULL, NULL);
}

Test(code_extract, content_loses_as_many_leading_spaces_as_the_fence_had)
{
    /* fence at 2: "    a" keeps 2, " b" loses its 1, "c" none, "\tx" keeps its tab */
    expect_program("  ```python\n    a\n b\nc\n\tx\n  ```\n", CODE_LANG_PYTHON, 0,
                   "  a\nb\nc\n\tx\n", NULL);
    /* a fence at 0 strips nothing */
    expect_program("```python\n    a\n```\n", CODE_LANG_PYTHON, 0, "    a\n", NULL);
    /* the closing fence's own indentation does not matter */
    expect_program("```python\nif x:\n    y\n   ```\n", CODE_LANG_PYTHON, 0, "if x:\n    y\n", NULL);
}

Test(code_extract, tildes_fence_too_and_each_kind_closes_only_its_own)
{
    expect_program("~~~python\nprint(1)\n~~~\n", CODE_LANG_PYTHON, 0, "print(1)\n",
                   "the ~~~python block");
    expect_program("```python\na\n~~~\nb\n```\n", CODE_LANG_PYTHON, 0, "a\n~~~\nb\n", NULL);
    expect_program("~~~~c\na\n```\n~~~\nb\n~~~~\n", CODE_LANG_C, 0, "a\n```\n~~~\nb\n", NULL);
}

Test(code_extract, a_closing_fence_is_at_least_as_long_and_bare)
{
    /* shorter runs are content; longer ones close */
    expect_program("````python\na\n```\nb\n``````\nafter\n", CODE_LANG_PYTHON, 0, "a\n```\nb\n",
                   "the ```python block");
    /* trailing whitespace is allowed; any other text makes it content */
    expect_program("```python\na\n```   \t\nb\n", CODE_LANG_PYTHON, 0, "a\n", NULL);
    expect_program("```python\na\n``` x\nb\n```\n", CODE_LANG_PYTHON, 0, "a\n``` x\nb\n", NULL);
    expect_program("```python\na\n```python\nb\n```\n", CODE_LANG_PYTHON, 0, "a\n```python\nb\n",
                   NULL);
    /* a closing fence indented four spaces is content */
    expect_program("```python\na\n    ```\nb\n```\n", CODE_LANG_PYTHON, 0, "a\n    ```\nb\n", NULL);
    /* two characters are no fence at all */
    expect_program("``python\na\n``\n", CODE_LANG_PYTHON, 0, NULL, NULL);
}

Test(code_extract, a_backtick_fence_may_not_have_a_backtick_in_its_info_string)
{
    /* "```python `x`" is not a fence, so the "```" below it opens an empty block */
    expect_program("```python `x`\nprint(2)\n```\n", CODE_LANG_PYTHON, 0, NULL,
                   "only empty ```python or untagged code blocks");
    /* inline code on one line is not a block */
    expect_program("Use ```print(1)``` here.\n```python\nprint(3)\n```\n", CODE_LANG_PYTHON, 0,
                   "print(3)\n", "the ```python block");
    /* a tilde fence's info string may hold backticks */
    expect_program("~~~python `x`\nprint(3)\n~~~\n", CODE_LANG_PYTHON, 0, "print(3)\n", NULL);
}

Test(code_extract, the_tag_is_the_first_word_in_any_case)
{
    const char *python[] = {"python", "Python", "PYTHON", "python3", "Python3", "py", "PY", "py3",
                            "Py3", "python title=x", " python", "python\tsolution.py",
                            "python {.numberLines}", "  py  "};
    for (size_t k = 0; k < sizeof python / sizeof *python; k++) {
        char s[128];
        snprintf(s, sizeof s, "```%s\nprint(1)\n```\n", python[k]);
        expect_program(s, CODE_LANG_PYTHON, 0, "print(1)\n", NULL);
        expect_program(s, CODE_LANG_C, 0, NULL, "no ```c or untagged code block (1 other block)");
    }
    const char *c[] = {"c", "C", "h", "H", "c main.c"};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        char s[128];
        snprintf(s, sizeof s, "```%s\nint x;\n```\n", c[k]);
        expect_program(s, CODE_LANG_C, 0, "int x;\n", NULL);
        expect_program(s, CODE_LANG_PYTHON, 0, NULL, NULL);
    }
    /* the tag in `how` is the one written, lower-cased */
    expect_program("```PY3\nx\n```\n", CODE_LANG_PYTHON, 0, "x\n", "the ```py3 block");
    expect_program("```H\nx\n```\n", CODE_LANG_C, 0, "x\n", "the ```h block");
}

Test(code_extract, other_tags_never_match)
{
    const char *other[] = {"cpp", "c++", "C++", "cc", "cxx", "bash", "sh", "text", "txt",
                           "pythonic", "python2", "py2", "pyth", "ipython", "python3.11", "c#",
                           "objective-c", "csharp", "json", "output", "plaintext", "c,"};
    for (size_t k = 0; k < sizeof other / sizeof *other; k++) {
        char s[128];
        snprintf(s, sizeof s, "```%s\ncode\n```\n", other[k]);
        expect_program(s, CODE_LANG_PYTHON, 1, NULL, NULL);
        expect_program(s, CODE_LANG_C, 1, NULL, NULL);
    }
}

/* ---- Which block -------------------------------------------------------------------- */

Test(code_extract, the_last_tagged_block_wins)
{
    expect_program("```python\nfirst\n```\ntext\n```python\nsecond\n```\n```bash\nrun\n```\n"
                   "```python\nthird\n```\n",
                   CODE_LANG_PYTHON, 0, "third\n", "the last ```python block (4 of 4)");
    expect_program("```python\nfirst\n```\n```py\nsecond\n```\n```bash\nrun\n```\n",
                   CODE_LANG_PYTHON, 0, "second\n", "the last ```py block (2 of 3)");
}

Test(code_extract, a_tagged_block_beats_a_later_untagged_one)
{
    expect_program("```python\ncode\n```\nOutput:\n```\n42\n```\n", CODE_LANG_PYTHON, 0, "code\n",
                   "the ```python block (1 of 2)");
    expect_program("```\n42\n```\n```c\ncode\n```\n", CODE_LANG_C, 0, "code\n",
                   "the ```c block (2 of 2)");
}

Test(code_extract, the_last_untagged_block_when_none_is_tagged)
{
    expect_program("```\nfirst\n```\n```cpp\nno\n```\n```\nsecond\n```\n", CODE_LANG_C, 0,
                   "second\n", "the last untagged ``` block (3 of 3)");
    expect_program("~~~\nonly\n~~~\n", CODE_LANG_PYTHON, 0, "only\n", "the untagged ~~~ block");
    /* "```  " has an empty info string: untagged */
    expect_program("```  \nx\n```\n", CODE_LANG_PYTHON, 0, "x\n", "the untagged ``` block");
}

Test(code_extract, other_language_blocks_are_ignored)
{
    expect_program("```bash\npip install numpy\n```\n```python\nimport numpy\n```\n"
                   "```text\n[1 2]\n```\n",
                   CODE_LANG_PYTHON, 0, "import numpy\n", "the ```python block (2 of 3)");
    expect_program("```cpp\nint main() {}\n```\n```c++\nx\n```\n", CODE_LANG_C, 0, NULL,
                   "no ```c or untagged code block (2 other blocks)");
    /* with blocks present, unfenced does not take the whole response */
    expect_program("```cpp\nint main() {}\n```\n", CODE_LANG_C, 1, NULL,
                   "no ```c or untagged code block (1 other block)");
}

Test(code_extract, an_unclosed_block_runs_to_the_end)
{
    expect_program("Solution:\n```python\nprint(1)\nprint(2", CODE_LANG_PYTHON, 0,
                   "print(1)\nprint(2\n", "an unclosed ```python block");
    expect_program("```python\na\n```\n```c\nint x;\n", CODE_LANG_C, 0, "int x;\n",
                   "an unclosed ```c block (2 of 2)");
    expect_program("```\nx = 1\n", CODE_LANG_PYTHON, 0, "x = 1\n", "an unclosed untagged ``` block");
    /* an unclosed untagged block loses to a closed tagged one before it */
    expect_program("```python\ngood\n```\n```\ntrailing", CODE_LANG_PYTHON, 0, "good\n",
                   "the ```python block (1 of 2)");
    /* a fence with a shorter run does not close it */
    expect_program("`````python\na\n````\n", CODE_LANG_PYTHON, 0, "a\n````\n", NULL);
    /* a response cut short inside the closing fence */
    expect_program("```python\na\n``", CODE_LANG_PYTHON, 0, "a\n``\n", NULL);
}

Test(code_extract, blocks_of_only_whitespace_are_passed_over)
{
    expect_program("```python\nprint(1)\n```\n```python\n  \n\t\n\r\n\f\v\n```\n", CODE_LANG_PYTHON,
                   0, "print(1)\n", "the ```python block (1 of 2)");
    expect_program("```python\n```\n```python\n\n```\n", CODE_LANG_PYTHON, 0, NULL,
                   "only empty ```python or untagged code blocks");
    /* an empty tagged block lets an untagged one through */
    expect_program("```\nx\n```\n```python\n \n```\n", CODE_LANG_PYTHON, 0, "x\n",
                   "the untagged ``` block (1 of 2)");
    /* and "last" counts only blocks with code */
    expect_program("```python\na\n```\n```python\n```\n", CODE_LANG_PYTHON, 0, "a\n",
                   "the ```python block (1 of 2)");
    /* a fence at the very end opens an empty block */
    expect_program("```python", CODE_LANG_PYTHON, 0, NULL, NULL);
    /* an empty block stops unfenced from taking the whole response */
    expect_program("print(1)\n```python\n```\n", CODE_LANG_PYTHON, 1, NULL, NULL);
}

Test(code_extract, crlf_line_endings_become_lf)
{
    expect_program("Code:\r\n```python\r\nif x:\r\n    y\r\n```\r\nDone\r\n", CODE_LANG_PYTHON, 0,
                   "if x:\n    y\n", "the ```python block");
    /* a lone \r inside a line stays; a \r at the very end ends the line */
    expect_program("```c\r\na\rb\r\nc\r", CODE_LANG_C, 0, "a\rb\nc\n", "an unclosed ```c block");
    /* the fence lines themselves may end in \r\n */
    expect_program("~~~python3 \r\nx\r\n~~~ \r\n", CODE_LANG_PYTHON, 0, "x\n", NULL);
    expect_program("print(1)\r\nprint(2)\r\n", CODE_LANG_PYTHON, 1, "print(1)\nprint(2)\n", NULL);
}

Test(code_extract, unfenced_takes_the_whole_response_only_when_asked_and_unfenced)
{
    expect_program("n = int(input())\nprint(n)", CODE_LANG_PYTHON, 1, "n = int(input())\nprint(n)\n",
                   "the whole response (no code fence)");
    expect_program("n = int(input())\nprint(n)", CODE_LANG_PYTHON, 0, NULL,
                   "no ```python or untagged code block");
    /* leading and trailing blank lines go, indentation and inner blank lines stay */
    expect_program("\n  \n\t\n  x = 1\n\ny\n \n\n", CODE_LANG_PYTHON, 1, "  x = 1\n\ny\n", NULL);
    expect_program("", CODE_LANG_PYTHON, 1, NULL, "a blank response");
    expect_program(" \n\t\r\n\n", CODE_LANG_C, 1, NULL, "a blank response");
    expect_program("", CODE_LANG_PYTHON, 0, NULL, "no ```python or untagged code block");
    /* a line that only looks like a fence still stops it */
    expect_program("print(1)\n```python print(2)```\n", CODE_LANG_PYTHON, 1, NULL, NULL);
    expect_program("print(1)\n~~~~~~~~~~ notes\n", CODE_LANG_PYTHON, 1, NULL, NULL);
    /* but backticks elsewhere on a line do not */
    expect_program("s = '```'\nprint(s)\n", CODE_LANG_PYTHON, 1, "s = '```'\nprint(s)\n", NULL);
    expect_program("    ```\nx\n", CODE_LANG_PYTHON, 1, "    ```\nx\n", NULL);
}

/* ---- Bytes -------------------------------------------------------------------------- */

Test(code_extract, nul_bytes_are_ordinary_bytes)
{
    static const char s[] = "\0before\n```python\nprint(\0)\n\0\n```\n\0after";
    found f = extract_bytes(s, sizeof s - 1, CODE_LANG_PYTHON, 0);
    cr_assert_eq(f.rc, 1);
    cr_expect_eq(f.len, 11);
    cr_expect_eq(memcmp(f.program, "print(\0)\n\0\n", 11), 0);
    cr_expect_str_eq(f.how, "the ```python block");
    free(f.program);
    /* a NUL makes a block non-empty, and in a tag it is another tag */
    static const char z[] = "```python\n\0\n```\n";
    f = extract_bytes(z, sizeof z - 1, CODE_LANG_PYTHON, 0);
    cr_expect_eq(f.rc, 1);
    cr_expect_eq(f.len, 2);
    free(f.program);
    static const char t[] = "```py\0thon\nx\n```\n";
    f = extract_bytes(t, sizeof t - 1, CODE_LANG_PYTHON, 0);
    cr_expect_eq(f.rc, 0);
    /* bare code with NULs */
    static const char u[] = "a\0b\n";
    f = extract_bytes(u, sizeof u - 1, CODE_LANG_C, 1);
    cr_assert_eq(f.rc, 1);
    cr_expect_eq(f.len, 4);
    cr_expect_eq(memcmp(f.program, "a\0b\n", 4), 0);
    free(f.program);
}

Test(code_extract, reads_nothing_past_len)
{
    /* len cuts the response inside its block: the block is unclosed there */
    const char *s = "```python\nprint(1)\n```\nprint(2)\n";
    found f = extract_bytes(s, 15, CODE_LANG_PYTHON, 0);
    cr_assert_eq(f.rc, 1);
    cr_expect_str_eq(f.program, "print\n");
    cr_expect_str_eq(f.how, "an unclosed ```python block");
    free(f.program);
    /* and inside the fence's tag */
    f = extract_bytes(s, 5, CODE_LANG_PYTHON, 0);
    cr_expect_eq(f.rc, 0);
    f = extract_bytes(s, 0, CODE_LANG_PYTHON, 1);
    cr_expect_eq(f.rc, 0);
    /* no `how` wanted */
    char *p = NULL;
    size_t n = 1;
    cr_expect_eq(code_extract(s, strlen(s), CODE_LANG_PYTHON, 0, &p, &n, NULL, 0), 1);
    cr_expect_str_eq(p, "print(1)\n");
    free(p);
}

Test(code_extract, every_phrase_fits_the_how_capacity)
{
    /* the longest phrases: a wide "(k of n)" and the longest tag */
    char *s = malloc(4 * 100000 + 64);
    cr_assert_not_null(s);
    size_t o = 0;
    for (int k = 0; k < 100000; k++) {
        memcpy(s + o, "```\n", 4);
        o += 4;
    }
    memcpy(s + o, "```python3\nx\n", 13);
    o += 13;
    found f = extract_bytes(s, o, CODE_LANG_PYTHON, 0);
    cr_expect_str_eq(f.how, "an unclosed ```python3 block (50001 of 50001)");
    free(f.program);
    f = extract_bytes(s, o - 13, CODE_LANG_PYTHON, 0);
    cr_expect_str_eq(f.how, "only empty ```python or untagged code blocks");
    free(s);
    f = extract("```x\n```\n```y\n```\n", CODE_LANG_PYTHON, 0);
    cr_expect_str_eq(f.how, "no ```python or untagged code block (2 other blocks)");
}

Test(code_extract, megabytes_of_hostile_text_take_linear_time)
{
    size_t n = 8u << 20;
    char *s = malloc(n);
    cr_assert_not_null(s);
    const char *patterns[] = {"```\n", "```python\n", "`", "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n",
                              "\n", "   ```` x`\n", "```python\nx\n", " ", "\r\n"};
    for (size_t k = 0; k < sizeof patterns / sizeof *patterns; k++) {
        size_t m = strlen(patterns[k]);
        for (size_t i = 0; i < n; i++)
            s[i] = patterns[k][i % m];
        double t0 = seconds();
        for (int lang = 0; lang < 2; lang++)
            for (int unfenced = 0; unfenced < 2; unfenced++) {
                char *p = NULL, how[CODE_HOW_MAX];
                size_t len = 0;
                int rc = code_extract(s, n, (code_lang)lang, unfenced, &p, &len, how, sizeof how);
                cr_assert_geq(rc, 0);
                cr_assert_leq(len, n + 1);
                free(p);
            }
        double dt = seconds() - t0;
        cr_expect_lt(dt, 4.0, "pattern %zu took %.2f s", k, dt);
    }
    free(s);
}

/* ---- Judging output ----------------------------------------------------------------- */

Test(code_judge, equal_token_sequences_match)
{
    expect_match("1 2 3\n", "1 2 3", &EXACT);
    expect_match("hello world", "hello world\n", NULL);
    expect_match("", "", &EXACT);
    expect_match(" \n\t\r\n\v\f", "\n", &EXACT);
    expect_match("YES\n", "YES", &EXACT);
}

Test(code_judge, whitespace_between_tokens_does_not_matter)
{
    expect_match("1  2\t3   \r\n\n\n", "1\n2\n3", &EXACT);
    expect_match("a\r\nb\r\n", "a\nb\n", &EXACT);
    expect_match("\n\n  x\v\fy  ", "x y", &EXACT);
    /* but a token split or joined does */
    expect_mismatch("12", "1 2", &EXACT, "token 1 (line 1): expected '1', got '12'");
    expect_mismatch("1 2", "12", &EXACT, "token 1 (line 1): expected '12', got '1'");
}

Test(code_judge, a_wrong_token_is_named_with_its_line_in_the_output)
{
    expect_mismatch("1\n2\n\n6 7\n", "1 2 5 7", &EXACT, "token 3 (line 4): expected '5', got '6'");
    expect_mismatch("1\r\n2\r\n4\r\n", "1\n2\n3\n", &EXACT,
                    "token 3 (line 3): expected '3', got '4'");
    expect_mismatch("\n\n\nNo\n", "Yes", &EXACT, "token 1 (line 4): expected 'Yes', got 'No'");
    /* case matters */
    expect_mismatch("yes", "YES", &EXACT, "token 1 (line 1): expected 'YES', got 'yes'");
}

Test(code_judge, missing_tokens_are_counted)
{
    expect_mismatch("1 2", "1 2 3", &EXACT, "output ends after 2 tokens, expected 3 (next '3')");
    expect_mismatch("1\n", "1\n2\n3\n4", &EXACT,
                    "output ends after 1 token, expected 4 (next '2')");
    expect_mismatch("", "1 2 3", &EXACT, "no output, expected 3 tokens");
    expect_mismatch(" \n\n", "7", &EXACT, "no output, expected 1 token");
}

Test(code_judge, extra_tokens_are_counted)
{
    expect_mismatch("1 2 3 4\ndebug x", "1 2 3", &EXACT,
                    "3 extra tokens after the expected output (line 1: '4')");
    expect_mismatch("1 2 3\n\ndone\n", "1 2 3", &EXACT,
                    "1 extra token after the expected output (line 3: 'done')");
    expect_mismatch("\nhi there", "", &EXACT, "expected no output, got 2 tokens (line 2: 'hi')");
    expect_mismatch("x", " \n", &EXACT, "expected no output, got 1 token (line 1: 'x')");
}

Test(code_judge, absolute_tolerance)
{
    code_judge_opts o = {1e-6, 0};
    expect_match("0.3333333", "0.33333333", &o);
    expect_match("0.333333 2", "0.3333333333 2", &o);
    expect_match("-1.0000005", "-1", &o);
    expect_match("1.000001", "1", &o); /* exactly at the tolerance: 1e-6 apart, within rounding */
    expect_mismatch("0.334", "0.333", &o, "token 1 (line 1): expected '0.333', got '0.334'");
    expect_mismatch("1 2.01", "1 2", &o, "token 2 (line 1): expected '2', got '2.01'");
    code_judge_opts half = {0.5, 0};
    expect_match("1.5", "1", &half);
    expect_match("0.5", "1", &half);
    expect_mismatch("1.5001", "1", &half, NULL);
}

Test(code_judge, relative_tolerance_scales_with_the_expected_value)
{
    code_judge_opts o = {0, 1e-9};
    expect_match("1000000000.5", "1000000000", &o);
    expect_mismatch("1000000002", "1000000000", &o, NULL);
    expect_mismatch("1.5", "1", &o, NULL);
    expect_mismatch("0.000001", "0", &o, NULL); /* 0 expected: only exactly 0 is close */
    expect_match("0.0", "0", &o);
    /* relative to want, not got */
    code_judge_opts tenth = {0, 0.1};
    expect_match("110", "100", &tenth);
    expect_mismatch("100", "111.2", &tenth, NULL); /* within 10% of 100, not of 111.2 */
    /* the larger of the two tolerances */
    code_judge_opts both = {0.1, 0.5};
    expect_match("150", "100", &both);
    expect_mismatch("151", "100", &both, NULL);
    expect_match("0.05", "0", &both);
    expect_mismatch("0.2", "0", &both, NULL);
}

Test(code_judge, numbers_in_any_plain_decimal_form_with_a_tolerance)
{
    code_judge_opts o = {1e-9, 0};
    const char *pairs[][2] = {{"5", "5.0"},     {"5.", "5"},       {".5", "0.5"},
                              {"5e-1", "0.5"},  {"5E-1", "0.5"},   {"+5", "5"},
                              {"-0", "0"},      {"0.0", "-0.000"}, {"1e3", "1000"},
                              {"1E+3", "1000"}, {"007", "7"},      {"2.50000", "2.5"},
                              {"-1.5e0", "-1.50"}};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        expect_match(pairs[k][0], pairs[k][1], &o);
        expect_match(pairs[k][1], pairs[k][0], &o);
        /* without a tolerance they are different tokens */
        expect_mismatch(pairs[k][0], pairs[k][1], &EXACT, NULL);
    }
}

Test(code_judge, other_tokens_compare_exactly_with_a_tolerance_on)
{
    code_judge_opts o = {0.5, 0.5};
    expect_mismatch("abc", "abd", &o, "token 1 (line 1): expected 'abd', got 'abc'");
    expect_mismatch("Yes", "yes", &o, NULL);
    const char *pairs[][2] = {{"0x10", "16"},    {"0x10", "0x11"}, {"inf", "1e999"},
                              {"1,000", "1000"}, {"1_0", "10"},    {"5f", "5"},
                              {"1e", "1"},       {"--5", "5"},     {"5-", "5"},
                              {".", "0"},        {"e5", "0"},      {"1.2.3", "1.2"},
                              {"1e5.0", "1e5"},  {"(1)", "1"},     {"1/2", "0.5"},
                              {"nan", "nan1"},   {"Infinity", "inf"}};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        expect_mismatch(pairs[k][0], pairs[k][1], &o, NULL);
        expect_mismatch(pairs[k][1], pairs[k][0], &o, NULL);
    }
    /* equal bytes always match, numbers or not */
    expect_match("nan inf 0x10 abc", "nan inf 0x10 abc", &o);
}

Test(code_judge, infinite_values_match_only_equal_ones)
{
    code_judge_opts o = {1e-6, 1e-6};
    expect_match("1e999", "2e999", &o);
    expect_match("-1e999", "-1e5000", &o);
    expect_mismatch("1e999", "-1e999", &o, NULL);
    expect_mismatch("1e999", "1e308", &o, NULL);
    expect_mismatch("1e308", "1e999", &o, NULL);
    expect_mismatch("1e308", "-1e308", &o, NULL); /* the difference overflows */
    code_judge_opts huge = {1e300, 0};
    expect_match("1e300", "1.5e300", &huge);
    expect_match("1e-999", "0", &o); /* underflows to 0 */
}

Test(code_judge, long_numbers_are_read_to_the_last_digit)
{
    code_judge_opts o = {1e-9, 0};
    expect_match("0.333333333333333333333333333333333333333333333333333333333333", "0.3333333333",
                 &o);
    code_judge_opts r = {0, 1e-12};
    expect_match("123456789012345678901234567890123456789012345678901234567890",
                 "1.2345678901234567890e59", &r);
    expect_mismatch("123456789012345678901234567890123456789012345678901234567890",
                    "1.2345678901234567890e60", &r, NULL);
    /* a thousand zeros after the point, and an exponent that brings them back */
    char a[1100], b[1100];
    memcpy(a, "0.", 2);
    memset(a + 2, '0', 1000);
    memcpy(a + 1002, "1e1001", 7);
    expect_match(a, "1", &r);
    memcpy(b, "1", 1);
    memset(b + 1, '0', 300);
    memcpy(b + 301, ".000", 5);
    expect_match(b, "1e300", &r);
    expect_mismatch(b, "1e301", &r, NULL);
    expect_match("1e0000000000000000000000000000000003", "1000", &r);
}

Test(code_judge, a_bad_tolerance_means_none)
{
    code_judge_opts neg = {-1, -1};
    expect_mismatch("5.0", "5", &neg, NULL);
    code_judge_opts nan = {__builtin_nan(""), __builtin_nan("")};
    expect_mismatch("5.0", "5", &nan, NULL);
    expect_mismatch("5.0", "5", NULL, NULL);
    code_judge_opts mixed = {__builtin_nan(""), 0.1};
    expect_match("5.1", "5", &mixed);
}

Test(code_judge, reading_numbers_does_not_depend_on_the_locale)
{
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
        cr_skip_test("no locale with a decimal comma is installed");
    code_judge_opts o = {1e-9, 0};
    expect_match("0.5", "5e-1", &o);
    expect_mismatch("0,5", "0.5", &o, NULL);
    setlocale(LC_NUMERIC, "C");
}

Test(code_judge, long_tokens_are_cut_in_reasons)
{
    char got[200], want[200];
    memset(got, 'g', 100);
    got[100] = '\0';
    memset(want, 'w', 100);
    want[100] = '\0';
    expect_mismatch(got, want, &EXACT,
                    "token 1 (line 1): expected 'wwwwwwwwwwwwwwwwwwwwwwww...', "
                    "got 'gggggggggggggggggggggggg...'");
    /* a cut falls between characters, and control bytes are replaced */
    expect_mismatch("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                    "a\x01\xff", &EXACT,
                    "token 1 (line 1): expected 'a?" "?', got '\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...'");
}

Test(code_judge, a_reason_cut_to_its_capacity_stays_valid_utf8)
{
    /* two cut tokens of 3- and 4-byte characters after 100000 equal tokens
     * on as many lines: 101 bytes, and a cut at 95 falls inside an emoji */
    char *got = malloc(200100), *want = malloc(200100);
    cr_assert(got && want);
    size_t g = 0, w = 0;
    for (int k = 0; k < 100000; k++) {
        memcpy(got + g, "x\n", 2), g += 2;
        memcpy(want + w, "x ", 2), w += 2;
    }
    for (int k = 0; k < 20; k++) {
        memcpy(got + g, "\xf0\x9f\x98\x80", 4), g += 4;
        memcpy(want + w, "\xe2\x82\xac\xe2", 4), w += 4; /* a euro sign, a stray lead byte */
    }
    const char *head = "token 100001 (line 100001): expected '";
    for (size_t cap = 96; cap <= CODE_WHY_MAX; cap++) {
        verdict v = judge_bytes(got, g, want, w, &EXACT, cap);
        cr_expect_eq(v.match, 0);
        cr_expect_lt(strlen(v.why), cap);
        cr_expect(valid_utf8(v.why), "cap %zu: invalid UTF-8 in '%s'", cap, v.why);
        cr_expect_eq(strncmp(v.why, head, strlen(head)), 0, "%s", v.why);
        if (cap == 96)
            cr_expect_eq(strlen(v.why), 93, "not cut between characters: %s", v.why);
    }
    /* the documented capacity holds the longest reason uncut */
    verdict v = judge_bytes(got, g, want, w, &EXACT, CODE_WHY_MAX);
    cr_expect_eq(strlen(v.why), 101, "%s", v.why);
    free(got);
    free(want);
    cr_expect_eq(v.why[strlen(v.why) - 1], '\'', "%s", v.why);
    /* no why wanted */
    cr_expect_eq(code_output_matches("1", 1, "2", 1, NULL, NULL, 0), 0);
    char tiny[1] = {'X'};
    cr_expect_eq(code_output_matches("1", 1, "2", 1, NULL, tiny, 1), 0);
    cr_expect_eq(tiny[0], '\0');
}

Test(code_judge, nul_bytes_are_ordinary_bytes)
{
    verdict v = judge_bytes("1\0 2", 4, "1\0 2", 4, &EXACT, CODE_WHY_MAX);
    cr_expect_eq(v.match, 1);
    v = judge_bytes("1\0 2", 4, "1 2", 3, &EXACT, CODE_WHY_MAX);
    cr_expect_eq(v.match, 0);
    cr_expect_str_eq(v.why, "token 1 (line 1): expected '1', got '1?'");
    v = judge_bytes("\0", 1, "", 0, &EXACT, CODE_WHY_MAX);
    cr_expect_eq(v.match, 0);
    cr_expect_str_eq(v.why, "expected no output, got 1 token (line 1: '?')");
    /* a NUL in a number makes it no number */
    code_judge_opts o = {1, 1};
    v = judge_bytes("5\0", 2, "5", 1, &o, CODE_WHY_MAX);
    cr_expect_eq(v.match, 0);
}

Test(code_judge, megabytes_of_output_take_linear_time)
{
    size_t n = 8u << 20;
    char *a = malloc(n), *b = malloc(n);
    cr_assert(a && b);
    code_judge_opts o = {1e-9, 1e-9};
    /* many short tokens, equal and then one off at the end */
    for (size_t i = 0; i < n; i++)
        a[i] = i % 2 ? ' ' : '7';
    memcpy(b, a, n);
    double t0 = seconds();
    cr_expect_eq(code_output_matches(a, n, b, n, &o, NULL, 0), 1);
    b[n - 2] = '8';
    char why[CODE_WHY_MAX];
    cr_expect_eq(code_output_matches(a, n, b, n, &o, why, sizeof why), 0);
    cr_expect_str_eq(why, "token 4194304 (line 1): expected '8', got '7'");
    /* one huge numeric token each, nearly equal; one huge token against many */
    memset(a, '1', n);
    memset(b, '1', n);
    a[1] = b[1] = '.';
    b[n - 1] = '2';
    cr_expect_eq(code_output_matches(a, n, b, n, &o, why, sizeof why), 1, "%s", why);
    cr_expect_eq(code_output_matches(a, n, b, n, &EXACT, why, sizeof why), 0);
    for (size_t i = 0; i < n; i++)
        b[i] = i % 2 ? '\n' : '1';
    cr_expect_eq(code_output_matches(a, n, b, n, &o, why, sizeof why), 0);
    cr_expect_eq(code_output_matches(b, n, b, 1, &o, why, sizeof why), 0);
    cr_expect_str_eq(why, "4194303 extra tokens after the expected output (line 2: '1')");
    double dt = seconds() - t0;
    /* a quadratic comparison of 4 MiB takes hours; linear takes well under a
     * second plainly, a few under a sanitizer on loaded cores (4.02 s seen) */
    cr_expect_lt(dt, 30.0, "took %.2f s", dt);
    free(a);
    free(b);
}
