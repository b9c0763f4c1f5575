/*
 * ast.h: the parsed template (the lexer's tokens and the parser's tree), and
 * the arena both live in, so a template frees in one go whatever path its
 * parse took. Internal to jinja/.
 */
#ifndef TERN_JINJA_AST_H
#define TERN_JINJA_AST_H

#include <jansson.h>
#include <stddef.h>

/* ---- arena ---------------------------------------------------------------- */

typedef struct jinja_chunk jinja_chunk;
typedef struct jinja_arena {
    jinja_chunk *head;
    json_t **lits; /* literal values, decref'd by jinja_arena_free */
    size_t nlits, caplits;
} jinja_arena;

/* Zeroed memory that lives as long as the arena, or NULL when out of memory. */
void *jinja_arena_alloc(jinja_arena *a, size_t n);
/* Keep literal v (a new reference, taken over; NULL is out of memory):
 * returns v, or NULL (v released) when out of memory. */
json_t *jinja_arena_keep(jinja_arena *a, json_t *v);
void jinja_arena_free(jinja_arena *a);

/* ---- tokens (lexer.c) ----------------------------------------------------- */

typedef enum {
    TK_EOF,
    TK_TEXT,        /* template text, whitespace control applied */
    TK_VAR_BEGIN,   /* {{ */
    TK_VAR_END,     /* }} */
    TK_BLOCK_BEGIN, /* {% */
    TK_BLOCK_END,   /* %} */
    TK_NAME,
    TK_STRING, /* s/n: the decoded value */
    TK_INT,
    TK_FLOAT,
    TK_OP /* s/n: the operator's characters */
} jinja_tk;

typedef struct jinja_token {
    jinja_tk kind;
    const char *s; /* TK_TEXT, TK_NAME, TK_STRING, TK_OP */
    size_t n;
    long long i;
    double f;
    int line, col;
} jinja_token;

/* Tokenize src (NUL-terminated, len bytes) into *toks (arena memory),
 * ending in TK_EOF. 0, or -1 with line:column in err. */
int jinja_lex(jinja_arena *a, const char *src, size_t len, jinja_token **toks, size_t *ntoks,
              char *err, size_t errn);

/* ---- the tree (parser.c) -------------------------------------------------- */

typedef enum {
    /* statements */
    N_BODY,     /* kids: the statements in order */
    N_TEXT,     /* s/n */
    N_OUTPUT,   /* a: the expression */
    N_IF,       /* a: condition, b: then (N_BODY), c: else (N_BODY, or N_IF for elif) or NULL */
    N_FOR,      /* s, s2 (NULL): the targets, a: iterable, b: filter or NULL,
                   kids: body, c: else-body or NULL */
    N_SET,      /* s: name, a: value (NULL for a block set: c holds the body) */
    N_SET_ATTR, /* s: namespace variable, s2: attribute, a: value */
    N_BREAK,
    N_CONTINUE,
    N_MACRO,    /* s: name, kids: parameters (E_NAME or E_KWARG with default), c: body */
    N_CALL_BLOCK, /* unused placeholder for {% call %} (refused by the parser) */
    /* expressions */
    E_LITERAL,  /* lit */
    E_NAME,     /* s */
    E_ATTR,     /* a: object, s: attribute */
    E_ITEM,     /* a: object, b: key */
    E_SLICE,    /* a: object, kids[0..2]: start, stop, step (each may be NULL) */
    E_CALL,     /* a: callee, kids: arguments (E_KWARG for name=value) */
    E_FILTER,   /* a: operand, s: filter name, kids: arguments */
    E_TEST,     /* a: operand, s: test name, op: 1 for "is not", kids: arguments */
    E_KWARG,    /* s: name, a: value */
    E_UNARY,    /* op: 'n' not, '-' negate, '+' */
    E_BINARY,   /* op: see jinja_op, a, b */
    E_COND,     /* a: condition, b: then, c: else or NULL */
    E_LIST,     /* kids */
    E_TUPLE,    /* kids */
    E_DICT      /* kids: key, value, key, value ... */
} jinja_kind;

typedef enum {
    OP_OR = 1, OP_AND, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOT_IN,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT
} jinja_op;

typedef struct jinja_node jinja_node;
struct jinja_node {
    jinja_kind kind;
    int op;
    int line, col;
    const char *s, *s2;
    size_t n;
    json_t *lit;
    jinja_node *a, *b, *c;
    jinja_node **kids;
    size_t nkids;
};

/* Parse the tokens into a tree of kind N_BODY (arena memory). 0, or -1 with
 * line:column in err. */
int jinja_parse_tokens(jinja_arena *a, const jinja_token *toks, size_t ntoks, jinja_node **root,
                       char *err, size_t errn);

#endif
