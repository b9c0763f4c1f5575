/* Chat templates (plugins/models/transformer/tokenizer/chat_template.c) against the
 * renderings of the real Hugging Face templates in
 * tests/fixtures/chat_templates/ (made by tests/ref/chat_templates/). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tokenizer/chat_template.h"

#define FIXTURES TERN_TEST_SOURCE_DIR "/tests/fixtures/chat_templates"

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert(j, "%s: %s (line %d)", path, je.text, je.line);
    return j;
}

/* Render a JSON list of {role, content}. Returns the malloc'd text. */
static char *render_json(const chat_template *t, json_t *msgs, int gen, size_t *len)
{
    size_t n = json_array_size(msgs);
    chat_message *m = calloc(n, sizeof *m);
    cr_assert(m);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(msgs, i);
        m[i].role = json_string_value(json_object_get(e, "role"));
        m[i].content = json_string_value(json_object_get(e, "content"));
    }
    char *text, err[512];
    int rc = chat_template_apply(t, m, n, gen, &text, len, err, sizeof err);
    free(m);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(strlen(text), *len);
    return text;
}

/* Every conversation renders as family `dir`'s expected.json says; returns
 * how many renderings were compared. */
static int check_renderings(const chat_template *t, const char *dir)
{
    char path[1024];
    json_t *convs = load(FIXTURES "/conversations.json");
    snprintf(path, sizeof path, "%s/%s/expected.json", FIXTURES, dir);
    json_t *exp = load(path);
    json_t *cases = json_object_get(exp, "cases");
    cr_assert_eq(json_object_size(cases), json_object_size(convs), "%s: cases", dir);
    int count = 0;
    const char *name;
    json_t *msgs;
    json_object_foreach(convs, name, msgs) {
        for (int gen = 0; gen <= 1; gen++) {
            json_t *want_j = json_object_get(json_object_get(cases, name),
                                             gen ? "generation_prompt" : "no_generation_prompt");
            cr_assert(json_is_string(want_j), "%s: no case %s", dir, name);
            const char *want = json_string_value(want_j);
            size_t want_len = json_string_length(want_j), len;
            char *got = render_json(t, msgs, gen, &len);
            size_t at = 0;
            while (at < len && at < want_len && got[at] == want[at])
                at++;
            cr_expect(len == want_len && at == len,
                      "%s (%s), conversation \"%s\", add_generation_prompt=%d: differs at byte "
                      "%zu\n--- got ---\n%s\n--- want ---\n%s",
                      dir, chat_template_name(t), name, gen, at, got, want);
            free(got);
            count++;
        }
    }
    json_decref(exp);
    json_decref(convs);
    return count;
}

static const char *str_or_null(json_t *j)
{
    return json_is_string(j) ? json_string_value(j) : NULL;
}

static void expect_same(const char *got, const char *want, const char *what, const char *dir)
{
    if (!want)
        cr_expect_null(got, "%s: %s is \"%s\", want none", dir, what, got);
    else
        cr_expect(got && strcmp(got, want) == 0, "%s: %s is \"%s\", want \"%s\"", dir, what,
                  got ? got : "(none)", want);
}

Test(chat_template, real_templates_render_exactly)
{
    DIR *d = opendir(FIXTURES);
    cr_assert(d, "cannot open %s", FIXTURES);
    int families = 0, renderings = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char dir[1024], path[1100];
        snprintf(dir, sizeof dir, "%s/%s", FIXTURES, e->d_name);
        snprintf(path, sizeof path, "%s/expected.json", dir);
        if (e->d_name[0] == '.' || access(path, R_OK) != 0)
            continue;
        json_t *exp = load(path);
        json_t *want = json_object_get(exp, "expect");
        chat_template *t;
        char err[1024];
        cr_assert_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), 0, "%s: %s",
                     e->d_name, err);
        /* auto-detection: family, default system prompt, stop text, BOS */
        expect_same(chat_template_name(t), str_or_null(json_object_get(want, "name")), "family",
                    e->d_name);
        expect_same(chat_template_default_system(t),
                    str_or_null(json_object_get(want, "default_system")), "default system prompt",
                    e->d_name);
        expect_same(chat_template_end_of_turn(t),
                    str_or_null(json_object_get(want, "end_of_turn")), "end of turn", e->d_name);
        cr_expect_eq(chat_template_renders_bos(t),
                     json_is_true(json_object_get(want, "renders_bos")), "%s: renders_bos",
                     e->d_name);
        const char *date = str_or_null(json_object_get(exp, "date"));
        if (date)
            cr_assert_eq(chat_template_set_date(t, date, err, sizeof err), 0, "%s", err);
        renderings += check_renderings(t, e->d_name);
        chat_template_free(t);
        json_decref(exp);
        families++;
    }
    closedir(d);
    cr_log_info("%d real templates, %d renderings compared", families, renderings);
    cr_assert_geq(families, 9, "expected the 9 fixture templates, found %d", families);
}

