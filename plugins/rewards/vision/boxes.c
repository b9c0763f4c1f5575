/* boxes.c: box parsing, IoU and matching (see boxes.h).
 *
 * Both parsers run over one token stream: numbers, quoted strings, bare
 * words, and punctuation. A parse attempt that starts at a '[' or '(' reads
 * numbers and separators only, so it stops at the next bracket at the
 * latest: every byte is read a bounded number of times, whatever the input. */
#include "boxes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Tokens ---------------------------------------------------------------- */

enum { T_END, T_NUM, T_STR, T_WORD, T_PUNCT, T_OTHER };

typedef struct token {
    int kind;
    size_t at, len; /* the bytes; for T_STR without the quotes */
    char c;         /* T_PUNCT: the character */
    double num;     /* T_NUM: the value (NaN when longer than 64 bytes) */
} token;

typedef struct lexer {
    const char *s;
    size_t n, i;
    int strings; /* read "..." as one token (detections: keys and labels) */
} lexer;

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_word_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_word(int c) { return is_word_start(c) || is_digit(c); }
static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* The length of the number at s[i..n), 0 if none: [+-]? (digits [. digits?] | . digits)
 * ([eE] [+-]? digits)? */
static size_t number_length(const char *s, size_t n, size_t i)
{
    size_t j = i, digits = 0;
    if (j < n && (s[j] == '-' || s[j] == '+'))
        j++;
    while (j < n && is_digit((unsigned char)s[j]))
        j++, digits++;
    if (j < n && s[j] == '.' && j + 1 < n && is_digit((unsigned char)s[j + 1])) {
        j++;
        while (j < n && is_digit((unsigned char)s[j]))
            j++, digits++;
    } else if (digits && j < n && s[j] == '.' && !(j + 1 < n && is_word((unsigned char)s[j + 1]))) {
        j++; /* "12." */
    }
    if (!digits)
        return 0;
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '-' || s[k] == '+'))
            k++;
        if (k < n && is_digit((unsigned char)s[k])) {
            while (k < n && is_digit((unsigned char)s[k]))
                k++;
            j = k;
        }
    }
    return j - i;
}

static double number_value(const char *s, size_t len)
{
    char buf[72];
    if (len > 64)
        return NAN;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return strtod(buf, NULL);
}

static token next_token(lexer *lx)
{
    const char *s = lx->s;
    size_t n = lx->n;
    while (lx->i < n && is_blank((unsigned char)s[lx->i]))
        lx->i++;
    token t = {.kind = T_END, .at = lx->i};
    if (lx->i >= n)
        return t;
    size_t i = lx->i;
    unsigned char c = (unsigned char)s[i];
    size_t nl;
    if ((is_digit(c) || c == '-' || c == '+' || c == '.') && (nl = number_length(s, n, i)) > 0) {
        t.kind = T_NUM;
        t.len = nl;
        t.num = number_value(s + i, nl);
        lx->i = i + nl;
    } else if (c == '"' && lx->strings) {
        /* a JSON string; a raw line end or the end of the text also ends it */
        size_t j = i + 1;
        while (j < n && s[j] != '"' && s[j] != '\n') {
            if (s[j] == '\\' && j + 1 < n && s[j + 1] != '\n')
                j++;
            j++;
        }
        t.kind = T_STR;
        t.at = i + 1;
        t.len = j - (i + 1);
        lx->i = j < n && s[j] == '"' ? j + 1 : j;
    } else if (is_word_start(c)) {
        size_t j = i;
        while (j < n && is_word((unsigned char)s[j]))
            j++;
        t.kind = T_WORD;
        t.len = j - i;
        lx->i = j;
    } else if (strchr("[](){},:", c) && c) {
        t.kind = T_PUNCT;
        t.c = (char)c;
        t.len = 1;
        lx->i = i + 1;
    } else {
        t.kind = T_OTHER;
        t.c = (char)c;
        t.len = 1;
        lx->i = i + 1;
    }
    return t;
}

static int is_punct(const token *t, char c) { return t->kind == T_PUNCT && t->c == c; }

/* After an opening '[': up to `max` numbers separated by optional commas and
 * a closing ']'. The count read, or -1 when it is not such a list; the lexer
 * is then left where the attempt stopped. */
static int read_number_list(lexer *lx, double *v, int max)
{
    int k = 0;
    for (;;) {
        token t = next_token(lx);
        if (t.kind == T_NUM) {
            if (k == max)
                return -1;
            v[k++] = t.num;
            lexer save = *lx;
            token sep = next_token(lx);
            if (is_punct(&sep, ','))
                continue;
            *lx = save;
        } else if (is_punct(&t, ']')) {
            return k;
        } else {
            return -1;
        }
    }
}

/* After an opening '(': "x, y)". 0, or -1. */
static int read_pair(lexer *lx, double *x, double *y)
{
    token a = next_token(lx), comma = next_token(lx), b = next_token(lx), close = next_token(lx);
    if (a.kind != T_NUM || !is_punct(&comma, ',') || b.kind != T_NUM || !is_punct(&close, ')'))
        return -1;
    *x = a.num;
    *y = b.num;
    return 0;
}

