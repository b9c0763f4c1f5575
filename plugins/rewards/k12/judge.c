/* judge.c: one verdict: find the answer (extract.c), read the gold answer
 * (gold.c), normalise both (normalize.c), and compare them as the question
 * kind says (choice.c, truefalse.c, numeric.c, or blank keys). */
#include "judge.h"

#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "gold.h"
#include "normalize.h"
#include "numeric.h"
#include "text.h"
#include "truefalse.h"

/* ---- names ----------------------------------------------------------------- */

typedef struct kind_name {
    const char *name;
    k12_kind kind;
} kind_name;

static const kind_name kind_names[] = {
    {"choice", K12_KIND_CHOICE},          {"single_choice", K12_KIND_CHOICE},
    {"multiple_choice", K12_KIND_CHOICE}, {"multi_choice", K12_KIND_CHOICE},
    {"mcq", K12_KIND_CHOICE},             {"true_false", K12_KIND_TRUE_FALSE},
    {"judge", K12_KIND_TRUE_FALSE},       {"tf", K12_KIND_TRUE_FALSE},
    {"blank", K12_KIND_BLANK},            {"fill_in_blank", K12_KIND_BLANK},
    {"fill", K12_KIND_BLANK},             {"numeric", K12_KIND_NUMERIC},
    {"number", K12_KIND_NUMERIC},         {"calculation", K12_KIND_NUMERIC},
};

int k12_kind_parse(const char *name, k12_kind *out)
{
    for (size_t k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
        if (strcmp(name, kind_names[k].name) == 0) {
            *out = kind_names[k].kind;
            return 1;
        }
    return 0;
}

const char *k12_kind_label(k12_kind kind)
{
    switch (kind) {
    case K12_KIND_CHOICE:
        return "choice";
    case K12_KIND_TRUE_FALSE:
        return "true_false";
    case K12_KIND_BLANK:
        return "blank";
    case K12_KIND_NUMERIC:
        return "numeric";
    case K12_KIND_INFER:
        break;
    }
    return "inferred";
}

int k12_partial_parse(const char *name, k12_partial *out)
{
    static const char *const names[] = {"none", "half_for_subset", "fraction"};
    for (int k = 0; k < 3; k++)
        if (strcmp(name, names[k]) == 0) {
            *out = (k12_partial)k;
            return 1;
        }
    return 0;
}

/* ---- one judging ------------------------------------------------------------- */

typedef struct judging {
    const k12_rules *rules;
    const k12_question *q;
    k12_verdict *v;
    k12_kind kind;
    k12_span span;
    const char *form;   /* how the answer was found, for reasons */
    char *ans;          /* the answer, normalised */
    size_t ans_len;
    k12_gold gold;      /* the acceptable answers as given */
    char **golds;       /* ... normalised */
    size_t *gold_lens;
} judging;

#define REASON(j, ...) k12_reason((j)->v->reason, sizeof (j)->v->reason, __VA_ARGS__)

static void set_reward(judging *j, double reward)
{
    j->v->reward = reward;
    j->v->accuracy = reward == 1.0;
}

/* Normalise s[0..len) (folded or not) and take its blank key. */
static int blank_key(const char *s, size_t len, char **key, size_t *key_len)
{
    char *n;
    size_t nl;
    *key = NULL;
    int rc = k12_normalize(s, len, 1, &n, &nl);
    if (rc != K12_NORM_OK)
        return rc;
    rc = k12_blank_key(n, nl, key, key_len);
    free(n);
    return rc;
}

/* ---- choice -------------------------------------------------------------------- */

/* The option whose text the answer is, as a mask; 0 when none or several. */
static int option_by_text(judging *j, unsigned *mask)
{
    *mask = 0;
    if (!j->q->options)
        return K12_OK;
    k12_options o;
    int rc = k12_options_read(j->q->options, j->q->options_len, &o);
    char *key = NULL;
    size_t key_len = 0;
    if (rc == K12_GOLD_OK)
        rc = blank_key(j->span.text, j->span.len, &key, &key_len) == K12_NORM_NOMEM
                 ? K12_GOLD_NOMEM
                 : K12_GOLD_OK;
    unsigned found = 0;
    for (unsigned k = 0; rc == K12_GOLD_OK && key && key_len && k < 8; k++) {
        if (!o.text[k])
            continue;
        char *n, *okey;
        size_t nl, okl;
        int r = k12_normalize(o.text[k], o.len[k], 1, &n, &nl);
        if (r == K12_NORM_NOMEM)
            rc = K12_GOLD_NOMEM;
        if (r != K12_NORM_OK)
            continue;
        /* An option text may carry its own label: "A. 12 cm", "(A) 12 cm". */
        size_t skip = 0;
        char letter = (char)('a' + k);
        if (nl >= 2 && n[0] == letter && strchr(".:) ", n[1]))
            skip = 2;
        else if (nl >= 4 && n[0] == letter && k12_starts(n, nl, 1, "\xe3\x80\x81")) /* 、 */
            skip = 4;
        else if (nl >= 3 && n[0] == '(' && n[1] == letter && n[2] == ')')
            skip = 3;
        r = k12_blank_key(n + skip, nl - skip, &okey, &okl);
        free(n);
        if (r != K12_NORM_OK) {
            rc = K12_GOLD_NOMEM;
            continue;
        }
        if (okl == key_len && memcmp(okey, key, key_len) == 0)
            found |= 1u << k;
        free(okey);
    }
    free(key);
    k12_options_free(&o);
    if (rc == K12_GOLD_NOMEM)
        return K12_ENOMEM;
    if (k12_choice_count(found) == 1)
        *mask = found;
    return K12_OK;
}

/* Up to `cap` bytes of the gold alternatives' letters, "A|BC". */
static void gold_letters(const unsigned *masks, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        char l[9];
        k12_choice_letters(masks[k], l);
        size_t m = strlen(l);
        if (o + m + 5 > cap) {
            memcpy(buf + o, "|...", 5);
            return;
        }
        if (k)
            buf[o++] = '|';
        memcpy(buf + o, l, m + 1);
        o += m;
    }
}

