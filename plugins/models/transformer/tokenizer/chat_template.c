/* chat_template.c: Hugging Face chat templates as C code (see chat_template.h).
 *
 * "auto" recognises a template by fragments of its source that decide what
 * it renders for a conversation of system/user/assistant messages without
 * tools. Both sides are compared in a canonical form (canonicalize()), so
 * that spacing, quote style, `{%-` trim markers and `message.role` versus
 * `message['role']` do not matter. Whatever the fragments do not pin down is
 * refused rather than guessed: the recognisers were checked against the real
 * templates in tests/fixtures/chat_templates/. */
#include "tokenizer/chat_template.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fail.h"
#include "jinja/jinja.h"
#include "tokenizer/bpe.h"
#include "tern/support/regular_file.h"
#include "tern/support/utf8.h"
#include "tern/support/text_buf.h"

typedef enum { FAM_NONE, FAM_PLAIN, FAM_CHATML, FAM_LLAMA3, FAM_LLAMA31, FAM_JINJA } family;

struct chat_template {
    family fam;
    char *default_system;   /* chatml: inserted when the first message is not system */
    char *bos;              /* the bos_token text the template writes first, or NULL */
    int writes_bos;         /* recognise(): the template writes bos_token */
    int always_generation;  /* llama3: the first Llama 3 template's unconditional prompt */
    char *knowledge;        /* llama3.1: "Cutting Knowledge Date: December 2023\n" */
    char *source_date;      /* llama3.1: the template's fixed date, NULL for strftime_now */
    char *date;             /* llama3.1: set by chat_template_set_date(), else NULL */
    jinja_template *jinja;  /* jinja: the model's template, interpreted */
    char *eos;              /* jinja: the file's eos_token, or NULL */
    char *end_of_turn;      /* jinja: what ends an assistant turn (jinja_end_of_turn()) */
    /* a C template recognised from a model's source: that source interpreted,
     * for what the C one does not render (tools, tool calls, other roles) */
    chat_template *full;
};

#define LLAMA_BOS "<|begin_of_text|>"
#define LLAMA_KNOWLEDGE "Cutting Knowledge Date: December 2023\n"
#define LLAMA31_DATE "26 Jul 2024"
#define EXPLICIT_NAMES "jinja, chatml, llama3, llama3.1, plain or none"

/* ---- a growing byte buffer (tern/support/text_buf.h) ------------------ */

typedef tern_text_buf buf;

/* ---- Python's str.strip() on UTF-8 -------------------------------------- */

/* Python's str.isspace(): Unicode White_Space plus the separators U+001C..1F. */
static int py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Append s with leading and trailing whitespace removed. */
static void put_trimmed(buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t start = 0, end = strlen(s);
    uint32_t c = 0;
    size_t k;
    while (start < end && (k = tern_utf8_decode(p + start, end - start, &c)) && py_space(c))
        start += k;
    while (end > start) {
        /* back up to the lead byte of the last character */
        size_t lead = end - 1;
        while (lead > start && end - lead < 4 && (p[lead] & 0xc0) == 0x80)
            lead--;
        k = tern_utf8_decode(p + lead, end - lead, &c);
        if (k != end - lead || !py_space(c))
            break;
        end = lead;
    }
    tern_text_put(b, s + start, end - start);
}

/* ---- rendering ---------------------------------------------------------- */

static int is_role(const char *r, const char *want)
{
    return strcmp(r, want) == 0;
}

static void llama_message(buf *b, const chat_message *m)
{
    tern_text_puts(b, "<|start_header_id|>");
    tern_text_puts(b, m->role);
    tern_text_puts(b, "<|end_header_id|>\n\n");
    put_trimmed(b, m->content);
    tern_text_puts(b, "<|eot_id|>");
}

/* strftime_now("%d %b %Y") as transformers gives it: the local date, English
 * month names whatever the locale. */
static void today(char out[16])
{
    static const char *mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm)) {
        snprintf(out, 16, "%s", LLAMA31_DATE); /* unreachable in practice */
        return;
    }
    snprintf(out, 16, "%02d %s %04d", tm.tm_mday % 100, mon[tm.tm_mon % 12],
             (tm.tm_year + 1900) % 10000);
}