static int word_is(const lexer *lx, const token *t, const char *w)
{
    size_t n = strlen(w);
    if (t->kind != T_WORD || t->len != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = lx->s[t->at + i];
        if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != w[i])
            return 0;
    }
    return 1;
}

/* ---- Single boxes ------------------------------------------------------------ */

int vis_box_valid(const vis_box *b)
{
    return isfinite(b->x1) && isfinite(b->y1) && isfinite(b->x2) && isfinite(b->y2) &&
           b->x1 < b->x2 && b->y1 < b->y2;
}

double vis_iou(const vis_box *a, const vis_box *b)
{
    if (!vis_box_valid(a) || !vis_box_valid(b))
        return 0;
    double iw = fmin(a->x2, b->x2) - fmax(a->x1, b->x1);
    double ih = fmin(a->y2, b->y2) - fmax(a->y1, b->y1);
    if (!(iw > 0) || !(ih > 0))
        return 0;
    double inter = iw * ih;
    double ua = (a->x2 - a->x1) * (a->y2 - a->y1), ub = (b->x2 - b->x1) * (b->y2 - b->y1);
    double uni = ua + ub - inter;
    if (!isfinite(ua) || !isfinite(ub) || !isfinite(uni) || !(uni > 0))
        return 0; /* areas past the range of a double */
    double iou = inter / uni;
    return iou > 1 ? 1 : iou < 0 ? 0 : iou;
}

int vis_parse_box(const char *s, size_t len, vis_box *out)
{
    lexer lx = {.s = s, .n = len};
    int found = 0;
    for (;;) {
        token t = next_token(&lx);
        if (t.kind == T_END)
            break;
        if (!is_punct(&t, '[') && !is_punct(&t, '('))
            continue;
        lexer attempt = lx;
        double v[4];
        int ok = 0;
        if (t.c == '[') {
            ok = read_number_list(&attempt, v, 4) == 4;
        } else if (read_pair(&attempt, &v[0], &v[1]) == 0) {
            lexer save = attempt;
            token sep = next_token(&attempt);
            if (!(is_punct(&sep, ',') || (sep.kind == T_OTHER && sep.c == '-') ||
                  word_is(&attempt, &sep, "to")))
                attempt = save;
            token open = next_token(&attempt);
            ok = is_punct(&open, '(') && read_pair(&attempt, &v[2], &v[3]) == 0;
        }
        if (ok) {
            *out = (vis_box){.x1 = v[0], .y1 = v[1], .x2 = v[2], .y2 = v[3], .conf = 1,
                             .at = t.at, .len = attempt.i - t.at};
            found = 1;
            lx = attempt; /* nothing inside a box starts another */
        }
    }
    return found;
}

/* ---- Detections ---------------------------------------------------------------- */

enum { KEY_NONE, KEY_BOX, KEY_CONF, KEY_LABEL, KEY_OTHER };

static int key_kind(const lexer *lx, const token *t)
{
    static const char *const box_keys[] = {"position", "bbox_2d", "bbox", "box", "bounding_box"};
    static const char *const conf_keys[] = {"confidence", "score", "conf"};
    static const char *const label_keys[] = {"label", "category", "class"};
    token w = *t;
    w.kind = T_WORD; /* compare quoted keys as words */
    for (size_t i = 0; i < sizeof box_keys / sizeof *box_keys; i++)
        if (word_is(lx, &w, box_keys[i]))
            return KEY_BOX;
    for (size_t i = 0; i < sizeof conf_keys / sizeof *conf_keys; i++)
        if (word_is(lx, &w, conf_keys[i]))
            return KEY_CONF;
    for (size_t i = 0; i < sizeof label_keys / sizeof *label_keys; i++)
        if (word_is(lx, &w, label_keys[i]))
            return KEY_LABEL;
    return KEY_OTHER;
}

/* A label: the string's bytes with \" and \\ unescaped, trimmed, cut. */
static void copy_label(char *dst, const char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < VIS_LABEL_MAX; i++) {
        if (s[i] == '\\' && i + 1 < len)
            i++;
        dst[o++] = s[i];
    }
    dst[o] = '\0';
    size_t a = 0;
    while (dst[a] == ' ')
        a++;
    memmove(dst, dst + a, o - a + 1);
    o -= a;
    while (o && dst[o - 1] == ' ')
        dst[--o] = '\0';
}

#define MAX_DEPTH 32

typedef struct object {
    int key;       /* the key whose value comes next (KEY_NONE: none yet) */
    token name;    /* the last string or word, a key if ':' follows */
    int has_name;
    int has_box;
    vis_box box;
} object;

static void emit(vis_box *out, size_t cap, size_t *total, const vis_box *b)
{
    if (*total < cap)
        out[*total] = *b;
    (*total)++;
}

