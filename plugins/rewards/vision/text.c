/* text.c: answers in responses, and ANLS (see text.h). */
#include "text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(int c) { return is_digit(c) || is_letter(c); }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Does s[i..n) start with the ASCII text t, in any case? */
static int starts_ci(const char *s, size_t n, size_t i, const char *t)
{
    size_t k = 0;
    for (; t[k]; k++)
        if (i + k >= n || lower((unsigned char)s[i + k]) != (unsigned char)t[k])
            return 0;
    return 1;
}

static int starts_with(const char *s, size_t n, size_t i, const char *t)
{
    size_t k = strlen(t);
    return k <= n - i && memcmp(s + i, t, k) == 0;
}

void vis_trim(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    while (n && is_space((unsigned char)p[0]))
        p++, n--;
    while (n && is_space((unsigned char)p[n - 1]))
        n--;
    *s = p;
    *len = n;
}

void vis_answer_region(const char *s, size_t len, const char **out, size_t *out_len)
{
    size_t open = SIZE_MAX;
    for (size_t i = 0; i + 8 <= len; i++)
        if (s[i] == '<' && starts_ci(s, len, i, "<answer>"))
            open = i + 8;
    if (open == SIZE_MAX) {
        *out = s;
        *out_len = len;
        return;
    }
    size_t end = len;
    for (size_t i = open; i + 9 <= len; i++)
        if (s[i] == '<' && starts_ci(s, len, i, "</answer>")) {
            end = i;
            break;
        }
    *out = s + open;
    *out_len = end - open;
}

/* ---- Counts ---------------------------------------------------------------- */

static const char *const units[20] = {
    "zero",    "one",     "two",       "three",    "four",    "five",    "six",
    "seven",   "eight",   "nine",      "ten",      "eleven",  "twelve",  "thirteen",
    "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
static const char *const tens[8] = {"twenty", "thirty", "forty", "fifty",
                                    "sixty",  "seventy", "eighty", "ninety"};
static const char *const small_digits[100] = {
    "0",  "1",  "2",  "3",  "4",  "5",  "6",  "7",  "8",  "9",  "10", "11", "12", "13", "14",
    "15", "16", "17", "18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29",
    "30", "31", "32", "33", "34", "35", "36", "37", "38", "39", "40", "41", "42", "43", "44",
    "45", "46", "47", "48", "49", "50", "51", "52", "53", "54", "55", "56", "57", "58", "59",
    "60", "61", "62", "63", "64", "65", "66", "67", "68", "69", "70", "71", "72", "73", "74",
    "75", "76", "77", "78", "79", "80", "81", "82", "83", "84", "85", "86", "87", "88", "89",
    "90", "91", "92", "93", "94", "95", "96", "97", "98", "99"};

/* The word s[i..j) (letters only) as a table entry: its index, or -1. */
static int word_index(const char *s, size_t i, size_t j, const char *const *table, int n)
{
    size_t len = j - i;
    if (len > 9)
        return -1;
    for (int k = 0; k < n; k++) {
        const char *t = table[k];
        if (strlen(t) != len)
            continue;
        size_t m = 0;
        while (m < len && lower((unsigned char)s[i + m]) == t[m])
            m++;
        if (m == len)
            return k;
    }
    return -1;
}

int vis_extract_count(const char *s, size_t len, vis_count *out)
{
    memset(out, 0, sizeof *out);
    vis_count word = {0};
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (is_digit(c)) {
            size_t start = i;
            int glued = i > 0 && is_letter((unsigned char)s[i - 1]);
            while (i < len && is_digit((unsigned char)s[i]))
                i++;
            size_t int_end = i;
            /* strict thousands: 1-3 digits, then groups ",ddd" */
            if (i - start <= 3) {
                size_t j = i;
                while (j + 3 < len && s[j] == ',' && is_digit((unsigned char)s[j + 1]) &&
                       is_digit((unsigned char)s[j + 2]) && is_digit((unsigned char)s[j + 3]) &&
                       !(j + 4 < len && is_digit((unsigned char)s[j + 4])))
                    j += 4;
                if (j > i)
                    i = int_end = j;
            }
            int whole = 1;
            if (i + 1 < len && s[i] == '.' && is_digit((unsigned char)s[i + 1])) {
                i++;
                while (i < len && is_digit((unsigned char)s[i])) {
                    if (s[i] != '0')
                        whole = 0;
                    i++;
                }
            }
            if (glued)
                continue;
            int negative = start > 0 && s[start - 1] == '-' &&
                           !(start > 1 && is_alnum((unsigned char)s[start - 2]));
            out->found = 1;
            out->whole = whole;
            out->negative = negative;
            out->from_word = 0;
            out->at = negative ? start - 1 : start;
            out->len = i - out->at;
            out->digits = s + start; /* commas and leading zeros included */
            out->n_digits = int_end - start;
            continue;
        }
        if (is_letter(c) && !(i > 0 && is_letter((unsigned char)s[i - 1]))) {
            size_t j = i;
            while (j < len && is_letter((unsigned char)s[j]))
                j++;
            int value = word_index(s, i, j, units, 20);
            size_t end = j;
            int t = value < 0 ? word_index(s, i, j, tens, 8) : -1;
            if (t >= 0) {
                value = 20 + 10 * t;
                /* "twenty-one", "twenty one" */
                if (j + 1 < len && (s[j] == '-' || s[j] == ' ') && is_letter((unsigned char)s[j + 1])) {
                    size_t k = j + 1, m = k;
                    while (m < len && is_letter((unsigned char)s[m]))
                        m++;
                    int u = word_index(s, k, m, units, 10);
                    if (u >= 1) {
                        value += u;
                        end = m;
                    }
                }
            }
            if (value >= 0) {
                word = (vis_count){.found = 1, .whole = 1, .from_word = 1,
                                   .digits = small_digits[value],
                                   .n_digits = strlen(small_digits[value]), .at = i,
                                   .len = end - i};
                j = end;
            }
            i = j;
            continue;
        }
        i++;
    }
    if (!out->found && word.found)
        *out = word;
    return out->found;
}