static void render(const chat_template *t, const chat_message *m, size_t n, int gen, buf *b)
{
    size_t i = 0;
    switch (t->fam) {
    case FAM_CHATML:
        if (t->bos) /* Hermes, InternLM2 */
            tern_text_puts(b, t->bos);
        if (t->default_system && !is_role(m[0].role, "system")) {
            tern_text_puts(b, "<|im_start|>system\n");
            tern_text_puts(b, t->default_system);
            tern_text_puts(b, "<|im_end|>\n");
        }
        for (i = 0; i < n; i++) {
            tern_text_puts(b, "<|im_start|>");
            tern_text_puts(b, m[i].role);
            tern_text_puts(b, "\n");
            tern_text_puts(b, m[i].content);
            tern_text_puts(b, "<|im_end|>\n");
        }
        if (gen)
            tern_text_puts(b, "<|im_start|>assistant\n");
        break;
    case FAM_LLAMA3:
        tern_text_puts(b, t->bos);
        for (i = 0; i < n; i++)
            llama_message(b, &m[i]);
        if (gen || t->always_generation)
            tern_text_puts(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case FAM_LLAMA31: {
        char now[16];
        const char *date = t->date ? t->date : t->source_date;
        if (!date) {
            today(now);
            date = now;
        }
        tern_text_puts(b, t->bos);
        tern_text_puts(b, "<|start_header_id|>system<|end_header_id|>\n\n");
        tern_text_puts(b, t->knowledge);
        tern_text_puts(b, "Today Date: ");
        tern_text_puts(b, date);
        tern_text_puts(b, "\n\n");
        if (is_role(m[0].role, "system")) /* the first system message joins the preamble */
            put_trimmed(b, m[i++].content);
        tern_text_puts(b, "<|eot_id|>");
        for (; i < n; i++)
            llama_message(b, &m[i]);
        if (gen)
            tern_text_puts(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    }
    case FAM_PLAIN: {
        int first = 1;
        for (i = 0; i < n; i++) {
            if (!m[i].content[0])
                continue;
            if (!first)
                tern_text_puts(b, "\n\n");
            tern_text_puts(b, m[i].content);
            first = 0;
        }
        break;
    }
    case FAM_JINJA: /* chat_template_apply() renders these with apply_jinja() */
        break;
    case FAM_NONE:
        for (i = n; i-- > 0;)
            if (is_role(m[i].role, "user")) {
                tern_text_puts(b, m[i].content);
                break;
            }
        break;
    }
}

static int apply_jinja(const chat_template *t, json_t *msgs, json_t *tools, json_t *vars,
                       int add_generation_prompt, char **text, size_t *len, char *err,
                       size_t errn);

int chat_template_apply(const chat_template *t, const chat_message *msgs, size_t n,
                        int add_generation_prompt, char **text, size_t *len, char *err,
                        size_t errn)
{
    *text = NULL;
    *len = 0;
    if (t->fam == FAM_JINJA) {
        if (n == 0 || !msgs)
            return tf_fail(err, errn, "chat template jinja: no messages to format (give at "
                                      "least one)");
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++) {
            if (!msgs[i].role || !msgs[i].content) {
                json_decref(arr);
                return tf_fail(err, errn, "chat template jinja: message %zu has no %s", i,
                               msgs[i].role ? "content" : "role");
            }
            if (json_array_append_new(arr, json_pack("{s:s,s:s}", "role", msgs[i].role,
                                                     "content", msgs[i].content))) {
                json_decref(arr);
                arr = NULL;
            }
        }
        if (!arr)
            return tf_fail(err, errn, "chat template jinja: out of memory, or a message is not "
                                      "UTF-8");
        int rc = apply_jinja(t, arr, NULL, NULL, add_generation_prompt, text, len, err, errn);
        json_decref(arr);
        return rc;
    }
    if (n == 0 || !msgs)
        return tf_fail(err, errn, "chat template %s: no messages to format (give at least one)",
                    chat_template_name(t));
    int have_user = 0;
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return tf_fail(err, errn, "chat template %s: message %zu has no %s", chat_template_name(t),
                        i, msgs[i].role ? "content" : "role");
        if (!is_role(msgs[i].role, "system") && !is_role(msgs[i].role, "user") &&
            !is_role(msgs[i].role, "assistant"))
            return tf_fail(err, errn,
                        "chat template %s: message %zu has role \"%s\"; the roles are system, "
                        "user and assistant",
                        chat_template_name(t), i, msgs[i].role);
        have_user |= is_role(msgs[i].role, "user");
    }
    if (t->fam == FAM_NONE && !have_user)
        return tf_fail(err, errn, "chat template none: the conversation has no user message to use "
                               "as the prompt");
    buf b = {0};
    tern_text_puts(&b, ""); /* an empty conversation still gives a string */
    render(t, msgs, n, add_generation_prompt, &b);
    if (b.oom) {
        free(b.p);
        return tf_fail(err, errn, "chat template %s: out of memory formatting %zu messages",
                    chat_template_name(t), n);
    }
    *text = b.p;
    *len = b.n;
    return 0;
}

/* ---- the interpreted template (jinja/) ----------------------------------- */

static const char *token_text(json_t *v);

/* Render with the variables transformers' apply_chat_template passes:
 * messages, tools (None without), documents (None), add_generation_prompt,
 * the special tokens, then the caller's extra variables. date_string is set
 * by chat_template_set_date() (the Llama 3.x templates read it). */
static int apply_jinja(const chat_template *t, json_t *msgs, json_t *tools, json_t *vars,
                       int add_generation_prompt, char **text, size_t *len, char *err,
                       size_t errn)
{
    json_t *ctx = json_object();
    int bad = !ctx;
    if (ctx) {
        bad |= json_object_set(ctx, "messages", msgs);
        bad |= json_object_set_new(ctx, "tools", tools ? json_incref(tools) : json_null());
        bad |= json_object_set_new(ctx, "documents", json_null());
        bad |= json_object_set_new(ctx, "add_generation_prompt",
                                   json_boolean(add_generation_prompt));
        if (t->bos)
            bad |= json_object_set_new(ctx, "bos_token", json_string(t->bos));
        if (t->eos)
            bad |= json_object_set_new(ctx, "eos_token", json_string(t->eos));
        if (t->date)
            bad |= json_object_set_new(ctx, "date_string", json_string(t->date));
        if (vars)
            bad |= json_object_update(ctx, vars);
    }
    if (bad) {
        json_decref(ctx);
        return tf_fail(err, errn, "chat template jinja: out of memory");
    }
    char why[768];
    int rc = jinja_render(t->jinja, ctx, NULL, text, len, why, sizeof why);
    json_decref(ctx);
    if (rc != 0)
        return tf_fail(err, errn, "chat template jinja: %s", why);
    return 0;
}

