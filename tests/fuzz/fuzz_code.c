/*
 * fuzz_code.c: libFuzzer target for the `code` reward's text handling
 * (plugins/rewards/code/extract.c and judge.c). Input: a response, then a
 * 0xff byte, then an expected output (no 0xff: the response only, nothing
 * expected). Nothing may crash or read out of bounds, and:
 *   extract  for both languages, with and without `unfenced`: a program is
 *            NUL-terminated, has code in it (not only whitespace), ends in
 *            "\n" and is at most len + 1 bytes; `how` is short ASCII that
 *            says whether one was found; `unfenced` only ever adds a program;
 *            and on small responses a line-array reimplementation of the
 *            rules (extract.h) finds the same program
 *   judge    every text matches itself and a re-spaced copy of itself, with
 *            and without a tolerance; without one the verdict is the same
 *            both ways round and is "the tokens joined by single spaces are
 *            equal"; a tolerance only adds matches; `why` is "" on a match,
 *            else non-empty, valid UTF-8 and within its capacity, whatever
 *            the capacity (1 to CODE_WHY_MAX, from the input's size)
 *
 *   build-fuzz/tests/fuzz/fuzz_code -max_total_time=600 corpus tests/fuzz/corpus_code
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/reward_text.h"
#include "extract.h"
#include "judge.h"

#define SMALL 512 /* responses up to this many bytes are checked against the reference */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- A reference for code_extract: lines first, then the rules ---------------------- */

typedef struct ref_line {
    const char *p;
    size_t n;
} ref_line;

/* Lines of s[0..len): split at '\n', each less one final '\r'. */
static size_t ref_lines(const char *s, size_t len, ref_line *out)
{
    size_t k = 0, a = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len && a == len)
            break; /* nothing after the last "\n" */
        if (i == len || s[i] == '\n') {
            size_t n = i - a;
            if (n && s[a + n - 1] == '\r')
                n--;
            out[k++] = (ref_line){s + a, n};
            a = i + 1;
        }
    }
    return k;
}

static size_t lead_spaces(ref_line l)
{
    size_t i = 0;
    while (i < l.n && l.p[i] == ' ')
        i++;
    return i;
}

static size_t run_of(ref_line l, size_t i, char c)
{
    size_t j = i;
    while (j < l.n && l.p[j] == c)
        j++;
    return j - i;
}

/* 0: not fence-like; 1: opens (char, run, indent, tag set); -1: fence-like only. */
static int ref_open(ref_line l, char *ch, size_t *run, size_t *indent, ref_line *tag)
{
    size_t sp = lead_spaces(l);
    if (sp > 3 || sp == l.n || (l.p[sp] != '`' && l.p[sp] != '~'))
        return 0;
    size_t r = run_of(l, sp, l.p[sp]);
    if (r < 3)
        return 0;
    for (size_t i = sp + r; i < l.n; i++)
        if (l.p[sp] == '`' && l.p[i] == '`')
            return -1;
    *ch = l.p[sp];
    *run = r;
    *indent = sp;
    size_t t = sp + r;
    while (t < l.n && (l.p[t] == ' ' || l.p[t] == '\t' || l.p[t] == '\r' || l.p[t] == '\f' ||
                       l.p[t] == '\v'))
        t++;
    size_t e = t;
    while (e < l.n && !(l.p[e] == ' ' || l.p[e] == '\t' || l.p[e] == '\r' || l.p[e] == '\f' ||
                        l.p[e] == '\v'))
        e++;
    *tag = (ref_line){l.p + t, e - t};
    return 1;
}

static int ref_closes(ref_line l, char ch, size_t run)
{
    size_t sp = lead_spaces(l);
    if (sp > 3)
        return 0;
    size_t r = run_of(l, sp, ch);
    if (r < run)
        return 0;
    for (size_t i = sp + r; i < l.n; i++)
        if (!is_space(l.p[i]) || l.p[i] == '\n')
            return 0;
    return 1;
}

static int ref_tag(ref_line t, code_lang lang)
{
    const char *py[] = {"python", "python3", "py", "py3"}, *c[] = {"c", "h"};
    const char **names = lang == CODE_LANG_PYTHON ? py : c;
    size_t n = lang == CODE_LANG_PYTHON ? 4 : 2;
    char low[16];
    if (t.n >= sizeof low)
        return 0;
    for (size_t i = 0; i < t.n; i++)
        low[i] = t.p[i] >= 'A' && t.p[i] <= 'Z' ? (char)(t.p[i] + 32) : t.p[i];
    for (size_t k = 0; k < n; k++)
        if (strlen(names[k]) == t.n && memcmp(low, names[k], t.n) == 0)
            return 1;
    return 0;
}

