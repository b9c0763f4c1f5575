/* jinja.c: the interface of jinja.h: parse (lexer.c, parser.c) into an
 * arena, render (eval.c) with fresh state each time. */
#include "jinja/jinja.h"

#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "jinja/ast.h"
#include "jinja/eval.h"
#include "tern/support/utf8.h"

struct jinja_template {
    jinja_arena arena;
    char *src; /* the tokens point into it */
    jinja_node *root;
};

jinja_limits jinja_default_limits(void)
{
    jinja_limits l = {JINJA_MAX_OUTPUT, JINJA_MAX_DEPTH, JINJA_MAX_ITERATIONS, JINJA_MAX_STEPS};
    return l;
}

int jinja_parse(const char *src, size_t len, jinja_template **out, char *err, size_t errn)
{
    *out = NULL;
    if (len > JINJA_MAX_SOURCE)
        return tf_fail(err, errn, "template: %zu bytes, more than the %zu tern reads", len,
                       JINJA_MAX_SOURCE);
    int line = 1, col = 1;
    for (size_t i = 0; i < len;) {
        uint32_t c;
        size_t k = tern_utf8_decode((const unsigned char *)src + i, len - i, &c);
        if (!k || c == 0)
            return tf_fail(err, errn, "template %d:%d: %s; templates are UTF-8 text", line, col,
                           k ? "a NUL byte" : "invalid UTF-8");
        if (c == '\n')
            line++, col = 1;
        else
            col++;
        i += k;
    }
    jinja_template *t = calloc(1, sizeof *t);
    if (!t || !(t->src = malloc(len + 1))) {
        free(t);
        return tf_fail(err, errn, "template: out of memory");
    }
    memcpy(t->src, src, len);
    t->src[len] = '\0';
    jinja_token *toks;
    size_t ntoks;
    if (jinja_lex(&t->arena, t->src, len, &toks, &ntoks, err, errn) != 0 ||
        jinja_parse_tokens(&t->arena, toks, ntoks, &t->root, err, errn) != 0) {
        jinja_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int jinja_render(const jinja_template *t, const json_t *ctx, const jinja_limits *limits,
                 char **text, size_t *len, char *err, size_t errn)
{
    *text = NULL;
    *len = 0;
    if (!ctx || !json_is_object(ctx))
        return tf_fail(err, errn, "template: the variables must be a JSON object");
    jinja_ev e = {.ctx = ctx, .lim = limits ? *limits : jinja_default_limits(), .err = err,
                  .errn = errn};
    if (e.lim.max_depth < 1)
        e.lim.max_depth = 1;
    tern_text_buf out = {0};
    tern_text_puts(&out, "");
    e.out = &out;
    int rc = -1;
    e.frames = calloc(e.lim.max_depth + 2, sizeof *e.frames);
    if (!e.frames || out.oom || !(e.frames[0] = json_object())) {
        tf_fail(err, errn, "template: out of memory");
    } else {
        e.nframes = 1;
        rc = jinja_exec_body(&e, t->root);
        if (rc == 0 && out.oom)
            rc = tf_fail(err, errn, "template: out of memory");
    }
    while (e.nframes > 0)
        json_decref(e.frames[--e.nframes]);
    free(e.frames);
    for (size_t i = 0; i < e.nns; i++)
        json_decref(e.namespaces[i]);
    free(e.namespaces);
    free(e.macros);
    if (rc != 0) {
        free(out.p);
        return -1;
    }
    *text = out.p;
    *len = out.n;
    return 0;
}

void jinja_free(jinja_template *t)
{
    if (!t)
        return;
    jinja_arena_free(&t->arena);
    free(t->src);
    free(t);
}