/* A JSON argument's text, parsed; NULL text gives NULL. -1 when it is not
 * JSON of the type wanted. */
static int json_arg(const char *what, const char *text, json_type type, json_t **out, char *err,
                    size_t errn)
{
    *out = NULL;
    if (!text)
        return 0;
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (!v)
        return tf_fail(err, errn, "chat template: %s is not JSON (%d:%d: %s)", what, je.line,
                       je.column, je.text);
    if (json_is_null(v)) {
        json_decref(v);
        return 0;
    }
    if (json_typeof(v) != type) {
        json_decref(v);
        return tf_fail(err, errn, "chat template: %s must be a JSON %s", what,
                       type == JSON_ARRAY ? "array" : "object");
    }
    *out = v;
    return 0;
}

/* Whether every message is {role, content} strings with a role the C
 * templates render. */
static int plain_messages(json_t *msgs)
{
    size_t i;
    json_t *e;
    json_array_foreach(msgs, i, e) {
        const char *role = json_string_value(json_object_get(e, "role"));
        if (!json_is_object(e) || json_object_size(e) != 2 || !role ||
            !json_is_string(json_object_get(e, "content")) ||
            (strcmp(role, "system") != 0 && strcmp(role, "user") != 0 &&
             strcmp(role, "assistant") != 0))
            return 0;
    }
    return 1;
}

int chat_template_apply_json(const chat_template *t, const char *messages, const char *tools,
                             const char *variables, int add_generation_prompt, char **text,
                             size_t *len, char *err, size_t errn)
{
    *text = NULL;
    *len = 0;
    json_t *msgs, *tl = NULL, *vars = NULL;
    if (!messages)
        return tf_fail(err, errn, "chat template: no messages (give a JSON array)");
    if (json_arg("the messages", messages, JSON_ARRAY, &msgs, err, errn) ||
        json_arg("tools", tools, JSON_ARRAY, &tl, err, errn) ||
        json_arg("the variables", variables, JSON_OBJECT, &vars, err, errn)) {
        json_decref(msgs);
        json_decref(tl);
        return -1;
    }
    int rc = -1;
    if (!msgs || json_array_size(msgs) == 0) {
        tf_fail(err, errn, "chat template %s: no messages to format (give at least one)",
                chat_template_name(t));
    } else if (t->fam == FAM_JINJA) {
        rc = apply_jinja(t, msgs, tl, vars, add_generation_prompt, text, len, err, errn);
    } else if (t->full && (tl || (vars && json_object_size(vars)) || !plain_messages(msgs))) {
        rc = apply_jinja(t->full, msgs, tl, vars, add_generation_prompt, text, len, err, errn);
    } else if (tl || (vars && json_object_size(vars))) {
        tf_fail(err, errn, "chat template %s: tools and template variables need the model's "
                           "own template; set chat_template = \"jinja\"", chat_template_name(t));
    } else {
        size_t n = json_array_size(msgs), i;
        chat_message *m = calloc(n, sizeof *m);
        json_t *e;
        rc = m ? 0 : tf_fail(err, errn, "chat template: out of memory");
        json_array_foreach(msgs, i, e) {
            if (rc)
                break;
            json_t *role = json_object_get(e, "role"), *content = json_object_get(e, "content");
            if (!json_is_object(e) || !json_is_string(role) || !json_is_string(content) ||
                json_object_size(e) != 2)
                rc = tf_fail(err, errn, "chat template %s: message %zu must be {\"role\", "
                                        "\"content\"} strings only (tool calls need "
                                        "chat_template = \"jinja\")", chat_template_name(t), i);
            else
                m[i] = (chat_message){json_string_value(role), json_string_value(content)};
        }
        if (rc == 0)
            rc = chat_template_apply(t, m, n, add_generation_prompt, text, len, err, errn);
        free(m);
    }
    json_decref(msgs);
    json_decref(tl);
    json_decref(vars);
    return rc;
}

/* What ends an assistant turn in an interpreted template: the first of the
 * known turn-end tokens its source writes, else the eos_token. */