static int ref_blank(ref_line l)
{
    for (size_t i = 0; i < l.n; i++)
        if (!is_space(l.p[i]))
            return 0;
    return 1;
}

/* The program the rules give, into out (len + 2 bytes); its length, or -1 for none. */
static long ref_extract(const char *s, size_t len, code_lang lang, int unfenced, char *out)
{
    ref_line *l = malloc((len + 1) * sizeof *l);
    if (!l)
        abort();
    size_t nl = ref_lines(s, len, l);
    long best[2][3] = {{-1, 0, 0}, {-1, 0, 0}}; /* tagged, untagged: first line, end, indent */
    int fence_like = 0;
    for (size_t i = 0; i < nl;) {
        char ch;
        size_t run, indent;
        ref_line tag;
        int k = ref_open(l[i], &ch, &run, &indent, &tag);
        fence_like |= k != 0;
        if (k <= 0) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < nl && !ref_closes(l[j], ch, run))
            j++;
        int empty = 1;
        for (size_t m = i + 1; m < j; m++)
            empty &= ref_blank(l[m]);
        int which = tag.n == 0 ? 1 : ref_tag(tag, lang) ? 0 : -1;
        if (which >= 0 && !empty) {
            best[which][0] = (long)i + 1;
            best[which][1] = (long)j;
            best[which][2] = (long)indent;
        }
        i = j < nl ? j + 1 : nl;
    }
    long from = -1, to = 0, indent = 0;
    if (best[0][0] >= 0)
        from = best[0][0], to = best[0][1], indent = best[0][2];
    else if (best[1][0] >= 0)
        from = best[1][0], to = best[1][1], indent = best[1][2];
    else if (unfenced && !fence_like) {
        for (size_t i = 0; i < nl; i++)
            if (!ref_blank(l[i])) {
                if (from < 0)
                    from = (long)i;
                to = (long)i + 1;
            }
    }
    long o = -1;
    if (from >= 0) {
        o = 0;
        for (long i = from; i < to; i++) {
            size_t cut = 0;
            while (cut < (size_t)indent && cut < l[i].n && l[i].p[cut] == ' ')
                cut++;
            memcpy(out + o, l[i].p + cut, l[i].n - cut);
            o += (long)(l[i].n - cut);
            out[o++] = '\n';
        }
    }
    free(l);
    return o;
}

/* ---- Checks ------------------------------------------------------------------------- */

static void check_extract(const char *s, size_t len, code_lang lang, int unfenced, char **program,
                          size_t *plen)
{
    char how[CODE_HOW_MAX];
    memset(how, 'X', sizeof how);
    int rc = code_extract(s, len, lang, unfenced, program, plen, how, sizeof how);
    if (rc < 0) { /* out of memory under the fuzzer's limit: nothing to check */
        if (*program)
            abort();
        return;
    }
    if (rc > 1)
        abort();
    size_t hl = strnlen(how, sizeof how);
    if (hl + 1 >= sizeof how || hl == 0)
        abort(); /* missing or cut */
    for (size_t i = 0; i < hl; i++)
        if (how[i] < 0x20 || how[i] > 0x7e)
            abort();
    int said_found = strncmp(how, "the ", 4) == 0 || strncmp(how, "an unclosed ", 12) == 0;
    if (said_found != rc)
        abort();
    if (rc == 0) {
        if (*program || *plen)
            abort();
        return;
    }
    if (!*program || *plen > len + 1 || (*program)[*plen] != '\0' || (*program)[*plen - 1] != '\n')
        abort();
    size_t k = 0;
    while (k < *plen && is_space((*program)[k]))
        k++;
    if (k == *plen)
        abort(); /* only whitespace */
    if (len <= SMALL) {
        char ref[SMALL + 2];
        long n = ref_extract(s, len, lang, unfenced, ref);
        if (n < 0 || (size_t)n != *plen || memcmp(ref, *program, *plen) != 0)
            abort(); /* the rules and the scanner disagree */
    }
}

static void check_why(int match, const char *why, size_t cap)
{
    size_t n = strnlen(why, cap);
    if (n >= cap || (match && n) || (!match && !n && cap > 1))
        abort();
    for (size_t i = 0; i < n;) {
        size_t k = tern_utf8_len((const unsigned char *)why + i, n - i);
        if (!k)
            abort();
        i += k;
    }
}

