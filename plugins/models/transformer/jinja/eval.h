/*
 * eval.h: the evaluator's state, shared by eval.c (statements and
 * expressions) and builtins.c (filters, tests, methods, global functions).
 * Internal to jinja/.
 *
 * Every value a function hands back is a new reference the caller releases,
 * or NULL for Undefined; arguments are borrowed.
 */
#ifndef TERN_JINJA_EVAL_H
#define TERN_JINJA_EVAL_H

#include <jansson.h>
#include <stddef.h>

#include "jinja/ast.h"
#include "jinja/jinja.h"
#include "tern/support/text_buf.h"

/* The deepest containers a template may build (a list in a list ...): the
 * values are freed recursively, so this bounds the stack too. */
#define JINJA_MAX_NESTING 64

typedef struct jinja_ev {
    const json_t *ctx;     /* the caller's variables */
    jinja_limits lim;
    json_t **frames;       /* scopes, innermost last: the template's, then a loop's or macro's */
    size_t nframes;
    json_t **namespaces;   /* the namespace() objects, the only values `set x.y` may change */
    size_t nns, capns;
    const jinja_node **macros;
    size_t nmacros, capmacros;
    tern_text_buf *out;    /* where text goes (a macro's or a block set's capture while in one) */
    size_t written;        /* bytes written to all outputs */
    size_t depth, steps, iterations;
    int failed;            /* an error is in err */
    char *err;
    size_t errn;
} jinja_ev;

/* Call arguments: positional values, then name=value ones. */
typedef struct jinja_args {
    json_t **pos;
    size_t npos;
    const char **kw;
    json_t **kwv;
    size_t nkw;
} jinja_args;

/* Report an error at node `at` (line:column); returns -1. */
int jinja_fail(jinja_ev *e, const jinja_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An argument by position or name, or NULL (borrowed). */
json_t *jinja_arg(const jinja_args *a, size_t i, const char *name);
/* Fail unless v nests at most JINJA_MAX_NESTING deep. */
int jinja_check_nesting(jinja_ev *e, const jinja_node *at, const json_t *v);
/* Count one loop iteration (or element made by range()) against the limit. */
int jinja_count_iteration(jinja_ev *e, const jinja_node *at);

/* Run a parsed template's body (eval.c); the frames must hold the
 * template's own scope. */
int jinja_exec_body(jinja_ev *e, const jinja_node *body);

/* str(v) as a new string value. */
int jinja_str_value(jinja_ev *e, const jinja_node *at, const json_t *v, json_t **out);

/* builtins.c */
int jinja_filter(jinja_ev *e, const jinja_node *at, const char *name, json_t *x,
                 const jinja_args *a, json_t **out);
/* *yes: whether x passes test `name` */
int jinja_test(jinja_ev *e, const jinja_node *at, const char *name, json_t *x, const jinja_args *a,
               int *yes);
int jinja_method(jinja_ev *e, const jinja_node *at, json_t *obj, const char *name,
                 const jinja_args *a, json_t **out);
/* A global function (raise_exception, strftime_now, namespace, range, dict);
 * 1 when `name` is none of them (nothing is done). */
int jinja_call_global(jinja_ev *e, const jinja_node *at, const char *name, const jinja_args *a,
                      json_t **out);
int jinja_is_global(const char *name);

#endif
