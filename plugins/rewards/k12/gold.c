/* gold.c: gold answers and options from task fields (see gold.h). */
#include "gold.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

static int push(k12_gold *g, const char *s, size_t len)
{
    while (len && k12_is_space(s[0])) {
        s++;
        len--;
    }
    while (len && k12_is_space(s[len - 1]))
        len--;
    if (!len)
        return K12_GOLD_OK;
    char **text = realloc(g->text, (g->n + 1) * sizeof *text);
    if (!text)
        return K12_GOLD_NOMEM;
    g->text = text;
    size_t *lens = realloc(g->len, (g->n + 1) * sizeof *lens);
    if (!lens)
        return K12_GOLD_NOMEM;
    g->len = lens;
    char *copy = malloc(len + 1);
    if (!copy)
        return K12_GOLD_NOMEM;
    memcpy(copy, s, len);
    copy[len] = '\0';
    g->text[g->n] = copy;
    g->len[g->n++] = len;
    return K12_GOLD_OK;
}

static int push_split(k12_gold *g, const char *s, size_t len)
{
    size_t b = 0;
    for (size_t i = 0; i <= len; i++)
        if (i == len || s[i] == '|') {
            int rc = push(g, s + b, i - b);
            if (rc != K12_GOLD_OK)
                return rc;
            b = i + 1;
        }
    return K12_GOLD_OK;
}

/* A scalar JSON value as answer text: numbers with the fewest digits that
 * read back the same ("0.1", not "0.10000000000000001"). */
static int push_scalar(k12_gold *g, json_t *v, int split)
{
    char buf[64];
    if (json_is_string(v))
        return split ? push_split(g, json_string_value(v), json_string_length(v))
                     : push(g, json_string_value(v), json_string_length(v));
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v)) {
        double x = json_real_value(v);
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, x);
            if (strtod(buf, NULL) == x)
                break;
        }
    } else if (json_is_boolean(v))
        snprintf(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
    else
        return K12_GOLD_BAD_TYPE;
    return push(g, buf, strlen(buf));
}

int k12_gold_read(const char *s, size_t len, int json, k12_gold *g)
{
    memset(g, 0, sizeof *g);
    int rc = K12_GOLD_OK;
    if (!json)
        rc = push_split(g, s, len);
    else {
        json_t *v = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!v)
            return K12_GOLD_BAD_TYPE;
        if (json_is_array(v)) {
            g->from_list = 1;
            for (size_t k = 0; k < json_array_size(v) && rc == K12_GOLD_OK; k++)
                rc = push_scalar(g, json_array_get(v, k), 0);
        } else
            rc = push_scalar(g, v, 1);
        json_decref(v);
    }
    if (rc == K12_GOLD_OK && g->n == 0)
        rc = K12_GOLD_EMPTY;
    return rc;
}

void k12_gold_free(k12_gold *g)
{
    for (size_t k = 0; k < g->n; k++)
        free(g->text[k]);
    free(g->text);
    free(g->len);
    memset(g, 0, sizeof *g);
}

static int set_option(k12_options *o, size_t k, json_t *v)
{
    if (k >= 8 || !json_is_string(v))
        return K12_GOLD_OK; /* past H, or not text: not an option we can match */
    size_t n = json_string_length(v);
    char *copy = malloc(n + 1);
    if (!copy)
        return K12_GOLD_NOMEM;
    memcpy(copy, json_string_value(v), n);
    copy[n] = '\0';
    free(o->text[k]);
    o->text[k] = copy;
    o->len[k] = n;
    return K12_GOLD_OK;
}

int k12_options_read(const char *s, size_t len, k12_options *o)
{
    memset(o, 0, sizeof *o);
    json_t *v = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    int rc = K12_GOLD_OK;
    if (json_is_array(v)) {
        for (size_t k = 0; k < json_array_size(v) && rc == K12_GOLD_OK; k++)
            rc = set_option(o, k, json_array_get(v, k));
    } else if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
        {
            char c = k12_lower(key[0]);
            if (rc == K12_GOLD_OK && c >= 'a' && c <= 'h' && key[1] == '\0')
                rc = set_option(o, (size_t)(c - 'a'), x);
        }
    } else
        rc = K12_GOLD_BAD_TYPE;
    json_decref(v);
    return rc;
}

void k12_options_free(k12_options *o)
{
    for (size_t k = 0; k < 8; k++)
        free(o->text[k]);
    memset(o, 0, sizeof *o);
}
