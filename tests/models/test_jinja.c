/* The Jinja interpreter (plugins/models/transformer/jinja/) against the
 * renderings transformers gives of real chat templates
 * (tests/fixtures/jinja_templates/, made by tests/ref/jinja_chat_ref.py),
 * its errors and limits, and the chat template selection over it. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"
#include "tokenizer/chat_template.h"

#define FIXTURES TERN_TEST_SOURCE_DIR "/tests/fixtures/jinja_templates"

static const char *const models[] = {"qwen2_5", "qwen3", "llama3_1", "llama3_2", "smollm2",
                                     "mistral_nemo", "gemma2", "phi3_5"};
#define NMODELS (sizeof models / sizeof models[0])

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert(j, "%s: %s (line %d)", path, je.text, je.line);
    return j;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return s;
}

static jinja_template *parse_ok(const char *src)
{
    jinja_template *t;
    char err[512] = "";
    cr_assert_eq(jinja_parse(src, strlen(src), &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* Render src with the variables of JSON text vars; returns the text or NULL
 * with the message in err. */
static char *render(const char *src, const char *vars, char *err, size_t errn)
{
    jinja_template *t;
    if (jinja_parse(src, strlen(src), &t, err, errn) != 0)
        return NULL;
    json_t *ctx = json_loads(vars ? vars : "{}", 0, NULL);
    cr_assert(ctx, "bad test JSON: %s", vars);
    char *text = NULL;
    size_t len;
    jinja_render(t, ctx, NULL, &text, &len, err, errn);
    json_decref(ctx);
    jinja_free(t);
    return text;
}

static void expect(const char *src, const char *vars, const char *want)
{
    char err[512] = "";
    char *got = render(src, vars, err, sizeof err);
    cr_assert(got, "%s: %s", src, err);
    cr_expect_str_eq(got, want, "%s", src);
    free(got);
}

static void expect_error(const char *src, const char *vars, const char *fragment)
{
    char err[512] = "";
    char *got = render(src, vars, err, sizeof err);
    cr_expect_null(got, "%s rendered \"%s\"", src, got ? got : "");
    free(got);
    cr_expect(strstr(err, fragment), "%s: the message \"%s\" lacks \"%s\"", src, err, fragment);
}

/* The variables transformers passes: messages, tools (None when there are
 * none), documents, add_generation_prompt, the special tokens, the extra
 * keyword arguments. */
static json_t *context_of(json_t *doc, json_t *c)
{
    json_t *ctx = json_object();
    json_object_set(ctx, "messages", json_object_get(c, "messages"));
    json_object_set(ctx, "tools", json_object_get(c, "tools"));
    json_object_set_new(ctx, "documents", json_null());
    json_object_set(ctx, "add_generation_prompt", json_object_get(c, "add_generation_prompt"));
    const char *tok[] = {"bos_token", "eos_token"};
    for (int k = 0; k < 2; k++)
        if (json_is_string(json_object_get(doc, tok[k])))
            json_object_set(ctx, tok[k], json_object_get(doc, tok[k]));
    json_object_update(ctx, json_object_get(c, "variables"));
    return ctx;
}

Test(jinja, fixtures_byte_for_byte)
{
    int cases = 0, errors = 0;
    for (size_t m = 0; m < NMODELS; m++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/%s/template.jinja", FIXTURES, models[m]);
        char *src = slurp(path, &len);
        snprintf(path, sizeof path, "%s/%s/cases.json", FIXTURES, models[m]);
        json_t *doc = load(path);
        jinja_template *t;
        char err[1024] = "";
        cr_assert_eq(jinja_parse(src, len, &t, err, sizeof err), 0, "%s: %s", models[m], err);
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(doc, "cases"), i, c) {
            const char *name = json_string_value(json_object_get(c, "name"));
            json_t *ctx = context_of(doc, c);
            char *text = NULL;
            size_t n = 0;
            int rc = jinja_render(t, ctx, NULL, &text, &n, err, sizeof err);
            const char *want = json_string_value(json_object_get(c, "expected"));
            const char *want_err = json_string_value(json_object_get(c, "error"));
            if (want) {
                cr_expect_eq(rc, 0, "%s/%s: %s", models[m], name, err);
                if (rc == 0)
                    cr_expect(n == strlen(want) && memcmp(text, want, n) == 0,
                              "%s/%s:\n--- got\n%s\n--- want\n%s", models[m], name, text, want);
            } else {
                cr_expect_neq(rc, 0, "%s/%s rendered", models[m], name);
                cr_expect(strstr(err, want_err), "%s/%s: \"%s\" lacks \"%s\"", models[m], name, err,
                          want_err);
                errors++;
            }
            free(text);
            json_decref(ctx);
            cases++;
        }
        jinja_free(t);
        json_decref(doc);
        free(src);
    }
    cr_expect_geq(cases, 60);
    cr_expect_geq(errors, 1);
}

