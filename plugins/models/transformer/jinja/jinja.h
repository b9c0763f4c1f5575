/*
 * jinja.h: a small Jinja2 interpreter for the templates models ship, the
 * Hugging Face chat templates in tokenizer_config.json or a GGUF's
 * tokenizer.chat_template, rendered as transformers renders them
 * (ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the
 * loopcontrols extension; its tojson, raise_exception and strftime_now).
 * README.md in this folder lists the subset it understands.
 *
 *   jinja_template *t;
 *   if (jinja_parse(src, len, &t, err, sizeof err) != 0) ...
 *   json_t *ctx = json_pack("{s:o,s:b}", "messages", msgs, "add_generation_prompt", 1);
 *   if (jinja_render(t, ctx, NULL, &text, &n, err, sizeof err) != 0) ...
 *   free(text); json_decref(ctx); jinja_free(t);
 *
 * Values are jansson values: a template's variables are the keys of the
 * context object. A parsed template is read-only, so one may be rendered by
 * several threads at once. Functions that can fail return 0, or -1 with a
 * message in err (what, where as line:column in the template, how to fix);
 * err may be NULL.
 */
#ifndef TERN_JINJA_H
#define TERN_JINJA_H

#include <jansson.h>
#include <stddef.h>

/* What one render may use, so that a hostile template cannot hang the
 * process, exhaust memory or overflow the stack. Exceeding one is an error. */
typedef struct jinja_limits {
    size_t max_output;     /* bytes of rendered text */
    size_t max_depth;      /* nesting of expressions, blocks and macro calls */
    size_t max_iterations; /* for-loop iterations in all, and range() lengths */
    size_t max_steps;      /* expression and statement evaluations in all */
} jinja_limits;

#define JINJA_MAX_OUTPUT ((size_t)16 << 20)
#define JINJA_MAX_DEPTH 200
#define JINJA_MAX_ITERATIONS ((size_t)1 << 20)
#define JINJA_MAX_STEPS ((size_t)1 << 25)
/* The template's source: larger is refused by jinja_parse(). */
#define JINJA_MAX_SOURCE ((size_t)1 << 20)

/* The limits above. */
jinja_limits jinja_default_limits(void);

typedef struct jinja_template jinja_template; /* opaque */

/* Parse len bytes of template source. On success *out is a new template
 * (jinja_free()); on a syntax error *out is NULL and err gives line:column
 * and what was expected. */
int jinja_parse(const char *src, size_t len, jinja_template **out, char *err, size_t errn);

/* Render t with the variables of the JSON object ctx (borrowed, not
 * changed). limits NULL: jinja_default_limits(). *text is malloc'd and
 * NUL-terminated, *len its length; on failure *text is NULL. A template's
 * raise_exception("msg") fails with msg in err. */
int jinja_render(const jinja_template *t, const json_t *ctx, const jinja_limits *limits,
                 char **text, size_t *len, char *err, size_t errn);

/* Free t. NULL is allowed. */
void jinja_free(jinja_template *t);

#endif