static int judge_choice(judging *j)
{
    size_t n = j->gold.from_list ? 1 : j->gold.n;
    unsigned *masks = calloc(n, sizeof *masks);
    if (!masks)
        return K12_ENOMEM;
    for (size_t k = 0; k < j->gold.n; k++) {
        unsigned m;
        if (!k12_choice_parse(j->golds[k], j->gold_lens[k], K12_READ_GOLD, &m)) {
            char g[K12_EXCERPT_MAX + 4];
            k12_excerpt(g, j->golds[k], j->gold_lens[k]);
            REASON(j, "choice: gold %s is not option letters (A-H)", g);
            free(masks);
            return K12_OK;
        }
        masks[j->gold.from_list ? 0 : k] |= m;
    }
    unsigned got;
    int by_text = 0;
    k12_reading how = j->span.form == K12_FORM_LAST_LINE ? K12_READ_LINE : K12_READ_STATED;
    if (!k12_choice_parse(j->ans, j->ans_len, how, &got)) {
        if (option_by_text(j, &got) != K12_OK) {
            free(masks);
            return K12_ENOMEM;
        }
        by_text = got != 0;
    }
    char gl[48], al[9];
    gold_letters(masks, n, gl, sizeof gl);
    if (!got) {
        char a[K12_EXCERPT_MAX + 4];
        k12_excerpt(a, j->ans, j->ans_len);
        REASON(j, "choice: %s '%s' is not option letters, gold %s", j->form, a, gl);
        free(masks);
        return K12_OK;
    }
    double best = 0;
    unsigned best_gold = masks[0];
    for (size_t k = 0; k < n; k++) {
        double c = k12_choice_credit(got, masks[k], j->rules->partial);
        if (c > best) {
            best = c;
            best_gold = masks[k];
        }
    }
    free(masks);
    set_reward(j, best);
    k12_choice_letters(got, al);
    const char *via = by_text ? " (by option text)" : "";
    if (best == 1.0)
        REASON(j, "choice: %s %s%s equals gold %s", j->form, al, via, gl);
    else if (best > 0 && j->rules->partial == K12_PARTIAL_HALF)
        REASON(j, "choice: %s %s%s, gold %s: a subset, half credit", j->form, al, via, gl);
    else if (best > 0)
        REASON(j, "choice: %s %s%s, gold %s: a subset, %u of %u options", j->form, al, via, gl,
               k12_choice_count(got), k12_choice_count(best_gold));
    else if (!(got & ~best_gold) && k12_choice_credit(got, best_gold, K12_PARTIAL_HALF) > 0)
        REASON(j, "choice: %s %s%s, gold %s: options missing, no partial credit", j->form, al,
               via, gl);
    else
        REASON(j, "choice: %s %s%s, gold %s", j->form, al, via, gl);
    return K12_OK;
}