Test(jinja, expressions)
{
    expect("{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ 2 ** 10 }}|{{ 7 / 2 }}", NULL,
           "7|3|-4|1|1024|3.5");
    expect("{{ 'a' ~ 1 ~ none ~ true }}|{{ [1, 'x', none] }}|{{ {'k': [1.5, false]} }}", NULL,
           "a1NoneTrue|[1, 'x', None]|{'k': [1.5, False]}");
    expect("{{ x.a }}{{ x['b'][1] }}{{ x.b[-1] }}{{ x.missing }}", "{\"x\":{\"a\":\"A\",\"b\":[1,2,3]}}",
           "A23");
    expect("{{ s[1:3] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ l[1:] }}|{{ l[::2] }}",
           "{\"s\":\"h\u00e9llo\",\"l\":[1,2,3,4]}", "\u00e9l|oll\u00e9h|lo|[2, 3, 4]|[1, 3]");
    expect("{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}", NULL,
           "TrueTrueTrueTrue");
    expect("{{ 1 if false else 2 }}{{ 'x' if true }}{{ none or 'd' }}{{ 0 and 1 }}", NULL, "2xd0");
    expect("{{ x is defined }}{{ y is not defined }}{{ none is none }}{{ 's' is string }}"
           "{{ {} is mapping }}{{ [] is iterable }}{{ 3 is odd }}{{ false is false }}",
           "{\"x\":1}", "TrueTrueTrueTrueTrueTrueTrueTrue");
    expect("{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'a,b,,c'.split(',') }}|"
           "{{ ' a  b '.split() }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}|"
           "{{ 'aXa'.replace('a', 'b') }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}", NULL,
           "a b|axx|['a', 'b', '', 'c']|['a', 'b']|TrueTrue|bXb|ABab");
    /* checked against Jinja2 3.1.6 under transformers' environment */
    expect("{{ '  x y  '.split(maxsplit=1) }}|{{ 'ab'.replace('', '-') }}|{{ 'aaa'.replace('a', 'b', 2) }}"
           "|{{ '\u2028x\u00a0'|trim }}|{{ 7.5 // 2 }} {{ 2 ** -1 }} {{ -7 % 3 }}", NULL,
           "['x', 'y  ']|-a-b-|bba|x|3.0 0.5 2");
    expect("{% for x in [1,2,3] %}{% if loop.first %}{% set y = 5 %}{% endif %}{{ y }},{% endfor %}",
           NULL, "5,,,");
    expect("{{ d.get('a') }}{{ d.get('z', 'none') }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
           "{\"d\":{\"a\":1,\"b\":2}}", "1nonea=1;b=2;");
    expect("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 2.5e-5 }} {{ 100.0 }}", NULL,
           "1.0 0.30000000000000004 1e+20 2.5e-05 100.0");
}