static int judged(const char *got, size_t gl, const char *want, size_t wl,
                  const code_judge_opts *o, size_t cap)
{
    char why[CODE_WHY_MAX];
    memset(why, 'X', sizeof why);
    int m = code_output_matches(got, gl, want, wl, o, why, cap);
    if (m != 0 && m != 1)
        abort();
    check_why(m, why, cap);
    return m;
}

/* The tokens of s[0..len) joined by single spaces, into out (len bytes at least). */
static size_t normalise(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && is_space(s[i]))
            i++;
        if (i == len)
            break;
        if (o)
            out[o++] = ' ';
        while (i < len && !is_space(s[i]))
            out[o++] = s[i++];
    }
    return o;
}

/* Each whitespace run of s replaced by a different one, into out (2 * len + 2 bytes). */
static size_t respace(const char *s, size_t len, char *out)
{
    static const char *runs[] = {"\n", " \t", "\r\n", "\n\n\v", "\f "};
    size_t o = 0, r = 0;
    out[o++] = '\n';
    for (size_t i = 0; i < len;) {
        if (is_space(s[i])) {
            while (i < len && is_space(s[i]))
                i++;
            const char *w = runs[r++ % 5];
            size_t wl = strlen(w);
            if (o + wl > 2 * len + 1)
                wl = 1;
            memcpy(out + o, w, wl);
            o += wl;
        } else
            out[o++] = s[i++];
    }
    return o;
}

/* `cap` for one of the calls: any size works (a cut falls between characters),
 * the documented 96 and up only keep reasons whole. */
static void check_judge(const char *got, size_t gl, const char *want, size_t wl, size_t cap)
{
    static const code_judge_opts exact = {0, 0}, tol = {1e-6, 1e-6}, loose = {0.5, 0};
    const code_judge_opts *all[] = {&exact, &tol, &loose, NULL};
    int m[4];
    for (int k = 0; k < 4; k++) {
        m[k] = judged(got, gl, want, wl, all[k], k == 1 ? cap : CODE_WHY_MAX);
        if (judged(got, gl, got, gl, all[k], CODE_WHY_MAX) != 1 ||
            judged(want, wl, want, wl, all[k], CODE_WHY_MAX) != 1)
            abort(); /* a text always matches itself */
    }
    if (m[3] != m[0] || (m[0] && (!m[1] || !m[2])))
        abort(); /* NULL is no tolerance; a tolerance only adds matches */
    if (judged(want, wl, got, gl, &exact, CODE_WHY_MAX) != m[0])
        abort(); /* exact matching is symmetric */
    char *a = malloc(gl + 1), *b = malloc(wl + 1), *r = malloc(2 * gl + 2);
    if (!a || !b || !r)
        abort();
    size_t an = normalise(got, gl, a), bn = normalise(want, wl, b);
    if (m[0] != (an == bn && memcmp(a, b, an) == 0))
        abort(); /* exact matching is equality of the token sequences */
    size_t rn = respace(got, gl, r);
    for (int k = 0; k < 3; k++)
        if (judged(r, rn, got, gl, all[k], CODE_WHY_MAX) != 1)
            abort(); /* whitespace between tokens never matters */
    free(a);
    free(b);
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *cut = memchr(data, 0xff, size);
    size_t rlen = cut ? (size_t)(cut - data) : size;
    size_t wlen = cut ? size - rlen - 1 : 0;
    /* exactly sized copies: reads past them are caught */
    char *resp = malloc(rlen ? rlen : 1), *want = malloc(wlen ? wlen : 1);
    if (!resp || !want)
        abort();
    memcpy(resp, data, rlen);
    if (wlen)
        memcpy(want, cut + 1, wlen);
    for (int lang = 0; lang < 2; lang++) {
        char *p[2] = {NULL, NULL};
        size_t n[2] = {0, 0};
        for (int unfenced = 0; unfenced < 2; unfenced++)
            check_extract(resp, rlen, (code_lang)lang, unfenced, &p[unfenced], &n[unfenced]);
        if (p[0] && (!p[1] || n[0] != n[1] || memcmp(p[0], p[1], n[0]) != 0))
            abort(); /* unfenced only adds a program where there was none */
        if (p[1])
            check_judge(p[1], n[1], want, wlen, 96);
        free(p[0]);
        free(p[1]);
    }
    check_judge(resp, rlen, want, wlen, 1 + size % CODE_WHY_MAX);
    free(resp);
    free(want);
    return 0;
}