/* The first significant digit of a count (past leading zeros and commas). */
static size_t first_significant(const vis_count *c)
{
    size_t k = 0;
    while (k < c->n_digits && (c->digits[k] == '0' || c->digits[k] == ','))
        k++;
    return k;
}

static size_t next_digit(const vis_count *c, size_t k)
{
    while (k < c->n_digits && c->digits[k] == ',')
        k++;
    return k;
}

int vis_count_equal(const vis_count *a, const vis_count *b)
{
    if (!a->found || !b->found || !a->whole || !b->whole)
        return 0;
    size_t i = first_significant(a), j = first_significant(b);
    int a_zero = i >= a->n_digits, b_zero = j >= b->n_digits;
    if (a_zero || b_zero)
        return a_zero && b_zero; /* -0 is 0 */
    if (a->negative != b->negative)
        return 0;
    while (i < a->n_digits && j < b->n_digits) {
        if (a->digits[i] != b->digits[j])
            return 0;
        i = next_digit(a, i + 1);
        j = next_digit(b, j + 1);
    }
    return i >= a->n_digits && j >= b->n_digits;
}

/* ---- Options and yes/no ------------------------------------------------------ */

/* Strip what may wrap a one-letter answer: whitespace, '*', '"', '\'', '`',
 * '(' '[' before; ')' ']' '.' ':' after. */
static int in_set(const char *set, char c) { return c && strchr(set, c); }

static void unwrap(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    for (int again = 1; again && n;) {
        again = 0;
        if (is_space((unsigned char)p[0]) || in_set("*\"'`([", p[0])) {
            p++, n--, again = 1;
        } else if (n && (is_space((unsigned char)p[n - 1]) || in_set("*\"'`)].:", p[n - 1]))) {
            n--, again = 1;
        }
    }
    *s = p;
    *len = n;
}