Test(jinja, filters)
{
    expect("{{ ' x '|trim }}|{{ [1,2]|length }}|{{ 'h\u00e9'|length }}|{{ 'ab'|upper }}|"
           "{{ ['a','b']|join(', ') }}|{{ 'aa'|replace('a','b') }}|{{ u|default('d') }}|"
           "{{ ''|default('d', true) }}|{{ 'ab'|list }}|{{ 1|string }}|{{ [3,4]|first }}{{ [3,4]|last }}",
           NULL, "x|2|2|AB|a, b|bb|d|d|['a', 'b']|1|34");
    expect("{{ m|selectattr('role', 'equalto', 'user')|map(attribute='c')|join }}|"
           "{{ m|rejectattr('role', 'eq', 'user')|list|length }}|{{ [0,1,2]|select|list }}",
           "{\"m\":[{\"role\":\"user\",\"c\":\"a\"},{\"role\":\"bot\",\"c\":\"b\"},"
           "{\"role\":\"user\",\"c\":\"c\"}]}", "ac|1|[1, 2]");
    expect("{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'a\"\u00fc\n'|tojson }}|{{ [] | tojson(indent=4) }}",
           "{\"d\":{\"b\":[1,2.5,null,true],\"a\":{}}}",
           "{\"b\": [1, 2.5, null, true], \"a\": {}}|{\n  \"b\": [\n    1,\n    2.5,\n    null,\n"
           "    true\n  ],\n  \"a\": {}\n}|\"a\\\"\u00fc\\n\"|[]");
    expect("{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", "{\"d\":{\"x\":1,\"y\":2}}", "x1y2");
}

Test(jinja, statements_and_whitespace)
{
    expect("{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}"
           "{{ loop.length }} {% endfor %}", "{\"xs\":[5,6]}", "01TrueFalse2 12FalseTrue2 ");
    expect("{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}"
           "{% for x in [] %}{% else %}E{% endfor %}", "{\"xs\":[1,2,3]}", "2232E");
    expect("{% set ns = namespace(n=0) %}{% for x in [1,2,3] %}{% set ns.n = ns.n + x %}"
           "{% set local = x %}{% endfor %}{{ ns.n }}{{ local is defined }}", NULL, "6False");
    expect("{% if a %}A{% elif b %}B{% else %}C{% endif %}", "{\"b\":1}", "B");
    expect("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}"
           "{% break %}{% endif %}{{ x }}{% endfor %}", NULL, "13");
    expect("{% macro greet(name, p='Hi') %}{{ p }} {{ name }}{% endmacro %}{{ greet('A') }}/"
           "{{ greet('B', p='Yo') }}", NULL, "Hi A/Yo B");
    expect("{% set s %}in{{ 1 }}{% endset %}[{{ s }}]", NULL, "[in1]");
    /* trim_blocks, lstrip_blocks and the - markers, as transformers configures Jinja */
    expect("a\n  {% if true %}\n  b\n  {% endif %}\nc", NULL, "a\n  b\nc");
    expect("a  {%- if true -%}  b  {%- endif %} c {{- 'd' -}} e", NULL, "ab cde");
    expect("x{# comment #}\ny {#- c -#} z", NULL, "xyz");
    expect("{{ strftime_now is defined }}{{ raise_exception is defined }}", NULL, "TrueTrue");
}

Test(jinja, errors_say_where_and_why)
{
    expect_error("ab\n{% if x %}", NULL, "template 2:");
    expect_error("ab\n{% if x %}", NULL, "endif");
    expect_error("{{ 1 + }}", NULL, "template 1:8: expected an expression");
    expect_error("{% for x %}{% endfor %}", NULL, "expected 'in'");
    expect_error("{{ 'abc }}", NULL, "not closed");
    expect_error("line\n  {% frobnicate %}", NULL, "template 2:6: unknown or misplaced tag");
    expect_error("{{ raise_exception('No system role, please') }}", NULL,
                 "the template raised an error: No system role, please");
    expect_error("\n\n   {{ x | frob }}", NULL, "template 3:");
    expect_error("{{ x | frob }}", NULL, "unknown filter 'frob'");
    expect_error("{{ x is frob }}", NULL, "unknown test 'frob'");
    expect_error("{{ x.y.z }}", "{}", "of an undefined value");
    expect_error("{{ 1 + 'a' }}", NULL, "cannot apply '+'");
    expect_error("{{ 9223372036854775807 + 1 }}", NULL, "integer overflow");
    expect_error("{{ 1 // 0 }}", NULL, "division");
    expect_error("{% set x.y = 1 %}", "{\"x\":{}}", "not a namespace");
    expect_error("{{ foo() }}", NULL, "'foo' is not a function");
    expect_error("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns }}", NULL, "cycle");
    expect_error("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}", NULL,
                 "cycle");
    expect_error("\xff", NULL, "invalid UTF-8");
    expect_error("{{ 1.5e300 * 1e10 }}", NULL, "infinity");
}