/* ---- true / false ------------------------------------------------------------ */

static int judge_true_false(judging *j)
{
    int want[2] = {0, 0}; /* [value]: some alternative says it */
    for (size_t k = 0; k < j->gold.n; k++) {
        int b;
        if (!k12_tf_parse(j->golds[k], j->gold_lens[k], 1, &b)) {
            char g[K12_EXCERPT_MAX + 4];
            k12_excerpt(g, j->golds[k], j->gold_lens[k]);
            REASON(j, "true_false: gold %s is not true or false", g);
            return K12_OK;
        }
        want[b] = 1;
    }
    const char *gl = want[0] && want[1] ? "true|false" : want[1] ? "true" : "false";
    int got;
    /* A bare last line must be the word alone: "No, because ..." is prose. */
    if (!k12_tf_parse(j->ans, j->ans_len, j->span.form == K12_FORM_LAST_LINE, &got) &&
        !k12_tf_parse_last(j->ans, j->ans_len, &got)) {
        char a[K12_EXCERPT_MAX + 4];
        k12_excerpt(a, j->ans, j->ans_len);
        REASON(j, "true_false: %s '%s' is not true or false, gold %s", j->form, a, gl);
        return K12_OK;
    }
    set_reward(j, want[got] ? 1.0 : 0.0);
    REASON(j, want[got] ? "true_false: %s %s equals gold %s" : "true_false: %s %s, gold %s",
           j->form, got ? "true" : "false", gl);
    return K12_OK;
}

/* ---- numeric --------------------------------------------------------------------- */

static int judge_numeric(judging *j)
{
    k12_quantity got, gold, shown = {0};
    char a[K12_EXCERPT_MAX + 4], g[K12_EXCERPT_MAX + 4];
    k12_compare best = K12_DIFFERENT;
    int have_got = k12_quantity_find(j->ans, j->ans_len, &got);
    for (size_t k = 0; k < j->gold.n; k++) {
        if (!k12_quantity_find(j->golds[k], j->gold_lens[k], &gold)) {
            k12_excerpt(g, j->golds[k], j->gold_lens[k]);
            REASON(j, "numeric: gold %s has no number", g);
            return K12_OK;
        }
        if (k == 0)
            shown = gold;
        if (!have_got)
            continue;
        k12_compare c = k12_quantity_compare(&got, &gold, j->rules->rel_tol, j->rules->abs_tol,
                                             j->rules->require_unit);
        /* Show the alternative that matched, else the first one. */
        if (c == K12_EQUAL || k == 0) {
            best = c;
            shown = gold;
        }
        if (c == K12_EQUAL)
            break;
    }
    k12_excerpt(g, shown.text, shown.text_len);
    if (!have_got) {
        k12_excerpt(a, j->ans, j->ans_len);
        REASON(j, "numeric: %s '%s' has no number, gold %s", j->form, a, g);
        return K12_OK;
    }
    k12_excerpt(a, got.text, got.text_len);
    set_reward(j, best == K12_EQUAL ? 1.0 : 0.0);
    switch (best) {
    case K12_EQUAL:
        REASON(j, "numeric: %s %s equals gold %s", j->form, a, g);
        break;
    case K12_UNIT_MISMATCH:
        REASON(j, "numeric: %s %s, gold %s: the units differ", j->form, a, g);
        break;
    case K12_UNIT_MISSING:
        REASON(j, "numeric: %s %s, gold %s: no unit (require_unit)", j->form, a, g);
        break;
    case K12_DIFFERENT:
        REASON(j, "numeric: %s %s, gold %s", j->form, a, g);
        break;
    }
    return K12_OK;
}