void vis_parse_detections(const char *s, size_t len, vis_box *out, size_t cap, size_t *total,
                          int *empty)
{
    lexer lx = {.s = s, .n = len, .strings = 1};
    object stack[MAX_DEPTH];
    int depth = 0;       /* objects open (up to MAX_DEPTH tracked) */
    size_t deeper = 0;   /* objects open past MAX_DEPTH */
    int saw_empty = 0;
    *total = 0;
    for (;;) {
        token t = next_token(&lx);
        if (t.kind == T_END)
            break;
        object *o = depth > 0 && !deeper ? &stack[depth - 1] : NULL;
        if (is_punct(&t, '{')) {
            if (depth < MAX_DEPTH && !deeper) {
                stack[depth++] = (object){.key = KEY_NONE, .box = {.conf = 1}};
                stack[depth - 1].box.at = t.at;
            } else {
                deeper++;
            }
            continue;
        }
        if (is_punct(&t, '}')) {
            if (deeper) {
                deeper--;
            } else if (depth > 0) {
                object *done = &stack[--depth];
                if (done->has_box) {
                    done->box.len = t.at + 1 - done->box.at;
                    emit(out, cap, total, &done->box);
                }
            }
            continue;
        }
        if (deeper)
            continue;
        if (o) {
            if (is_punct(&t, ':')) {
                o->key = o->has_name ? key_kind(&lx, &o->name) : KEY_OTHER;
                o->has_name = 0;
                continue;
            }
            if (is_punct(&t, ',')) {
                o->key = KEY_NONE;
                o->has_name = 0;
                continue;
            }
            if (o->key == KEY_NONE && (t.kind == T_STR || t.kind == T_WORD)) {
                o->name = t;
                o->has_name = 1;
                continue;
            }
            int key = o->key;
            o->key = KEY_OTHER; /* one value per key */
            if (key == KEY_BOX && is_punct(&t, '[')) {
                lexer attempt = lx;
                double v[4];
                int k = read_number_list(&attempt, v, 4);
                if (k == 4) {
                    o->has_box = 1;
                    o->box.x1 = v[0];
                    o->box.y1 = v[1];
                    o->box.x2 = v[2];
                    o->box.y2 = v[3];
                    lx = attempt;
                } else if (k == 0) {
                    lx = attempt; /* "[]": no box, not an empty prediction */
                }
                continue;
            }
            if (key == KEY_CONF && t.kind == T_NUM) {
                o->box.conf = t.num;
                continue;
            }
            if (key == KEY_LABEL && (t.kind == T_STR || t.kind == T_WORD)) {
                copy_label(o->box.label, s + t.at, t.len);
                continue;
            }
            /* any other value: bare lists inside objects are not detections */
            continue;
        }
        if (is_punct(&t, '[')) {
            lexer attempt = lx;
            double v[5];
            int k = read_number_list(&attempt, v, 5);
            if (k == 4 || k == 5) {
                vis_box b = {.x1 = v[0], .y1 = v[1], .x2 = v[2], .y2 = v[3],
                             .conf = k == 5 ? v[4] : 1, .at = t.at, .len = attempt.i - t.at};
                emit(out, cap, total, &b);
                lx = attempt;
            } else if (k == 0) {
                saw_empty = 1;
                lx = attempt;
            }
        }
    }
    /* objects a truncated response left open still count */
    while (depth > 0) {
        object *done = &stack[--depth];
        if (done->has_box) {
            done->box.len = len - done->box.at;
            emit(out, cap, total, &done->box);
        }
    }
    *empty = saw_empty && *total == 0;
}

/* ---- Matching -------------------------------------------------------------------- */

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int labels_agree(const vis_box *a, const vis_box *b)
{
    if (!a->label[0] || !b->label[0])
        return 1;
    const char *p = a->label, *q = b->label;
    while (*p && *q && ascii_lower((unsigned char)*p) == ascii_lower((unsigned char)*q))
        p++, q++;
    return *p == *q;
}

static double sort_conf(const vis_box *b) { return isfinite(b->conf) ? b->conf : 0; }

static int by_confidence(const void *x, const void *y, void *arg)
{
    const vis_box *pred = arg;
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    double a = sort_conf(&pred[i]), b = sort_conf(&pred[j]);
    if (a != b)
        return a > b ? -1 : 1;
    return i < j ? -1 : i > j;
}

void vis_match_boxes(const vis_box *pred, size_t npred, const vis_box *gold, size_t ngold,
                     double threshold, int match_labels, size_t *order, unsigned char *taken,
                     vis_match *out)
{
    out->matched = 0;
    out->sum_iou = 0;
    for (size_t i = 0; i < npred; i++)
        order[i] = i;
    if (npred > 1)
        qsort_r(order, npred, sizeof *order, by_confidence, (void *)pred);
    memset(taken, 0, ngold);
    for (size_t k = 0; k < npred; k++) {
        const vis_box *p = &pred[order[k]];
        double best = 0;
        size_t which = ngold;
        for (size_t g = 0; g < ngold; g++) {
            if (taken[g] || (match_labels && !labels_agree(p, &gold[g])))
                continue;
            double iou = vis_iou(p, &gold[g]);
            if (iou > best) {
                best = iou;
                which = g;
            }
        }
        if (which < ngold && best > threshold) {
            taken[which] = 1;
            out->matched++;
            out->sum_iou += best;
        }
    }
}