Test(jinja, limits_give_a_message)
{
    /* recursion */
    expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, "deep");
    /* nesting in the source */
    char deep[2048];
    size_t k = 0;
    k += (size_t)snprintf(deep, sizeof deep, "{{ ");
    for (int i = 0; i < 400; i++)
        deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 400; i++)
        deep[k++] = ')';
    snprintf(deep + k, sizeof deep - k, " }}");
    expect_error(deep, NULL, "nested more than");
    /* output size and iterations */
    expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 NULL, "loop iterations");
    expect_error("{{ 'x' * 100000000 }}", NULL, "exceed");
    expect_error("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}"
                 "{% set ns.s = ns.s ~ ns.s %}{% endfor %}", NULL, "exceed");
    expect_error("{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = [ns.l] %}"
                 "{% endfor %}", NULL, "nests more than");
    jinja_template *t = parse_ok("{% for i in range(10) %}abcdefghij{% endfor %}");
    jinja_limits lim = jinja_default_limits();
    lim.max_output = 50;
    char *text, err[256];
    size_t len;
    json_t *ctx = json_object();
    cr_expect_neq(jinja_render(t, ctx, &lim, &text, &len, err, sizeof err), 0);
    cr_expect(strstr(err, "exceed 50 bytes"), "%s", err);
    cr_expect_null(text);
    json_decref(ctx);
    jinja_free(t);
}

/* ---- the chat template selection over the interpreter ---------------------------- */

/* tokenizer_config.json's text for fixture model m: its template and tokens */
static char *config_text(const char *model, json_t **doc)
{
    char path[1024];
    size_t len;
    snprintf(path, sizeof path, "%s/%s/template.jinja", FIXTURES, model);
    char *src = slurp(path, &len);
    snprintf(path, sizeof path, "%s/%s/cases.json", FIXTURES, model);
    *doc = load(path);
    json_t *cfg = json_pack("{s:s}", "chat_template", src);
    const char *tok[] = {"bos_token", "eos_token"};
    for (int k = 0; k < 2; k++)
        if (json_is_string(json_object_get(*doc, tok[k])))
            json_object_set(cfg, tok[k], json_object_get(*doc, tok[k]));
    char *text = json_dumps(cfg, 0);
    json_decref(cfg);
    free(src);
    return text;
}

/* The C templates and the interpreter give the fixtures' bytes for the
 * conversations the C templates render (system/user/assistant, no tools). */
Test(jinja, hand_written_templates_equal_the_interpreter)
{
    static const struct {
        const char *model, *c_name;
    } both[] = {{"qwen2_5", "chatml"}, {"smollm2", "chatml"}, {"llama3_1", "llama3.1"},
                {"llama3_2", "llama3.1"}};
    int compared = 0;
    for (size_t m = 0; m < sizeof both / sizeof both[0]; m++) {
        json_t *doc;
        char *cfg = config_text(both[m].model, &doc), err[1024] = "";
        chat_template *c, *j;
        cr_assert_eq(chat_template_from_config_text("cfg", cfg, strlen(cfg), "auto", &c, err,
                                                    sizeof err), 0, "%s", err);
        cr_assert_eq(chat_template_from_config_text("cfg", cfg, strlen(cfg), "jinja", &j, err,
                                                    sizeof err), 0, "%s", err);
        cr_expect_str_eq(chat_template_name(c), both[m].c_name, "%s", both[m].model);
        cr_expect_str_eq(chat_template_name(j), "jinja");
        cr_expect_str_eq(chat_template_end_of_turn(c), chat_template_end_of_turn(j));
        cr_expect_eq(chat_template_renders_bos(c), chat_template_renders_bos(j), "%s",
                     both[m].model);
        if (strcmp(both[m].model, "llama3_2") == 0) {
            cr_assert_eq(chat_template_set_date(c, "26 Jul 2024", err, sizeof err), 0, "%s", err);
            cr_assert_eq(chat_template_set_date(j, "26 Jul 2024", err, sizeof err), 0, "%s", err);
        }
        size_t i;
        json_t *cs;
        json_array_foreach(json_object_get(doc, "cases"), i, cs) {
            json_t *msgs = json_object_get(cs, "messages");
            if (!json_is_null(json_object_get(cs, "tools")) || json_is_null(msgs))
                continue;
            size_t n = json_array_size(msgs);
            chat_message cm[16];
            cr_assert(n <= 16);
            for (size_t k = 0; k < n; k++)
                cm[k] = (chat_message){
                    json_string_value(json_object_get(json_array_get(msgs, k), "role")),
                    json_string_value(json_object_get(json_array_get(msgs, k), "content"))};
            int gen = json_is_true(json_object_get(cs, "add_generation_prompt"));
            char *a = NULL, *b = NULL;
            size_t an, bn;
            cr_assert_eq(chat_template_apply(c, cm, n, gen, &a, &an, err, sizeof err), 0, "%s", err);
            cr_assert_eq(chat_template_apply(j, cm, n, gen, &b, &bn, err, sizeof err), 0, "%s", err);
            const char *want = json_string_value(json_object_get(cs, "expected"));
            cr_expect_str_eq(a, want, "%s/%s (C)", both[m].model,
                             json_string_value(json_object_get(cs, "name")));
            cr_expect_str_eq(b, want, "%s/%s (jinja)", both[m].model,
                             json_string_value(json_object_get(cs, "name")));
            free(a);
            free(b);
            compared++;
        }
        chat_template_free(c);
        chat_template_free(j);
        free(cfg);
        json_decref(doc);
    }
    cr_expect_geq(compared, 20);
}