/* Templates the C code does not render exactly are interpreted (jinja/). */
Test(chat_template, unrecognised_real_templates_are_interpreted)
{
    static const char *const dirs[] = {"ollama-qwen1_5", "ollama-qwen3", "ollama-qwen2_5vl",
                                       "ollama-tinyllama", "ollama-stable-code"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char dir[1024], err[1024] = "";
        snprintf(dir, sizeof dir, "%s/refused/%s", FIXTURES, dirs[i]);
        chat_template *t = NULL;
        cr_assert_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), 0, "%s: %s",
                     dirs[i], err);
        cr_expect_str_eq(chat_template_name(t), "jinja", "%s", dirs[i]);
        chat_message m[] = {{"system", "Be brief."}, {"user", "Hi"}};
        char *text = NULL;
        size_t len;
        int rc = chat_template_apply(t, m, 2, 1, &text, &len, err, sizeof err);
        if (strcmp(dirs[i], "ollama-tinyllama") == 0) {
            /* its file has no eos_token, and '...' + eos_token fails in Jinja2 too */
            cr_expect(rc == -1 && strstr(err, "undefined"), "%s: %s", dirs[i], err);
        } else {
            cr_expect_eq(rc, 0, "%s: %s", dirs[i], err);
            cr_expect(text && strstr(text, "Hi") && strstr(text, "Be brief."), "%s: %s", dirs[i],
                      text ? text : "");
        }
        free(text);
        chat_template_free(t);
    }
}