/* ---- fill in the blank --------------------------------------------------------- */

static int judge_blank(judging *j)
{
    char *key;
    size_t key_len;
    char a[K12_EXCERPT_MAX + 4], g[K12_EXCERPT_MAX + 4];
    int rc = blank_key(j->span.text, j->span.len, &key, &key_len);
    if (rc == K12_NORM_NOMEM)
        return K12_ENOMEM;
    k12_excerpt(a, j->ans, j->ans_len);
    k12_excerpt(g, j->golds[0], j->gold_lens[0]);
    if (!key_len) {
        free(key);
        REASON(j, "blank: %s '%s' is only punctuation, gold %s", j->form, a, g);
        return K12_OK;
    }
    /* Numbers compare as numbers, "0.5" and "1/2" alike. */
    k12_quantity got, gold;
    int got_number = k12_quantity_whole(j->ans, j->ans_len, &got);
    size_t match = j->gold.n;
    for (size_t k = 0; k < j->gold.n && match == j->gold.n; k++) {
        char *gk;
        size_t gkl;
        rc = blank_key(j->gold.text[k], j->gold.len[k], &gk, &gkl);
        if (rc == K12_NORM_NOMEM) {
            free(key);
            return K12_ENOMEM;
        }
        if (rc == K12_NORM_OK && gkl == key_len && memcmp(gk, key, key_len) == 0)
            match = k;
        free(gk);
        if (match == j->gold.n && got_number &&
            k12_quantity_whole(j->golds[k], j->gold_lens[k], &gold) &&
            k12_quantity_compare(&got, &gold, j->rules->rel_tol, j->rules->abs_tol,
                                 j->rules->require_unit) == K12_EQUAL)
            match = k;
    }
    free(key);
    if (match < j->gold.n) {
        k12_excerpt(g, j->golds[match], j->gold_lens[match]);
        set_reward(j, 1.0);
        REASON(j, "blank: %s %s equals gold %s", j->form, a, g);
    } else
        REASON(j, "blank: %s %s, gold %s%s", j->form, a, g, j->gold.n > 1 ? " (or another)" : "");
    return K12_OK;
}

/* ---- the kind of a question without one --------------------------------------- */

static k12_kind infer(const char *g, size_t len)
{
    unsigned m;
    int b;
    k12_quantity q;
    int lower = 0;
    for (size_t i = 0; i < len; i++)
        lower |= g[i] >= 'a' && g[i] <= 'z';
    /* Lower-case letters are words ("a", "an" fill English blanks), not options. */
    if (!lower && k12_choice_parse(g, len, K12_READ_GOLD, &m))
        return K12_KIND_CHOICE;
    if (k12_tf_parse(g, len, 1, &b))
        return K12_KIND_TRUE_FALSE;
    if (k12_quantity_whole(g, len, &q))
        return K12_KIND_NUMERIC;
    return K12_KIND_BLANK;
}

/* ---- the steps in order -------------------------------------------------------- */