/* Every fixture case through chat_template_apply_json, tools and tool calls
 * included, with the template forced to "jinja". */
Test(jinja, apply_json_renders_tools_and_variables)
{
    for (size_t m = 0; m < NMODELS; m++) {
        json_t *doc;
        char *cfg = config_text(models[m], &doc), err[1024] = "";
        chat_template *t;
        cr_assert_eq(chat_template_from_config_text("cfg", cfg, strlen(cfg), "jinja", &t, err,
                                                    sizeof err), 0, "%s", err);
        size_t i;
        json_t *cs;
        json_array_foreach(json_object_get(doc, "cases"), i, cs) {
            char *msgs = json_dumps(json_object_get(cs, "messages"), 0);
            char *tools = json_dumps(json_object_get(cs, "tools"), JSON_ENCODE_ANY);
            char *vars = json_dumps(json_object_get(cs, "variables"), 0);
            int gen = json_is_true(json_object_get(cs, "add_generation_prompt"));
            char *text = NULL;
            size_t len;
            int rc = chat_template_apply_json(t, msgs, tools, vars, gen, &text, &len, err,
                                              sizeof err);
            const char *want = json_string_value(json_object_get(cs, "expected"));
            const char *name = json_string_value(json_object_get(cs, "name"));
            if (want) {
                cr_expect_eq(rc, 0, "%s/%s: %s", models[m], name, err);
                cr_expect(text && strcmp(text, want) == 0, "%s/%s", models[m], name);
            } else {
                cr_expect(rc == -1 && strstr(err, json_string_value(json_object_get(cs, "error"))),
                          "%s/%s: %s", models[m], name, err);
            }
            free(text);
            free(msgs);
            free(tools);
            free(vars);
        }
        chat_template_free(t);
        free(cfg);
        json_decref(doc);
    }
}

Test(jinja, c_templates_refuse_tools)
{
    chat_template *t;
    char err[512], *text;
    size_t len;
    cr_assert_eq(chat_template_from_dir(NULL, "chatml", &t, err, sizeof err), 0);
    cr_expect_eq(chat_template_apply_json(t, "[{\"role\":\"user\",\"content\":\"x\"}]", "[{}]",
                                          NULL, 1, &text, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "\"jinja\""), "%s", err);
    cr_expect_eq(chat_template_apply_json(t, "[{\"role\":\"user\",\"content\":\"x\","
                                             "\"tool_calls\":[]}]", NULL, NULL, 1, &text, &len,
                                          err, sizeof err), -1);
    cr_expect_eq(chat_template_apply_json(t, "[{\"role\":\"user\",\"content\":\"x\"}]", NULL,
                                          NULL, 1, &text, &len, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(text, "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
    free(text);
    cr_expect_eq(chat_template_apply_json(t, "{", NULL, NULL, 1, &text, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "not JSON"), "%s", err);
    chat_template_free(t);
}