/* The explicit names reproduce the real templates they stand for. */
Test(chat_template, explicit_names_match_real_templates)
{
    chat_template *t;
    char err[512];
    cr_assert_eq(chat_template_from_dir(NULL, "llama3.1", &t, err, sizeof err), 0, "%s", err);
    check_renderings(t, "ollama-llama3_1"); /* Llama 3.1: "26 Jul 2024" */
    cr_expect_str_eq(chat_template_bos(t), "<|begin_of_text|>");
    chat_template_free(t);

    cr_assert_eq(chat_template_from_dir(NULL, "llama3", &t, err, sizeof err), 0, "%s", err);
    check_renderings(t, "lenml-llama3_1"); /* Llama 3 with the generation-prompt fix */
    chat_template_free(t);

    cr_assert_eq(chat_template_from_dir(NULL, "chatml", &t, err, sizeof err), 0, "%s", err);
    cr_expect_null(chat_template_default_system(t));
    cr_expect_eq(chat_template_renders_bos(t), 0);
    cr_assert_eq(chat_template_set_default_system(t, "You are a helpful assistant.", err,
                                                  sizeof err),
                 0, "%s", err);
    check_renderings(t, "ollama-qwen2");
    cr_assert_eq(chat_template_set_default_system(
                     t, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", err,
                     sizeof err),
                 0, "%s", err);
    check_renderings(t, "lenml-qwen2_5");
    cr_assert_eq(chat_template_set_default_system(t, NULL, err, sizeof err), 0, "%s", err);
    cr_expect_null(chat_template_default_system(t));
    chat_template_free(t);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A fresh directory under the test work dir, optionally with a
 * tokenizer_config.json holding `config`. */
static const char *model_dir(const char *name, const char *config)
{
    static char dir[1024];
    char path[1100];
    snprintf(dir, sizeof dir, "%s/chat_%s_%d", TERN_TEST_WORK_DIR, name, (int)getpid());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    if (config)
        write_file(path, config);
    return dir;
}

static char *apply(const chat_template *t, const chat_message *m, size_t n, int gen)
{
    char *text, err[512];
    size_t len;
    cr_assert_eq(chat_template_apply(t, m, n, gen, &text, &len, err, sizeof err), 0, "%s", err);
    return text;
}

static void expect_template(const char *dir, const char *name, const char *want_name)
{
    chat_template *t = (chat_template *)1;
    char err[512];
    cr_assert_eq(chat_template_from_dir(dir, name, &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(chat_template_name(t), want_name);
    chat_template_free(t);
}

Test(chat_template, auto_without_a_template_is_none)
{
    expect_template(NULL, "auto", "none");
    expect_template(NULL, NULL, "none");
    expect_template(model_dir("nofile", NULL), "auto", "none");
    expect_template(model_dir("nokey", "{\"bos_token\": \"<s>\"}"), "auto", "none");
    expect_template(model_dir("null", "{\"chat_template\": null}"), "auto", "none");
    /* explicit names never read the directory */
    expect_template(model_dir("broken", "{oops"), "plain", "plain");
    static const char *const names[] = {"chatml", "llama3", "llama3.1", "plain", "none"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        expect_template(NULL, names[i], names[i]);
}

/* transformers' list form: the entry named "default". */
Test(chat_template, list_of_named_templates_takes_default)
{
    json_t *qwen2 = load(FIXTURES "/ollama-qwen2/tokenizer_config.json");
    json_t *cfg = json_pack("{s:[{s:s,s:s},{s:s,s:O}]}", "chat_template", "name", "tool_use",
                            "template", "{{ raise_exception('tools') }}", "name", "default",
                            "template", json_object_get(qwen2, "chat_template"));
    char *text = json_dumps(cfg, 0);
    const char *dir = model_dir("list", text);
    chat_template *t;
    char err[512];
    cr_assert_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(chat_template_name(t), "chatml");
    cr_expect_str_eq(chat_template_default_system(t), "You are a helpful assistant.");
    chat_template_free(t);
    free(text);
    json_decref(cfg);
    json_decref(qwen2);

    dir = model_dir("list_nodefault",
                    "{\"chat_template\": [{\"name\": \"rag\", \"template\": \"x\"}]}");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "tokenizer_config.json") && strstr(err, "\"default\""), "%s", err);
}

/* Spelling that does not change what a template renders does not matter. */
Test(chat_template, recognition_ignores_spelling)
{
    const char *cfg =
        "{\"chat_template\": \"{#- a comment -#}{%- for message in messages -%}"
        "{%- if loop.first and messages[0].role != \\\"system\\\" -%}"
        "{{- \\\"<|im_start|>system\\\\nBe \\\\\\\"kind\\\\\\\".<|im_end|>\\\\n\\\" -}}"
        "{%- endif -%}"
        "{{- \\\"<|im_start|>\\\" + message.role + \\\"\\\\n\\\" + message.content + "
        "\\\"<|im_end|>\\\" + \\\"\\\\n\\\" -}}{%- endfor -%}"
        "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\\\n' }}{% endif %}\"}";
    chat_template *t;
    char err[512];
    cr_assert_eq(chat_template_from_dir(model_dir("spelling", cfg), "auto", &t, err, sizeof err), 0,
                 "%s", err);
    cr_expect_str_eq(chat_template_name(t), "chatml");
    cr_expect_str_eq(chat_template_default_system(t), "Be \"kind\".");
    chat_template_free(t);
}

/* Whitespace between tags counts as it renders under transformers' Jinja
 * settings (trim_blocks, lstrip_blocks, `-` markers): a generation prompt
 * that would render extra blanks is not the ChatML one (and is interpreted). (Which of these
 * render the plain prompt was checked with @huggingface/jinja.) */
Test(chat_template, whitespace_between_tags_counts)
{
    static const char body[] =
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}";
    static const struct {
        const char *gen;
        int same; /* renders exactly the plain ChatML prompt */
    } cases[] = {
        {"{% if add_generation_prompt %}\n{{ '<|im_start|>assistant\\n' }}{% endif %}", 1},
        {"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}\n   {%- endif %}", 1},
        {"\n   {% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}", 1},
        {"{% if add_generation_prompt -%}\n   {{ '<|im_start|>assistant\\n' }}{% endif %}", 1},
        {"{% if add_generation_prompt %}\n  {{ '<|im_start|>assistant\\n' }}{% endif %}", 0},
        {"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}   {% endif %}", 0},
        {"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}\n   {% endif %}", 0},
        {"{% if add_generation_prompt %}   \n{{ '<|im_start|>assistant\\n' }}{% endif %}", 0},
        {"  {% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}\n{% endif %}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tmpl[1024], name[32], err[1024];
        snprintf(tmpl, sizeof tmpl, "%s%s", body, cases[i].gen);
        json_t *cfg = json_pack("{s:s}", "chat_template", tmpl);
        char *text = json_dumps(cfg, 0);
        snprintf(name, sizeof name, "ws%zu", i);
        chat_template *t;
        int rc = chat_template_from_dir(model_dir(name, text), "auto", &t, err, sizeof err);
        cr_expect_eq(rc, 0, "case %zu: %s", i, err);
        /* the others are interpreted as they are written */
        if (rc == 0)
            cr_expect_str_eq(chat_template_name(t), cases[i].same ? "chatml" : "jinja",
                             "case %zu", i);
        chat_template_free(t);
        free(text);
        json_decref(cfg);
    }
}

Test(chat_template, bad_config_names_the_file)
{
    char err[1024];
    chat_template *t;
    const char *dir = model_dir("malformed", "{\"chat_template\": \"{{ x }}\",");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect_null(t);
    cr_expect(strstr(err, dir) && strstr(err, "tokenizer_config.json") && strstr(err, "JSON"), "%s",
              err);

    dir = model_dir("notobject", "[1, 2]");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "tokenizer_config.json") && strstr(err, "object"), "%s", err);

    dir = model_dir("number", "{\"chat_template\": 42}");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "tokenizer_config.json") && strstr(err, "chat_template must be"), "%s",
              err);

    /* a template no C template renders is interpreted; one the interpreter
     * cannot parse is refused with where and why */
    dir = model_dir("unknown", "{\"chat_template\": \"{{ messages[0]['content'] }}\"}");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(chat_template_name(t), "jinja");
    chat_template_free(t);
    dir = model_dir("unparsable", "{\"chat_template\": \"{% for m in messages %}{{ m }\"}");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "tokenizer_config.json") && strstr(err, "template 1:") &&
                  strstr(err, "explicitly"),
              "%s", err);

    /* a ChatML template that writes bos_token needs to know it */
    dir = model_dir("nobos", "{\"chat_template\": \"{{ bos_token }}{% for message in messages %}"
                             "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                             "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
                             "{{ '<|im_start|>assistant\\n' }}{% endif %}\"}");
    cr_expect_eq(chat_template_from_dir(dir, "auto", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "tokenizer_config.json") && strstr(err, "no bos_token"), "%s", err);

    cr_expect_eq(chat_template_from_dir(NULL, "jinja", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "jinja") && strstr(err, "no model directory"), "%s", err);
    cr_expect_eq(chat_template_from_dir(NULL, "mustache", &t, err, sizeof err), -1);
    cr_expect(strstr(err, "\"mustache\"") &&
                  strstr(err, "auto, jinja, chatml, llama3, llama3.1, plain or none"),
              "%s", err);
}