static int all_space(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!k12_is_space(s[i]))
            return 0;
    return 1;
}

static int read_gold(judging *j)
{
    const k12_question *q = j->q;
    const char *field = q->answer_field ? q->answer_field : "answer";
    int rc = q->gold ? k12_gold_read(q->gold, q->gold_len, q->gold_json, &j->gold)
                     : K12_GOLD_BAD_TYPE;
    if (rc == K12_GOLD_NOMEM)
        return K12_ENOMEM;
    if (!q->gold)
        REASON(j, "task has no answer field '%s'", field);
    else if (rc == K12_GOLD_EMPTY)
        REASON(j, "task field '%s' is empty", field);
    else if (rc == K12_GOLD_BAD_TYPE)
        REASON(j, "task field '%s' is not a string, number, boolean or list of them", field);
    if (rc != K12_GOLD_OK)
        return 1;
    j->golds = calloc(j->gold.n, sizeof *j->golds);
    j->gold_lens = calloc(j->gold.n, sizeof *j->gold_lens);
    if (!j->golds || !j->gold_lens)
        return K12_ENOMEM;
    for (size_t k = 0; k < j->gold.n; k++) {
        rc = k12_normalize(j->gold.text[k], j->gold.len[k], 0, &j->golds[k], &j->gold_lens[k]);
        if (rc == K12_NORM_NOMEM)
            return K12_ENOMEM;
        if (rc == K12_NORM_TOO_LONG) {
            REASON(j, "task field '%s' holds an answer longer than %d bytes", field,
                   K12_TEXT_MAX);
            return 1;
        }
    }
    return K12_OK;
}

static int judge(judging *j, const char *response, size_t len)
{
    k12_verdict *v = j->v;
    k12_extract(response, len, j->rules->last_line, &j->span);
    j->form = k12_form_label(j->span.form);
    v->format = j->span.form == K12_FORM_BOXED || j->span.form == K12_FORM_STATED;

    int rc = read_gold(j);
    if (rc != K12_OK)
        return rc < 0 ? rc : K12_OK;
    j->kind = j->q->kind != K12_KIND_INFER ? j->q->kind : infer(j->golds[0], j->gold_lens[0]);
    if (!response || all_space(response, len)) {
        REASON(j, "empty response");
        return K12_OK;
    }
    if (j->span.form == K12_FORM_NONE) {
        REASON(j, "no answer found%s", j->rules->last_line ? "" : " (fallback_last_line is off)");
        return K12_OK;
    }
    rc = k12_normalize(j->span.text, j->span.len, 0, &j->ans, &j->ans_len);
    if (rc == K12_NORM_NOMEM)
        return K12_ENOMEM;
    if (rc == K12_NORM_TOO_LONG) {
        REASON(j, "%s: %s is longer than %d bytes (%zu)", k12_kind_label(j->kind), j->form,
               K12_TEXT_MAX, j->span.len);
        return K12_OK;
    }
    switch (j->kind) {
    case K12_KIND_CHOICE:
        return judge_choice(j);
    case K12_KIND_TRUE_FALSE:
        return judge_true_false(j);
    case K12_KIND_NUMERIC:
        return judge_numeric(j);
    case K12_KIND_BLANK:
    case K12_KIND_INFER:
        break;
    }
    return judge_blank(j);
}

int k12_judge(const k12_rules *rules, const k12_question *q, const char *response, size_t len,
              k12_verdict *v)
{
    memset(v, 0, sizeof *v);
    judging j = {.rules = rules, .q = q, .v = v};
    int rc = judge(&j, response, response ? len : 0);
    for (size_t k = 0; j.golds && k < j.gold.n; k++)
        free(j.golds[k]);
    free(j.golds);
    free(j.gold_lens);
    k12_gold_free(&j.gold);
    free(j.ans);
    if (rc != K12_OK)
        memset(v, 0, sizeof *v);
    return rc;
}