int vis_extract_letter(const char *s, size_t len, char last, vis_choice *out)
{
    memset(out, 0, sizeof *out);
    if (last < 'A' || last > 'Z')
        last = 'Z';
    /* 1. the whole answer is one letter, or starts "B." / "B)" / "(B)" + text */
    const char *w = s;
    size_t wn = len;
    unwrap(&w, &wn);
    if (wn == 1 && is_letter((unsigned char)w[0])) {
        out->found = 1;
        out->letter = (char)(w[0] & ~0x20);
        out->at = (size_t)(w - s);
        out->len = 1;
        return 1;
    }
    {
        const char *p = s;
        size_t n = len;
        vis_trim(&p, &n);
        size_t k = 0;
        int paren = n > 0 && p[0] == '(';
        k += paren;
        if (k < n && p[k] >= 'A' && p[k] <= 'Z' && k + 1 < n &&
            ((paren && p[k + 1] == ')') || (!paren && in_set(".):", p[k + 1]))) &&
            (k + 2 >= n || is_space((unsigned char)p[k + 2]))) {
            out->found = 1;
            out->letter = p[k];
            out->at = (size_t)(p - s) + k;
            out->len = 1;
            return 1;
        }
    }
    /* 2. explicit statements; 3. "(X)"; 4. a lone capital */
    static const char *const marks[] = {"answer is", "answer:", "option", "choice"};
    static const char *const cn_marks[] = {"答案是", "答案为", "答案：", "答案:", "选项", "选择", "选"};
    vis_choice stated = {0}, paren = {0}, lone = {0};
    for (size_t i = 0; i < len; i++) {
        size_t after = 0;
        unsigned char c = (unsigned char)s[i];
        if (c == 'a' || c == 'A' || c == 'o' || c == 'O' || c == 'c' || c == 'C') {
            for (size_t m = 0; m < sizeof marks / sizeof *marks && !after; m++)
                if (starts_ci(s, len, i, marks[m]) && !(i > 0 && is_letter((unsigned char)s[i - 1])))
                    after = i + strlen(marks[m]);
        } else if (c >= 0x80) {
            for (size_t m = 0; m < sizeof cn_marks / sizeof *cn_marks && !after; m++)
                if (starts_with(s, len, i, cn_marks[m]))
                    after = i + strlen(cn_marks[m]);
        }
        if (after) {
            size_t k = after;
            for (;;) {
                if (k < len && (is_space((unsigned char)s[k]) || in_set(":*\"'([", s[k])))
                    k++;
                else if (starts_with(s, len, k, "："))
                    k += 3;
                else
                    break;
            }
            if (k < len && s[k] >= 'A' && s[k] <= 'Z' &&
                !(k + 1 < len && is_letter((unsigned char)s[k + 1])))
                stated = (vis_choice){.found = 1, .letter = s[k], .at = k, .len = 1};
        }
        if (c == '(' && i + 2 < len && s[i + 1] >= 'A' && s[i + 1] <= 'Z' && s[i + 2] == ')')
            paren = (vis_choice){.found = 1, .letter = s[i + 1], .at = i + 1, .len = 1};
        if (c >= 'A' && c <= last && !(i > 0 && is_alnum((unsigned char)s[i - 1])) &&
            !(i + 1 < len && is_alnum((unsigned char)s[i + 1]))) {
            int word = (c == 'A' || c == 'I') && i + 2 < len && s[i + 1] == ' ' &&
                       s[i + 2] >= 'a' && s[i + 2] <= 'z';
            if (!word)
                lone = (vis_choice){.found = 1, .letter = (char)c, .at = i, .len = 1};
        }
    }
    *out = stated.found ? stated : paren.found ? paren : lone;
    return out->found;
}

int vis_extract_yesno(const char *s, size_t len, vis_choice *out)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (is_letter(c)) {
            size_t j = i;
            while (j < len && is_letter((unsigned char)s[j]))
                j++;
            if (!(i > 0 && is_digit((unsigned char)s[i - 1])) &&
                !(j < len && is_digit((unsigned char)s[j]))) {
                static const char *const words[] = {"yes", "true", "no", "false"};
                for (int k = 0; k < 4; k++)
                    if (j - i == strlen(words[k]) && starts_ci(s, len, i, words[k]))
                        *out = (vis_choice){.found = 1, .letter = k < 2 ? 'Y' : 'N', .at = i,
                                            .len = j - i};
            }
            i = j;
            continue;
        }
        if (starts_with(s, len, i, "是否")) {
            i += 6;
            continue;
        }
        if (starts_with(s, len, i, "不是")) {
            *out = (vis_choice){.found = 1, .letter = 'N', .at = i, .len = 6};
            i += 6;
            continue;
        }
        if (starts_with(s, len, i, "没有")) {
            *out = (vis_choice){.found = 1, .letter = 'N', .at = i, .len = 6};
            i += 6;
            continue;
        }
        if (starts_with(s, len, i, "是") || starts_with(s, len, i, "否")) {
            *out = (vis_choice){.found = 1, .letter = s[i + 2] == '\xaf' ? 'Y' : 'N', .at = i,
                                .len = 3};
            i += 3;
            continue;
        }
        i++;
    }
    return out->found;
}