static const char *jinja_end_of_turn(const char *src, const char *eos)
{
    static const char *const ends[] = {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (strstr(src, ends[i]))
            return ends[i];
    return eos;
}

/* t becomes the interpreted template of source src, with the file's tokens. */
static int make_jinja(chat_template *t, const char *path, const char *src, json_t *root,
                      char *err, size_t errn)
{
    char why[512];
    if (jinja_parse(src, strlen(src), &t->jinja, why, sizeof why) != 0)
        return tf_fail(err, errn, "%s: chat_template: %s; fix the template or choose one "
                                  "explicitly (" EXPLICIT_NAMES ")", path, why);
    t->fam = FAM_JINJA;
    const char *bos = token_text(json_object_get(root, "bos_token"));
    const char *eos = token_text(json_object_get(root, "eos_token"));
    const char *eot = jinja_end_of_turn(src, eos);
    /* the BOS counts as written by the template only when it writes bos_token */
    if ((bos && strstr(src, "bos_token") && !(t->bos = strdup(bos))) ||
        (eos && !(t->eos = strdup(eos))) || (eot && !(t->end_of_turn = strdup(eot))))
        return tf_fail(err, errn, "chat template: out of memory reading %s", path);
    return 0;
}

/* ---- recognising a template's source ------------------------------------ */

/* Append a string literal's value in canonical form: single-quoted, with
 * backslash, quote, newline, CR and tab escaped. */
static void put_canonical_literal(buf *b, const char *v, size_t n)
{
    tern_text_put(b, "'", 1);
    for (size_t i = 0; i < n; i++) {
        switch (v[i]) {
        case '\\': tern_text_puts(b, "\\\\"); break;
        case '\'': tern_text_puts(b, "\\'"); break;
        case '\n': tern_text_puts(b, "\\n"); break;
        case '\r': tern_text_puts(b, "\\r"); break;
        case '\t': tern_text_puts(b, "\\t"); break;
        default: tern_text_put(b, &v[i], 1);
        }
    }
    tern_text_put(b, "'", 1);
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The template source in canonical form: inside {{ }} and {% %} whitespace
 * and trim markers dropped, string literals re-quoted (canonical_literal) and
 * `x.name` written `x['name']`; comments dropped; the text between tags as it
 * renders, i.e. with the whitespace control transformers uses applied (`-`
 * markers, trim_blocks, lstrip_blocks). *raw is set when some of that text
 * survives: the supported templates write everything from {{ }}, so such
 * text would be output the fragments do not account for. Returns a malloc'd
 * string, or NULL when out of memory. */
static char *canonicalize(const char *s, int *raw)
{
    buf b = {0};
    tern_text_puts(&b, "");
    size_t i = 0;
    int after = 0; /* how the previous tag ended: 0 {{ }}, 1 block or comment, 2 a '-' marker */
    for (;;) {
        /* the text up to the next tag */
        size_t j = i;
        while (s[j] && !(s[j] == '{' && (s[j + 1] == '{' || s[j + 1] == '%' || s[j + 1] == '#')))
            j++;
        size_t a = i, z = j;
        if (after == 2) {
            while (a < z && space(s[a]))
                a++;
        } else if (after == 1) { /* trim_blocks: the newline after a block goes */
            if (s[a] == '\r' && s[a + 1] == '\n')
                a += 2;
            else if (s[a] == '\n')
                a++;
        }
        if (s[j] && s[j + 2] == '-') {
            while (z > a && space(s[z - 1]))
                z--;
        } else if (s[j] && s[j + 1] != '{' && s[j + 2] != '+') {
            /* lstrip_blocks: blanks between a line's start and a block go */
            size_t k = z;
            while (k > a && (s[k - 1] == ' ' || s[k - 1] == '\t'))
                k--;
            if (k == 0 || s[k - 1] == '\n')
                z = k;
        }
        tern_text_put(&b, s + a, z - a);
        *raw |= z > a;
        i = j;
        if (!s[i])
            break;
        if (s[i + 1] == '#') {
            const char *e = strstr(s + i + 2, "#}");
            if (!e)
                break;
            after = e > s + i + 2 && e[-1] == '-' ? 2 : 1;
            i = (size_t)(e - s) + 2;
            continue;
        }
        char close = s[i + 1] == '{' ? '}' : '%';
        tern_text_put(&b, s + i, 2);
        i += 2;
        if (s[i] == '-' || s[i] == '+')
            i++;
        after = close == '%' ? 1 : 0;
        while (s[i]) {
            char c = s[i];
            if (space(c)) {
                i++;
            } else if (c == close && s[i + 1] == '}') {
                tern_text_put(&b, s + i, 2);
                i += 2;
                break;
            } else if ((c == '-' || c == '+') && s[i + 1] == close && s[i + 2] == '}') {
                after = c == '-' ? 2 : 0; /* a marker before the closing delimiter */
                i++;
            } else if (c == '\'' || c == '"') {
                buf v = {0};
                tern_text_puts(&v, "");
                for (i++; s[i] && s[i] != c; i++) {
                    char d = s[i];
                    if (d == '\\' && s[i + 1]) {
                        i++;
                        switch (s[i]) {
                        case 'n': d = '\n'; break;
                        case 't': d = '\t'; break;
                        case 'r': d = '\r'; break;
                        case '\\': case '\'': case '"': d = s[i]; break;
                        default: tern_text_put(&v, "\\", 1); d = s[i]; /* kept as written */
                        }
                    }
                    tern_text_put(&v, &d, 1);
                }
                if (s[i])
                    i++;
                b.oom |= v.oom;
                put_canonical_literal(&b, v.p ? v.p : "", v.n);
                free(v.p);
            } else if (c == '.' && ident_char(s[i + 1]) && !(s[i + 1] >= '0' && s[i + 1] <= '9') &&
                       b.n > 0 && (ident_char(b.p[b.n - 1]) || b.p[b.n - 1] == ']' ||
                                   b.p[b.n - 1] == ')')) {
                size_t k = i + 1;
                while (ident_char(s[k]))
                    k++;
                tern_text_puts(&b, "['");
                tern_text_put(&b, s + i + 1, k - i - 1);
                tern_text_puts(&b, "']");
                i = k;
            } else {
                tern_text_put(&b, &c, 1);
                i++;
            }
        }
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* Decode the canonical literal whose text starts at q (after its opening
 * quote) up to its closing quote. A malloc'd string, or NULL when out of
 * memory. */
static char *decode_literal(const char *q)
{
    buf v = {0};
    tern_text_puts(&v, "");
    for (; *q && *q != '\''; q++) {
        char d = *q;
        if (d == '\\' && q[1]) {
            q++;
            d = *q == 'n' ? '\n' : *q == 't' ? '\t' : *q == 'r' ? '\r' : *q;
        }
        tern_text_put(&v, &d, 1);
    }
    if (v.oom) {
        free(v.p);
        return NULL;
    }
    return v.p;
}

/* In canonical source c, the literals that start with `prefix` and go on to
 * hold `stop`: the text between the two of the first one (malloc'd; NULL
 * when there is none). *found counts them, *differ is set when their texts
 * disagree, *oom when out of memory. */
static char *literal_value(const char *c, const char *prefix, const char *stop, int *found,
                           int *differ, int *oom)
{
    char *first = NULL;
    size_t plen = strlen(prefix);
    *found = 0, *differ = 0, *oom = 0;
    for (const char *p = c; (p = strstr(p, prefix)) != NULL; p += plen) {
        if (p == c || p[-1] != '\'') /* only where a literal starts */
            continue;
        char *v = decode_literal(p + plen);
        if (!v) {
            free(first);
            *oom = 1;
            return NULL;
        }
        char *s = strstr(v, stop);
        if (!s) { /* e.g. '<|im_start|>system\n' + messages[0]['content'] */
            free(v);
            continue;
        }
        *s = '\0';
        (*found)++;
        if (!first) {
            first = v;
        } else {
            *differ |= strcmp(first, v) != 0;
            free(v);
        }
    }
    return first;
}

/* Fragments, in canonical form. */
#define F_CHATML_MESSAGE \
    "'<|im_start|>'+message['role']+'\\n'+message['content']+'<|im_end|>'+'\\n'"
#define F_CHATML_GEN "{%ifadd_generation_prompt%}{{'<|im_start|>assistant\\n'}}{%endif%}"
#define F_LLAMA_MESSAGE                                                                          \
    "'<|start_header_id|>'+message['role']+'<|end_header_id|>\\n\\n'+message['content']|trim+'<|" \
    "eot_id|>'"
#define F_LLAMA_GEN_LIT "{{'<|start_header_id|>assistant<|end_header_id|>\\n\\n'}}"
#define F_LLAMA_GEN "{%ifadd_generation_prompt%}" F_LLAMA_GEN_LIT "{%endif%}"
#define F_LLAMA3_BOS "{%ifloop['index0']==0%}{%setcontent=bos_token+content%}{%endif%}"
#define F_LLAMA31_SYSTEM "{%setsystem_message=messages[0]['content']|trim%}"
#define F_LLAMA31_HEADER "{{'<|start_header_id|>system<|end_header_id|>\\n\\n'}}"
#define F_LLAMA31_DATE "{{'Today Date: '+date_string+'\\n\\n'}}"
#define F_LLAMA31_END "{{system_message}}{{'<|eot_id|>'}}"
#define F_STRFTIME "strftime_now('%d %b %Y')"

/* Features of templates tern does not implement: their output differs. */
static const char *const unsupported[][2] = {
    {"<think>", "reasoning (<think>) blocks"},
    {"reasoning_content", "reasoning content"},
    {"enable_thinking", "a thinking switch"},
    {"image", "images"},
    {"video", "videos"},
};

static int count(const char *c, const char *what)
{
    int n = 0;
    for (const char *p = c; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* ChatML templates write the system turn in one of three ways: the default
 * prompt as one literal ('<|im_start|>system\nYou are ...<|im_end|>\n'),
 * the first message (Qwen2.5), or the tools header (Qwen2.5, with tools
 * only). Anything else (e.g. a default kept in a variable) is not followed. */
static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int chatml_system_ok(const char *c)
{
    static const char lit[] = "'<|im_start|>system";
    static const char first[] = "'<|im_start|>system\\n'+messages[0]['content']+'<|im_end|>\\n'";
    static const char header[] = "'<|im_start|>system\\n'}}";
    static const char tools[] = "{%iftools%}{{";
    for (const char *p = c; (p = strstr(p, lit)) != NULL; p += strlen(lit)) {
        const char *end = strchr(p + 1, '\'');
        while (end && end[-1] == '\\') /* an escaped quote */
            end = strchr(end + 1, '\'');
        const char *im_end = strstr(p, "<|im_end|>");
        if (end && im_end && im_end < end) /* the default prompt */
            continue;
        if (starts(p, first))
            continue;
        if (starts(p, header) && (size_t)(p - c) >= strlen(tools) &&
            starts(p - strlen(tools), tools))
            continue;
        return 0;
    }
    return 1;
}

/* Recognise canonical template c. 0 with t filled, or -1 with the reason in
 * why (a phrase). */
static int recognise(const char *c, chat_template *t, char *why, size_t whyn)
{
    int found, differ, oom;
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (strstr(c, unsupported[i][0]))
            return tf_fail(why, whyn, "it uses %s", unsupported[i][1]);
    if (strstr(c, "eos_token"))
        return tf_fail(why, whyn, "it writes eos_token");
    int bos_uses = count(c, "bos_token");
    t->writes_bos = strncmp(c, "{{bos_token}}", 13) == 0;

    if (strstr(c, F_CHATML_MESSAGE)) {
        if (!strstr(c, F_CHATML_GEN))
            return tf_fail(why, whyn, "it is ChatML-like, but its generation prompt is not "
                                   "'<|im_start|>assistant\\n' under add_generation_prompt");
        t->fam = FAM_CHATML;
        if (bos_uses != t->writes_bos)
            return tf_fail(why, whyn, "it writes bos_token other than at the start");
        if (!chatml_system_ok(c))
            return tf_fail(why, whyn, "it builds its system turn in a way tern does not follow");
        t->default_system = literal_value(c, "<|im_start|>system\\n", "<|im_end|>", &found,
                                          &differ, &oom);
        if (oom)
            return tf_fail(why, whyn, "out of memory");
        if (differ)
            return tf_fail(why, whyn, "it holds two different default system prompts");
        if (found && !strstr(c, "messages[0]['role']!='system'") &&
            !strstr(c, "messages[0]['role']=='system'"))
            return tf_fail(why, whyn, "it writes a system prompt, but not only when the first "
                                   "message is not a system message");
        return 0;
    }
    if (strstr(c, F_LLAMA_MESSAGE)) {
        if (bos_uses != 1)
            return tf_fail(why, whyn, "it writes bos_token other than once at the start");
        t->writes_bos = 1;
        if (strstr(c, "Cutting Knowledge Date: ")) {
            if (!strstr(c, F_LLAMA31_SYSTEM) || !strstr(c, F_LLAMA31_HEADER) ||
                !strstr(c, F_LLAMA31_DATE) || !strstr(c, F_LLAMA31_END) ||
                strncmp(c, "{{bos_token}}", 13) != 0 || !strstr(c, F_LLAMA_GEN))
                return tf_fail(why, whyn, "it is Llama-3.1-like, but its system block differs from "
                                       "the Llama 3.1/3.2 templates");
            t->fam = FAM_LLAMA31;
            const char *k = strstr(c, "'Cutting Knowledge Date: ");
            if (!k || strstr(k + 1, "'Cutting Knowledge Date: "))
                return tf_fail(why, whyn, "its knowledge-date line is not one literal");
            if (!(t->knowledge = decode_literal(k + 1)))
                return tf_fail(why, whyn, "out of memory");
            if (!strstr(c, F_STRFTIME)) { /* Llama 3.1: a fixed date */
                if (strstr(c, "strftime_now"))
                    return tf_fail(why, whyn,
                                "it formats the date other than strftime_now(\"%%d %%b %%Y\")");
                const char *d = strstr(c, "{%setdate_string='");
                if (!d)
                    return tf_fail(why, whyn, "it has neither strftime_now nor a fixed date_string");
                if (!(t->source_date = decode_literal(d + strlen("{%setdate_string='"))))
                    return tf_fail(why, whyn, "out of memory");
                if (!t->source_date[0] || strpbrk(t->source_date, "\r\n"))
                    return tf_fail(why, whyn, "its date_string is not one line of text");
            }
            return 0;
        }
        if (!strstr(c, F_LLAMA3_BOS))
            return tf_fail(why, whyn, "it is Llama-3-like, but does not put bos_token before the "
                                   "first message");
        t->fam = FAM_LLAMA3;
        if (strstr(c, F_LLAMA_GEN))
            return 0;
        size_t cl = strlen(c), gl = strlen("{%endfor%}" F_LLAMA_GEN_LIT);
        if (!strstr(c, "add_generation_prompt") && cl >= gl &&
            strcmp(c + cl - gl, "{%endfor%}" F_LLAMA_GEN_LIT) == 0) {
            t->always_generation = 1; /* as the first Llama 3 template did */
            return 0;
        }
        return tf_fail(why, whyn, "it is Llama-3-like, but its generation prompt differs");
    }
    if (strstr(c, "<|im_start|>"))
        return tf_fail(why, whyn, "it is ChatML-like, but does not write every message as "
                               "<|im_start|>{role}\\n{content}<|im_end|>\\n");
    if (strstr(c, "<|start_header_id|>"))
        return tf_fail(why, whyn, "it is Llama-3-like, but does not write every message as "
                               "<|start_header_id|>{role}<|end_header_id|>\\n\\n{content|trim}"
                               "<|eot_id|>");
    return tf_fail(why, whyn, "it matches neither the ChatML (Qwen2/2.5, SmolLM) nor the Llama 3 "
                           "templates");
}

/* ---- choosing ----------------------------------------------------------- */

static chat_template *new_template(family fam)
{
    chat_template *t = calloc(1, sizeof *t);
    if (t)
        t->fam = fam;
    return t;
}

/* Set up a template of a named family as the explicit names define it. */
static int explicit_template(const char *name, chat_template **out)
{
    static const struct {
        const char *name;
        family fam;
    } names[] = {{"none", FAM_NONE}, {"plain", FAM_PLAIN}, {"chatml", FAM_CHATML},
                 {"llama3", FAM_LLAMA3}, {"llama3.1", FAM_LLAMA31}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(name, names[i].name) != 0)
            continue;
        chat_template *t = new_template(names[i].fam);
        if (!t)
            return -2;
        int bad = 0;
        if (t->fam == FAM_LLAMA3 || t->fam == FAM_LLAMA31)
            bad |= !(t->bos = strdup(LLAMA_BOS));
        if (t->fam == FAM_LLAMA31) {
            bad |= !(t->knowledge = strdup(LLAMA_KNOWLEDGE));
            bad |= !(t->source_date = strdup(LLAMA31_DATE));
        }
        if (bad) {
            chat_template_free(t);
            return -2;
        }
        *out = t;
        return 0;
    }
    return -1;
}

/* A special token's text: a string, or an AddedToken {"content": ...}. */
static const char *token_text(json_t *v)
{
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int from_config_text(const char *path, const char *text, size_t len, int force_jinja,
                            chat_template **out, char *err, size_t errn);

static int from_config(const char *dir, int force_jinja, chat_template **out, char *err,
                       size_t errn)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= (int)sizeof path)
        return tf_fail(err, errn, "chat template: the model directory path is too long: %s", dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT && force_jinja)
            return tf_fail(err, errn, "chat template jinja: %s does not exist; the model's "
                                      "template comes from it", path);
        if (errno == ENOENT) /* not a Hugging Face model: no template */
            return explicit_template("none", out) == 0 ? 0
                   : tf_fail(err, errn, "chat template: out of memory");
        return tf_fail(err, errn, "%s: %s", path, strerror(errno));
    }
    char *text, unread[TERN_REGULAR_WHY_MAX];
    size_t len;
    if (tern_regular_read(path, BPE_FILE_MAX, &text, &len, unread, sizeof unread) != 0)
        return tf_fail(err, errn, "%s: cannot read: %s", path, unread);
    int rc = from_config_text(path, text, len, force_jinja, out, err, errn);
    free(text);
    return rc;
}

/* "auto" (or "jinja" when force_jinja) over tokenizer_config.json's text,
 * read from `path` */
static int from_config_text(const char *path, const char *text, size_t len, int force_jinja,
                            chat_template **out, char *err, size_t errn)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return tf_fail(err, errn, "%s: not valid JSON (line %d: %s); fix or replace the file", path,
                    je.line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return tf_fail(err, errn, "%s: must hold a JSON object", path);
    }
    json_t *ct = json_object_get(root, "chat_template");
    const char *src = NULL;
    if (json_is_string(ct)) {
        src = json_string_value(ct);
    } else if (json_is_array(ct)) {
        size_t i;
        json_t *e;
        json_array_foreach(ct, i, e) {
            const char *nm = json_string_value(json_object_get(e, "name"));
            if (nm && strcmp(nm, "default") == 0) {
                src = json_string_value(json_object_get(e, "template"));
                if (!src) {
                    json_decref(root);
                    return tf_fail(err, errn,
                                "%s: chat_template \"default\" has no \"template\" string", path);
                }
            }
        }
        if (!src) {
            json_decref(root);
            return tf_fail(err, errn, "%s: chat_template is a list without a \"default\" entry; "
                                   "choose a template explicitly (" EXPLICIT_NAMES ")", path);
        }
    } else if (ct && !json_is_null(ct)) {
        json_decref(root);
        return tf_fail(err, errn, "%s: chat_template must be a string or a list of "
                               "{\"name\", \"template\"} objects", path);
    }
    if (!src && force_jinja) {
        json_decref(root);
        return tf_fail(err, errn, "%s: has no chat_template for \"jinja\" to interpret; choose "
                                  "a template explicitly (chatml, llama3, llama3.1, plain or none)",
                       path);
    }
    if (!src) { /* a base model */
        json_decref(root);
        return explicit_template("none", out) == 0 ? 0
               : tf_fail(err, errn, "chat template: out of memory");
    }

    chat_template *t = new_template(FAM_NONE);
    int raw = 0;
    char *c = canonicalize(src, &raw);
    char why[256] = "";
    int rc = -1;
    if (!t || !c) {
        tf_fail(err, errn, "chat template: out of memory reading %s", path);
    } else if (force_jinja || raw || recognise(c, t, why, sizeof why) != 0) {
        /* not one of the C templates: interpret the model's own */
        chat_template_free(t);
        t = new_template(FAM_NONE);
        if (!t)
            tf_fail(err, errn, "chat template: out of memory reading %s", path);
        else if (make_jinja(t, path, src, root, err, errn) == 0)
            rc = 0;
    } else if (t->writes_bos) {
        /* the llama templates' BOS is known; a ChatML one's is not */
        const char *bos = token_text(json_object_get(root, "bos_token"));
        if (!bos && t->fam == FAM_CHATML)
            tf_fail(err, errn, "%s: the chat_template writes bos_token, but the file has no "
                            "bos_token; add it (the tokenizer's BOS text) or choose a template "
                            "explicitly (" EXPLICIT_NAMES ")", path);
        else if (!(t->bos = strdup(bos ? bos : LLAMA_BOS)))
            tf_fail(err, errn, "chat template: out of memory reading %s", path);
        else
            rc = 0;
    } else {
        rc = 0;
    }
    if (rc == 0 && t->fam != FAM_JINJA) {
        /* the same source interpreted, for tools and tool turns; a source the
         * C template renders but the interpreter cannot parse keeps none */
        char ignored[8];
        if (!(t->full = new_template(FAM_NONE)))
            rc = tf_fail(err, errn, "chat template: out of memory reading %s", path);
        else if (make_jinja(t->full, path, src, root, ignored, sizeof ignored) != 0)
            chat_template_free(t->full), t->full = NULL;
    }
    free(c);
    json_decref(root);
    if (rc != 0) {
        chat_template_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int chat_template_from_dir(const char *dir, const char *name, chat_template **out, char *err,
                           size_t errn)
{
    *out = NULL;
    if (!name)
        name = "auto";
    if (strcmp(name, "jinja") == 0) {
        if (!dir)
            return tf_fail(err, errn, "chat template jinja: no model directory to read the "
                                      "template from; choose another template (" EXPLICIT_NAMES
                                      ")");
        return from_config(dir, 1, out, err, errn);
    }
    if (strcmp(name, "auto") == 0) {
        if (!dir)
            return explicit_template("none", out) == 0 ? 0
                   : tf_fail(err, errn, "chat template: out of memory");
        return from_config(dir, 0, out, err, errn);
    }
    int rc = explicit_template(name, out);
    if (rc == -1)
        return tf_fail(err, errn,
                    "chat template \"%s\" is unknown; the templates are auto, " EXPLICIT_NAMES,
                    name);
    if (rc == -2)
        return tf_fail(err, errn, "chat template: out of memory");
    return 0;
}

int chat_template_from_config_text(const char *where, const char *text, size_t len,
                                   const char *name, chat_template **out, char *err, size_t errn)
{
    *out = NULL;
    if (!name || strcmp(name, "auto") == 0 || strcmp(name, "jinja") == 0)
        return from_config_text(where, text, len, name && strcmp(name, "jinja") == 0, out, err,
                                errn);
    return chat_template_from_dir(NULL, name, out, err, errn);
}

/* ---- settings and accessors --------------------------------------------- */

int chat_template_set_default_system(chat_template *t, const char *text, char *err, size_t errn)
{
    if (t->fam != FAM_CHATML)
        return tf_fail(err, errn, "chat template %s: a default system prompt applies to chatml only",
                    chat_template_name(t));
    char *s = NULL;
    if (text && text[0] && !(s = strdup(text)))
        return tf_fail(err, errn, "chat template: out of memory");
    free(t->default_system);
    t->default_system = s;
    return 0;
}

int chat_template_set_date(chat_template *t, const char *date, char *err, size_t errn)
{
    if (t->fam != FAM_LLAMA31 && t->fam != FAM_JINJA)
        return tf_fail(err, errn, "chat template %s: a date applies to llama3.1 and jinja only",
                    chat_template_name(t));
    if (date && (!date[0] || strpbrk(date, "\r\n")))
        return tf_fail(err, errn, "chat template llama3.1: the date must be one non-empty line "
                               "such as \"26 Jul 2024\"");
    char *s = NULL;
    if (date && !(s = strdup(date)))
        return tf_fail(err, errn, "chat template: out of memory");
    free(t->date);
    t->date = s;
    /* the interpreted copy renders the same date */
    return t->full ? chat_template_set_date(t->full, date, err, errn) : 0;
}

int chat_template_interprets(const chat_template *t)
{
    return t->fam == FAM_JINJA || t->full != NULL;
}

const char *chat_template_name(const chat_template *t)
{
    switch (t->fam) {
    case FAM_PLAIN: return "plain";
    case FAM_CHATML: return "chatml";
    case FAM_LLAMA3: return "llama3";
    case FAM_LLAMA31: return "llama3.1";
    case FAM_JINJA: return "jinja";
    default: return "none";
    }
}

const char *chat_template_default_system(const chat_template *t)
{
    return t->default_system;
}

const char *chat_template_end_of_turn(const chat_template *t)
{
    switch (t->fam) {
    case FAM_CHATML: return "<|im_end|>";
    case FAM_LLAMA3:
    case FAM_LLAMA31: return "<|eot_id|>";
    case FAM_JINJA: return t->end_of_turn;
    default: return NULL;
    }
}

int chat_template_renders_bos(const chat_template *t)
{
    return t->bos != NULL;
}

const char *chat_template_bos(const chat_template *t)
{
    return t->bos;
}

void chat_template_free(chat_template *t)
{
    if (!t)
        return;
    free(t->default_system);
    free(t->bos);
    free(t->knowledge);
    free(t->source_date);
    free(t->date);
    jinja_free(t->jinja);
    free(t->eos);
    free(t->end_of_turn);
    chat_template_free(t->full);
    free(t);
}