Test(chat_template, plain_and_none)
{
    const chat_message sys_user[] = {{"system", "Solve it."}, {"user", "2+2?"}};
    const chat_message turns[] = {{"system", ""}, {"user", "a"}, {"assistant", "b"}, {"user", "c"}};
    chat_template *t;
    char err[512];
    cr_assert_eq(chat_template_from_dir(NULL, "plain", &t, err, sizeof err), 0, "%s", err);
    cr_expect_null(chat_template_end_of_turn(t));
    cr_expect_eq(chat_template_renders_bos(t), 0);
    char *s = apply(t, sys_user, 2, 1);
    cr_expect_str_eq(s, "Solve it.\n\n2+2?");
    free(s);
    s = apply(t, sys_user + 1, 1, 1);
    cr_expect_str_eq(s, "2+2?");
    free(s);
    s = apply(t, turns, 4, 0);
    cr_expect_str_eq(s, "a\n\nb\n\nc");
    free(s);
    chat_template_free(t);

    cr_assert_eq(chat_template_from_dir(NULL, "none", &t, err, sizeof err), 0, "%s", err);
    cr_expect_null(chat_template_end_of_turn(t));
    s = apply(t, turns, 4, 1);
    cr_expect_str_eq(s, "c");
    free(s);
    s = apply(t, turns, 3, 1);
    cr_expect_str_eq(s, "a");
    free(s);
    size_t len = 1;
    cr_expect_eq(chat_template_apply(t, turns, 1, 1, &s, &len, err, sizeof err), -1);
    cr_expect_null(s);
    cr_expect_eq(len, 0);
    cr_expect(strstr(err, "no user message"), "%s", err);
    chat_template_free(t);
}