int vis_gold_choice(const char *s, size_t len, char *letter, int *is_yesno)
{
    const char *p = s;
    size_t n = len;
    unwrap(&p, &n);
    static const char *const yes[] = {"yes", "true", "是"}, *const no[] = {"no", "false", "否"};
    for (int k = 0; k < 3; k++) {
        if (n == strlen(yes[k]) && starts_ci(p, n, 0, yes[k])) {
            *letter = 'Y';
            *is_yesno = 1;
            return 1;
        }
        if (n == strlen(no[k]) && starts_ci(p, n, 0, no[k])) {
            *letter = 'N';
            *is_yesno = 1;
            return 1;
        }
    }
    vis_choice c;
    if (n >= 1 && is_letter((unsigned char)p[0]) && (n == 1 || !is_letter((unsigned char)p[1])) &&
        vis_extract_letter(s, len, 'Z', &c)) {
        *letter = c.letter;
        *is_yesno = 0;
        return 1;
    }
    return 0;
}

/* ---- ANLS ---------------------------------------------------------------------- */

/* Normalised code points of s[0..len) into cp[] (at most `cap`), *total the
 * count there would be without the cap. */
static size_t normalise(const char *s, size_t len, uint32_t *cp, size_t cap, size_t *total)
{
    size_t n = 0, all = 0, i = 0;
    int pending_space = 0;
    while (i < len) {
        const unsigned char *u = (const unsigned char *)s + i;
        if (is_space(u[0])) {
            pending_space = all > 0;
            i++;
            continue;
        }
        if (pending_space) {
            if (n < cap)
                cp[n++] = ' ';
            all++;
            pending_space = 0;
        }
        uint32_t v;
        size_t k = tern_utf8_decode(u, len - i, &v);
        if (k == 0) {
            v = 0xDC00u + u[0]; /* an invalid byte stands for itself */
            k = 1;
        } else if (k == 1) {
            v = (uint32_t)lower(u[0]);
        }
        if (n < cap)
            cp[n++] = v;
        all++;
        i += k;
    }
    *total = all;
    return n;
}

double vis_anls(const char *pred, size_t pred_len, const char *gold, size_t gold_len,
                double *similarity)
{
    *similarity = 0;
    size_t cap = VIS_ANLS_MAX_CHARS;
    uint32_t *a = malloc((2 * cap + 2 * (cap + 1)) * sizeof *a);
    if (!a)
        return -1;
    uint32_t *b = a + cap, *prev = b + cap, *cur = prev + cap + 1;
    size_t pa, pb;
    size_t na = normalise(pred, pred_len, a, cap, &pa), nb = normalise(gold, gold_len, b, cap, &pb);
    double sim;
    if (pa == 0 && pb == 0) {
        sim = 1;
    } else {
        size_t longest = pa > pb ? pa : pb, diff = pa > pb ? pa - pb : pb - pa;
        if ((double)diff / (double)longest > 0.5) {
            sim = 1 - (double)diff / (double)longest; /* an upper bound, below 0.5 */
        } else {
            for (size_t j = 0; j <= nb; j++)
                prev[j] = (uint32_t)j;
            for (size_t i = 1; i <= na; i++) {
                cur[0] = (uint32_t)i;
                for (size_t j = 1; j <= nb; j++) {
                    uint32_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
                    uint32_t del = prev[j] + 1, ins = cur[j - 1] + 1;
                    cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
                }
                uint32_t *t = prev;
                prev = cur;
                cur = t;
            }
            size_t m = na > nb ? na : nb;
            sim = 1 - (double)prev[nb] / (double)m;
        }
    }
    free(a);
    *similarity = sim;
    return sim >= 0.5 ? sim : 0;
}

/* ---- Reasons ----------------------------------------------------------------------- */

void vis_clean_reason(char *r, size_t cap)
{
    size_t len = strnlen(r, cap);
    if (len == cap)
        len = cap - 1;
    size_t i = 0;
    while (i < len) {
        const unsigned char *u = (const unsigned char *)r + i;
        size_t n = tern_utf8_len(u, len - i);
        if (n == 0) {
            /* a sequence cut at the end by truncation is dropped */
            if (u[0] >= 0xC2 && len - i < 4) {
                len = i;
                break;
            }
            r[i] = '?';
            n = 1;
        } else if (n == 1 && (u[0] < 0x20 || u[0] == 0x7F)) {
            r[i] = '?';
        }
        i += n;
    }
    r[len] = '\0';
}