Test(chat_template, bad_messages_are_refused)
{
    chat_template *t;
    char err[512], *s;
    size_t len;
    cr_assert_eq(chat_template_from_dir(NULL, "chatml", &t, err, sizeof err), 0, "%s", err);
    const chat_message tool[] = {{"user", "x"}, {"tool", "y"}};
    cr_expect_eq(chat_template_apply(t, tool, 2, 1, &s, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "message 1") && strstr(err, "\"tool\"") && strstr(err, "system, user"),
              "%s", err);
    const chat_message null_content[] = {{"user", NULL}};
    cr_expect_eq(chat_template_apply(t, null_content, 1, 1, &s, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "no content"), "%s", err);
    cr_expect_eq(chat_template_apply(t, tool, 0, 1, &s, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "no messages"), "%s", err);
    /* settings that belong to other templates */
    cr_expect_eq(chat_template_set_date(t, "26 Jul 2024", err, sizeof err), -1);
    cr_expect(strstr(err, "llama3.1"), "%s", err);
    chat_template_free(t);
    cr_assert_eq(chat_template_from_dir(NULL, "llama3", &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(chat_template_set_default_system(t, "x", err, sizeof err), -1);
    cr_expect(strstr(err, "chatml"), "%s", err);
    chat_template_free(t);
    cr_assert_eq(chat_template_from_dir(NULL, "llama3.1", &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(chat_template_set_date(t, "", err, sizeof err), -1);
    cr_expect_eq(chat_template_set_date(t, "1\n2", err, sizeof err), -1);
    chat_template_free(t);
}

/* Jinja's trim in transformers is Python's str.strip(): U+001C..U+001F and
 * U+0085 are whitespace, U+FEFF is not (JavaScript's trim, which rendered the
 * fixtures, disagrees on both, so the fixtures avoid them). Invalid UTF-8 is
 * kept. */
Test(chat_template, trim_is_python_strip)
{
    const chat_message m[] = {
        {"user", "\x1c\x1f\xc2\x85 \xe3\x80\x80hi\xef\xbb\xbf\t\xe2\x80\xa8"},
        {"assistant", "\xff ok \xc2"},
        {"user", " \xe2\x80\x8b "}, /* U+200B is not whitespace */
    };
    chat_template *t;
    char err[512];
    cr_assert_eq(chat_template_from_dir(NULL, "llama3", &t, err, sizeof err), 0, "%s", err);
    char *s = apply(t, m, 3, 0);
    cr_expect_str_eq(s, "<|begin_of_text|>"
                        "<|start_header_id|>user<|end_header_id|>\n\nhi\xef\xbb\xbf<|eot_id|>"
                        "<|start_header_id|>assistant<|end_header_id|>\n\n\xff ok \xc2<|eot_id|>"
                        "<|start_header_id|>user<|end_header_id|>\n\n\xe2\x80\x8b<|eot_id|>");
    free(s);
    chat_template_free(t);
}

/* "Today Date: <the local date>\n\n" in the C locale (English months). */
static void today_line(char *out, size_t n)
{
    char day[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(day, sizeof day, "%d %b %Y", &tm);
    snprintf(out, n, "Today Date: %s\n\n", day);
}

/* s has today's line as the clock read before or after it was made: a
 * render that straddles midnight has either date, never a wrong one. */
static void expect_today(const char *s, const char *before)
{
    char after[128];
    today_line(after, sizeof after);
    cr_expect(strstr(s, before) || strstr(s, after), "%s lacks %s (or %s)", s, before, after);
}

/* Llama 3.2's template dates the prompt with strftime_now: today, unless set. */
Test(chat_template, llama32_uses_todays_date)
{
    chat_template *t;
    char err[512], want[128];
    const chat_message m[] = {{"user", "hi"}};
    cr_assert_eq(chat_template_from_dir(FIXTURES "/lenml-llama3_2", "auto", &t, err, sizeof err), 0,
                 "%s", err);
    today_line(want, sizeof want);
    char *s = apply(t, m, 1, 1);
    expect_today(s, want);
    free(s);
    cr_assert_eq(chat_template_set_date(t, "01 Jan 2030", err, sizeof err), 0, "%s", err);
    s = apply(t, m, 1, 1);
    cr_expect(strstr(s, "Today Date: 01 Jan 2030\n\n"), "%s", s);
    free(s);
    cr_assert_eq(chat_template_set_date(t, NULL, err, sizeof err), 0, "%s", err);
    today_line(want, sizeof want);
    s = apply(t, m, 1, 1);
    expect_today(s, want);
    free(s);
    chat_template_free(t);

    /* Llama 3.1's fixed date comes back when unset */
    cr_assert_eq(chat_template_from_dir(FIXTURES "/ollama-llama3_1", "auto", &t, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(chat_template_set_date(t, "01 Jan 2030", err, sizeof err), 0, "%s", err);
    cr_assert_eq(chat_template_set_date(t, NULL, err, sizeof err), 0, "%s", err);
    s = apply(t, m, 1, 1);
    cr_expect(strstr(s, "Today Date: 26 Jul 2024\n\n"), "%s", s);
    free(s);
    chat_template_free(t);
}
