/* test_serve.c: `tern serve` over HTTP (docs/serve.md) with the small Qwen2
 * chat fixture (tests/fixtures/qwen2_chat: its chat template renders tools):
 * the endpoints' shapes, the same seed giving the same answer, a stream that
 * adds up to the plain reply, stop strings, tool calls read from what the
 * model wrote (the scripted_model test plugin writes a call), every error
 * with OpenAI's error object and status, the API key, many clients at once,
 * and a clean stop on SIGTERM. The real `openai` client runs against it in
 * test_serve_openai. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "http_client.h"

#define SRC TERN_TEST_SOURCE_DIR
#define FIXTURE SRC "/tests/fixtures/qwen2_chat"
#define CHAT "/v1/chat/completions"

static served server;

static void start(void)
{
    cr_assert_eq(serve_start(&server, NULL, FIXTURE " --threads 1 --seed 3"), 0,
                 "tern serve did not start; its log:\n%s", "");
}

static void stop(void)
{
    if (server.pid > 0)
        cr_expect_eq(serve_stop(&server), 143, "tern serve exits 128 + SIGTERM");
}

static json_t *post_json(const char *path, const char *body, int want_status)
{
    http_reply r;
    http_post(server.port, path, body, &r);
    cr_assert_eq(r.status, want_status, "%s %s: status %d, body %s", path, body, r.status,
                 r.body ? r.body : "(none)");
    json_error_t e;
    json_t *v = json_loads(r.body, 0, &e);
    cr_assert_not_null(v, "not JSON (%s): %s", e.text, r.body);
    http_reply_free(&r);
    return v;
}

static const char *content_of(json_t *reply, size_t k)
{
    return json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(reply, "choices"), k), "message"),
        "content"));
}

TestSuite(serve, .init = start, .fini = stop, .timeout = 240);

Test(serve, health_and_models)
{
    http_reply r;
    http_request(server.port, "GET", "/health", NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 200);
    cr_expect(strstr(r.body, "\"ok\""));
    http_reply_free(&r);
    http_request(server.port, "GET", "/v1/models", NULL, NULL, 0, &r);
    cr_assert_eq(r.status, 200);
    json_t *m = json_loads(r.body, 0, NULL);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(m, "data"),
                                                                      0), "id")), "qwen2_chat");
    json_decref(m);
    http_reply_free(&r);
    http_request(server.port, "GET", "/v1/models/qwen2_chat", NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 200);
    http_reply_free(&r);
    http_request(server.port, "GET", "/v1/models/gpt-4", NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 404);
    cr_expect(strstr(r.body, "model_not_found"), "%s", r.body);
    http_reply_free(&r);
}

Test(serve, chat_completion_shape_and_seed)
{
    const char *req = "{\"model\": \"qwen2_chat\", \"messages\": [{\"role\": \"system\", "
                      "\"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": "
                      "\"Hi\"}], \"max_tokens\": 12, \"seed\": 7, \"n\": 3, \"logprobs\": true}";
    json_t *a = post_json(CHAT, req, 200), *b = post_json(CHAT, req, 200);
    cr_expect_str_eq(json_string_value(json_object_get(a, "object")), "chat.completion");
    json_t *choices = json_object_get(a, "choices");
    cr_assert_eq(json_array_size(choices), 3);
    size_t tokens = 0;
    for (size_t k = 0; k < 3; k++) {
        json_t *c = json_array_get(choices, k);
        cr_expect_eq(json_integer_value(json_object_get(c, "index")), (json_int_t)k);
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(c, "message"), "role")),
                         "assistant");
        cr_expect_str_eq(content_of(a, k), content_of(b, k), "same seed, same answer");
        const char *fr = json_string_value(json_object_get(c, "finish_reason"));
        cr_expect(strcmp(fr, "length") == 0 || strcmp(fr, "stop") == 0, "%s", fr);
        json_t *lp = json_object_get(json_object_get(c, "logprobs"), "content");
        cr_expect_gt(json_array_size(lp), 0);
        json_t *t;
        size_t i;
        json_array_foreach(lp, i, t) {
            cr_expect_leq(json_real_value(json_object_get(t, "logprob")), 0.0);
            cr_expect(json_is_array(json_object_get(t, "bytes")));
        }
        /* the answer's tokens, and the end of turn when it stopped there */
        tokens += json_array_size(lp) + (strcmp(fr, "stop") == 0);
    }
    json_t *u = json_object_get(a, "usage");
    cr_expect_eq(json_integer_value(json_object_get(u, "completion_tokens")), (json_int_t)tokens);
    cr_expect_gt(json_integer_value(json_object_get(u, "prompt_tokens")), 5);
    cr_expect_eq(json_integer_value(json_object_get(u, "total_tokens")),
                 json_integer_value(json_object_get(u, "prompt_tokens")) + (json_int_t)tokens);
    json_decref(a), json_decref(b);
}

Test(serve, completions_of_text_and_token_ids)
{
    json_t *a = post_json("/v1/completions", "{\"prompt\": [\"Hello\", [9, 11]], "
                          "\"max_tokens\": 5, \"n\": 2, \"seed\": 1, \"logprobs\": 0}", 200);
    cr_expect_str_eq(json_string_value(json_object_get(a, "object")), "text_completion");
    json_t *choices = json_object_get(a, "choices");
    cr_assert_eq(json_array_size(choices), 4, "two prompts, two choices each");
    for (size_t k = 0; k < 4; k++) {
        json_t *c = json_array_get(choices, k);
        cr_expect(json_is_string(json_object_get(c, "text")));
        json_t *lp = json_object_get(c, "logprobs");
        cr_expect_eq(json_array_size(json_object_get(lp, "tokens")),
                     json_array_size(json_object_get(lp, "token_logprobs")));
    }
    json_decref(a);
}

/* The events of a stream: each "data:" line's JSON, [DONE] last. */
static json_t *events(const char *body)
{
    json_t *list = json_array();
    int done = 0;
    for (const char *p = strstr(body, "data: "); p; p = strstr(p + 1, "data: ")) {
        cr_expect(!done, "nothing after [DONE]");
        if (strncmp(p + 6, "[DONE]", 6) == 0) {
            done = 1;
            continue;
        }
        const char *end = strstr(p, "\n\n");
        cr_assert_not_null(end);
        json_t *v = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
        cr_assert_not_null(v, "event is not JSON: %.200s", p);
        json_array_append_new(list, v);
    }
    cr_expect(done, "the stream ends with data: [DONE]");
    return list;
}

Test(serve, stream_adds_up_to_the_plain_reply)
{
    const char *plain = "{\"messages\": [{\"role\": \"user\", \"content\": \"Count\"}], "
                        "\"max_tokens\": 16, \"seed\": 11, \"logprobs\": true}";
    const char *streamed = "{\"messages\": [{\"role\": \"user\", \"content\": \"Count\"}], "
                           "\"max_tokens\": 16, \"seed\": 11, \"logprobs\": true, \"stream\": "
                           "true, \"stream_options\": {\"include_usage\": true}}";
    json_t *a = post_json(CHAT, plain, 200);
    http_reply r;
    http_post(server.port, CHAT, streamed, &r);
    cr_assert_eq(r.status, 200);
    cr_expect(strstr(r.headers, "text/event-stream"), "%s", r.headers);
    json_t *ev = events(r.body);
    char text[8192] = "";
    size_t n_lp = 0, i, chunks = 0;
    const char *finish = NULL;
    json_t *e, *usage = NULL;
    json_array_foreach(ev, i, e) {
        cr_expect_str_eq(json_string_value(json_object_get(e, "object")), "chat.completion.chunk");
        json_t *c = json_array_get(json_object_get(e, "choices"), 0);
        if (!c) {
            usage = json_object_get(e, "usage");
            continue;
        }
        chunks++;
        const char *piece = json_string_value(json_object_get(json_object_get(c, "delta"),
                                                              "content"));
        if (piece)
            strncat(text, piece, sizeof text - strlen(text) - 1);
        n_lp += json_array_size(json_object_get(json_object_get(c, "logprobs"), "content"));
        if (json_is_string(json_object_get(c, "finish_reason")))
            finish = json_string_value(json_object_get(c, "finish_reason"));
    }
    cr_expect_str_eq(text, content_of(a, 0), "the stream's pieces make the plain answer");
    json_t *c0 = json_array_get(json_object_get(a, "choices"), 0);
    cr_expect_eq(n_lp, json_array_size(json_object_get(json_object_get(c0, "logprobs"),
                                                       "content")));
    cr_expect_str_eq(finish, json_string_value(json_object_get(c0, "finish_reason")));
    cr_expect_gt(chunks, 2, "tokens arrive as they are drawn, not all at the end");
    cr_assert_not_null(usage, "stream_options.include_usage: a usage event");
    cr_expect(json_equal(usage, json_object_get(a, "usage")));
    json_decref(ev), json_decref(a);
    http_reply_free(&r);
}

Test(serve, a_stop_string_ends_the_answer_before_it)
{
    json_t *a = post_json(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"Go\"}], "
                          "\"max_tokens\": 24, \"seed\": 5, \"temperature\": 0}", 200);
    const char *full = content_of(a, 0);
    size_t n = strlen(full);
    cr_assert_gt(n, 6, "a long enough answer to cut: %s", full);
    /* two bytes from the middle of the answer, as a JSON string */
    char stop[3] = {full[n / 2], full[n / 2 + 1], 0};
    json_t *s = json_string(stop);
    char *stop_json = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    if (!stop_json) {
        json_decref(a);
        cr_skip_test("the middle of the answer is not whole UTF-8");
    }
    char body[1024];
    snprintf(body, sizeof body, "{\"messages\": [{\"role\": \"user\", \"content\": \"Go\"}], "
             "\"max_tokens\": 24, \"seed\": 5, \"temperature\": 0, \"stop\": [%s]}", stop_json);
    json_t *b = post_json(CHAT, body, 200);
    const char *cut = content_of(b, 0);
    const char *first = strstr(full, stop);
    cr_expect_eq(strlen(cut), (size_t)(first - full), "cut at the first '%s': '%s' of '%s'",
                 stop, cut, full);
    cr_expect_eq(strncmp(cut, full, strlen(cut)), 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(b,
                                                                                    "choices"),
                                                                      0), "finish_reason")),
                     "stop");
    /* the same in a stream: no byte of the stop string is sent */
    snprintf(body, sizeof body, "{\"messages\": [{\"role\": \"user\", \"content\": \"Go\"}], "
             "\"max_tokens\": 24, \"seed\": 5, \"temperature\": 0, \"stream\": true, "
             "\"stop\": %s}", stop_json);
    http_reply r;
    http_post(server.port, CHAT, body, &r);
    json_t *ev = events(r.body);
    char text[4096] = "";
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *piece = json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(e, "choices"), 0), "delta"),
            "content"));
        if (piece)
            strncat(text, piece, sizeof text - strlen(text) - 1);
    }
    cr_expect_str_eq(text, cut);
    json_decref(ev), json_decref(a), json_decref(b), json_decref(s);
    free(stop_json);
    http_reply_free(&r);
}

/* The alternatives of one chat token entry: k of them, most likely first,
 * log-probs <= 0 with a total mass of at most 1. */
static void expect_alternatives(json_t *entry, size_t k)
{
    json_t *tops = json_object_get(entry, "top_logprobs");
    cr_assert_eq(json_array_size(tops), k, "%zu alternatives", json_array_size(tops));
    double mass = 0, last = 0;
    for (size_t i = 0; i < k; i++) {
        json_t *t = json_array_get(tops, i);
        double lp = json_real_value(json_object_get(t, "logprob"));
        cr_expect_leq(lp, 1e-6);
        if (i > 0)
            cr_expect_leq(lp, last + 1e-6, "most likely first");
        cr_expect(json_is_string(json_object_get(t, "token")));
        cr_expect(json_is_array(json_object_get(t, "bytes")));
        mass += exp(lp), last = lp;
    }
    cr_expect_leq(mass, 1.0 + 1e-4);
}

Test(serve, top_logprobs_list_the_models_most_likely_tokens)
{
    /* temperature 1, no truncation: the draw's distribution is the model's,
     * so a sampled token among the alternatives has its own log-prob there */
    json_t *a = post_json(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                          "\"max_tokens\": 10, \"seed\": 5, \"temperature\": 1, "
                          "\"logprobs\": true, \"top_logprobs\": 4}", 200);
    json_t *lp = json_object_get(json_object_get(json_array_get(json_object_get(a, "choices"), 0),
                                                 "logprobs"), "content");
    cr_assert_gt(json_array_size(lp), 0);
    size_t i, found = 0;
    json_t *t;
    json_array_foreach(lp, i, t) {
        expect_alternatives(t, 4);
        json_t *tops = json_object_get(t, "top_logprobs");
        double mine = json_real_value(json_object_get(t, "logprob"));
        cr_expect_leq(mine, json_real_value(json_object_get(json_array_get(tops, 0), "logprob")) +
                                1e-5, "no token is more likely than the first alternative");
        for (size_t k = 0; k < 4; k++) {
            json_t *alt = json_array_get(tops, k);
            if (json_equal(json_object_get(alt, "bytes"), json_object_get(t, "bytes"))) {
                cr_expect_float_eq(json_real_value(json_object_get(alt, "logprob")), mine, 1e-5);
                found++;
                break;
            }
        }
    }
    (void)found; /* the fixture is near uniform: a sampled token is rarely among 4 */
    /* the first token's alternatives: the same at temperature 1 and greedy
     * (the plain softmax), ranked the same and sharper at temperature 0.5 */
    json_t *first_t1 = json_incref(json_object_get(json_array_get(lp, 0), "top_logprobs"));
    json_decref(a);
    /* greedy: the token drawn is the first alternative, which has its real log-prob */
    a = post_json(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                  "\"max_tokens\": 6, \"temperature\": 0, \"logprobs\": true, "
                  "\"top_logprobs\": 4}", 200);
    lp = json_object_get(json_object_get(json_array_get(json_object_get(a, "choices"), 0),
                                         "logprobs"), "content");
    json_array_foreach(lp, i, t) {
        expect_alternatives(t, 4);
        json_t *first = json_array_get(json_object_get(t, "top_logprobs"), 0);
        cr_expect(json_equal(json_object_get(first, "bytes"), json_object_get(t, "bytes")),
                  "greedy takes the most likely token");
        cr_expect_lt(json_real_value(json_object_get(first, "logprob")), 0.0);
    }
    json_t *first_t0 = json_object_get(json_array_get(lp, 0), "top_logprobs");
    for (size_t k = 0; k < 4; k++) {
        json_t *x = json_array_get(first_t1, k), *y = json_array_get(first_t0, k);
        cr_expect(json_equal(json_object_get(x, "bytes"), json_object_get(y, "bytes")));
        cr_expect_float_eq(json_real_value(json_object_get(x, "logprob")),
                           json_real_value(json_object_get(y, "logprob")), 1e-5,
                           "alternative %zu: the same softmax", k);
    }
    json_decref(a);
    a = post_json(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                  "\"max_tokens\": 1, \"temperature\": 0.5, \"logprobs\": true, "
                  "\"top_logprobs\": 4}", 200);
    json_t *first_half = json_object_get(
        json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(a,
                       "choices"), 0), "logprobs"), "content"), 0), "top_logprobs");
    for (size_t k = 0; k < 4; k++)
        cr_expect(json_equal(json_object_get(json_array_get(first_t1, k), "bytes"),
                             json_object_get(json_array_get(first_half, k), "bytes")),
                  "a temperature keeps the ranking");
    /* log p_T(a) - log p_T(b) = (l_a - l_b) / T: twice the gap at T = 0.5 */
    double gap1 = json_real_value(json_object_get(json_array_get(first_t1, 0), "logprob")) -
                  json_real_value(json_object_get(json_array_get(first_t1, 3), "logprob"));
    double gap_half =
        json_real_value(json_object_get(json_array_get(first_half, 0), "logprob")) -
        json_real_value(json_object_get(json_array_get(first_half, 3), "logprob"));
    cr_expect_float_eq(gap_half, 2 * gap1, 1e-4, "gaps %g at T 0.5, %g at T 1", gap_half, gap1);
    json_decref(first_t1), json_decref(a);
    /* a stream carries the same alternatives as the plain reply */
    const char *plain = "{\"messages\": [{\"role\": \"user\", \"content\": \"Count\"}], "
                        "\"max_tokens\": 8, \"seed\": 2, \"logprobs\": true, \"top_logprobs\": 3";
    char body[512];
    snprintf(body, sizeof body, "%s}", plain);
    a = post_json(CHAT, body, 200);
    snprintf(body, sizeof body, "%s, \"stream\": true}", plain);
    http_reply r;
    http_post(server.port, CHAT, body, &r);
    cr_assert_eq(r.status, 200);
    json_t *ev = events(r.body), *e, *streamed = json_array();
    json_array_foreach(ev, i, e) {
        json_t *c = json_array_get(json_object_get(e, "choices"), 0);
        json_array_extend(streamed, json_object_get(json_object_get(c, "logprobs"), "content"));
    }
    lp = json_object_get(json_object_get(json_array_get(json_object_get(a, "choices"), 0),
                                         "logprobs"), "content");
    cr_expect(json_equal(streamed, lp), "the stream's entries are the plain reply's");
    json_decref(ev), json_decref(streamed), json_decref(a);
    http_reply_free(&r);
    /* completions: logprobs N is N alternatives per token, {token: logprob} */
    a = post_json("/v1/completions", "{\"prompt\": \"Hello\", \"max_tokens\": 5, "
                  "\"seed\": 3, \"logprobs\": 2}", 200);
    json_t *clp = json_object_get(json_array_get(json_object_get(a, "choices"), 0), "logprobs");
    json_t *tops = json_object_get(clp, "top_logprobs");
    cr_assert_eq(json_array_size(tops), json_array_size(json_object_get(clp, "tokens")));
    json_array_foreach(tops, i, t) {
        cr_expect(json_is_object(t));
        cr_expect(json_object_size(t) >= 1 && json_object_size(t) <= 2, "%zu",
                  json_object_size(t));
    }
    json_decref(a);
}

/* Each error: its status, OpenAI's error object, and the words that say what is wrong. */
static void expect_error(const char *path, const char *body, int status, const char *words)
{
    json_t *v = post_json(path, body, status);
    json_t *err = json_object_get(v, "error");
    cr_assert(json_is_object(err), "an error object: %s", body);
    const char *msg = json_string_value(json_object_get(err, "message"));
    cr_expect(msg && strstr(msg, words), "%s: '%s' does not say '%s'", body, msg, words);
    cr_expect(json_is_string(json_object_get(err, "type")));
    cr_expect(json_object_get(err, "param") && json_object_get(err, "code"));
    json_decref(v);
}

Test(serve, every_malformed_request_gets_a_clear_error)
{
    expect_error(CHAT, "{\"messages\": [", 400, "not valid JSON");
    expect_error(CHAT, "[1, 2]", 400, "JSON object");
    expect_error(CHAT, "{}", 400, "messages must be a non-empty array");
    expect_error(CHAT, "{\"messages\": []}", 400, "messages must be a non-empty array");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}", 400,
                 "roles are system");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}", 400,
                 "must be a string or an array of text parts");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
                 "\"image_url\"}]}]}", 400, "text parts only");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"temprature\": 1}", 400, "Unrecognized request argument supplied: temprature");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"temperature\": 3}", 400, "temperature must be in [0, 2]");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"top_p\": 0}", 400, "top_p must be in (0, 1]");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"n\": 99}",
                 400, "n must be from 1 to 16");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"max_tokens\": 100000}", 400, "max_tokens must be from 1 to 4096");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", 400, "at most 4");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"top_logprobs\": 3}", 400, "top_logprobs needs logprobs");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"logprobs\": true, \"top_logprobs\": 21}", 400,
                 "top_logprobs must be");
    expect_error("/v1/completions", "{\"prompt\": \"x\", \"logprobs\": 6}", 400,
                 "logprobs must be an integer from 0 to 5");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"frequency_penalty\": 0.5}", 400, "does not support frequency_penalty");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"tools\": [{\"type\": \"function\"}]}", 400, "tools[0] must be");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
                 "\"tool_choice\": \"always\"}", 400, "tool_choice must be");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\"}}], "
                 "\"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"g\"}}}",
                 400, "which tools does not hold");
    expect_error(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                 "\"stream_options\": {\"include_usage\": true}}", 400, "only allowed with stream");
    expect_error(CHAT, "{\"model\": \"gpt-4o\", \"messages\": [{\"role\": \"user\", "
                 "\"content\": \"x\"}]}", 404, "does not exist");
    expect_error("/v1/completions", "{\"prompt\": [[1, -2]]}", 400, "token ids must be");
    expect_error("/v1/completions", "{\"prompt\": [[99999999]]}", 400, "prompt 0");
    expect_error("/v1/completions", "{\"prompt\": \"x\", \"echo\": true}", 400,
                 "does not support echo");
    expect_error("/v1/completions", "{}", 400, "prompt is required");
    /* longer than the fixture's context (its config's max_position_embeddings) */
    size_t big = 4000;
    char *body = malloc(big + 64);
    int at = sprintf(body, "{\"prompt\": \"");
    for (size_t i = 0; i < big / 2; i++)
        body[at++] = 'a', body[at++] = ' ';
    sprintf(body + at, "\", \"max_tokens\": 1}");
    expect_error("/v1/completions", body, 400, "maximum context length");
    free(body);
    /* a body over the limit (4 MiB) */
    size_t huge = 5u << 20;
    body = malloc(huge + 1);
    memset(body, ' ', huge);
    body[huge] = 0;
    expect_error(CHAT, body, 413, "at most");
    free(body);
    /* a path that is not there, a method that is wrong */
    http_reply r;
    http_request(server.port, "GET", "/v1/embeddings", NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 404);
    cr_expect(strstr(r.body, "\"error\""), "%s", r.body);
    http_reply_free(&r);
    http_request(server.port, "GET", CHAT, NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 405);
    cr_expect(strstr(r.headers, "Allow: POST"), "%s", r.headers);
    http_reply_free(&r);
    /* and it still serves */
    json_decref(post_json(CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                          "\"max_tokens\": 2}", 200));
}

typedef struct client {
    int port, id, status;
    char content[32768];
} client;

static void *one_client(void *arg)
{
    client *c = arg;
    char body[512];
    snprintf(body, sizeof body, "{\"messages\": [{\"role\": \"user\", \"content\": \"client "
             "%d\"}], \"max_tokens\": %d, \"seed\": %d%s}", c->id, 4 + c->id % 5, c->id,
             c->id % 2 ? ", \"stream\": true" : "");
    http_reply r;
    http_post(c->port, CHAT, body, &r);
    c->status = r.status;
    snprintf(c->content, sizeof c->content, "%s", r.body ? r.body : "");
    http_reply_free(&r);
    return NULL;
}

Test(serve, many_clients_at_once)
{
    enum { N = 12 };
    client cs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        cs[i] = (client){.port = server.port, .id = i};
        pthread_create(&th[i], NULL, one_client, &cs[i]);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_expect_eq(cs[i].status, 200, "client %d: %s", i, cs[i].content);
        cr_expect(strstr(cs[i].content, i % 2 ? "[DONE]" : "\"chat.completion\""), "client %d: %s",
                  i, cs[i].content);
    }
}

/* A server of its own, for what needs other flags. */
Test(serve_alone, an_api_key_guards_the_model)
{
    served s;
    cr_assert_eq(serve_start(&s, "TERN_API_KEY=sesame-1234", FIXTURE " --threads 1"), 0);
    http_reply r;
    const char *body = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
                       "\"max_tokens\": 2}";
    http_request(s.port, "POST", CHAT, NULL, body, strlen(body), &r);
    cr_expect_eq(r.status, 401);
    cr_expect(strstr(r.body, "invalid_api_key"), "%s", r.body);
    http_reply_free(&r);
    http_request(s.port, "POST", CHAT, "Authorization: Bearer wrong-key\r\n", body, strlen(body),
                 &r);
    cr_expect_eq(r.status, 401);
    http_reply_free(&r);
    http_request(s.port, "POST", CHAT, "Authorization: Bearer sesame-1234\r\n", body,
                 strlen(body), &r);
    cr_expect_eq(r.status, 200, "%s", r.body);
    http_reply_free(&r);
    http_request(s.port, "GET", "/health", NULL, NULL, 0, &r);
    cr_expect_eq(r.status, 200, "health needs no key");
    http_reply_free(&r);
    cr_expect_eq(serve_stop(&s), 143);
}

Test(serve_alone, off_loopback_only_with_a_key)
{
    result r;
    run(&r, "%s serve %s --host 0.0.0.0", TERN_TEST_BIN, FIXTURE);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "not a loopback address") && strstr(r.err, "--listen"), "%s", r.err);
    run(&r, "env -u TERN_API_KEY %s serve %s --listen 0.0.0.0", TERN_TEST_BIN, FIXTURE);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "needs an API key"), "%s", r.err);
    run(&r, "%s serve %s/nowhere", TERN_TEST_BIN, FIXTURE);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no such file"), "%s", r.err);
    char path[1024];
    snprintf(path, sizeof path, "%s/init.cfg", test_work_dir());
    write_file(path, "model = { plugin = \"transformer\"; init = { preset = \"tiny\"; }; };\n");
    run(&r, "%s serve init.cfg", TERN_TEST_BIN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "has no path"), "%s", r.err);
}

Test(serve_alone, tool_calls_come_back_as_openai_writes_them)
{
    /* the fixture with room for the template's tool block: its byte-sized
     * vocabulary makes the block longer than the fixture's 256 positions */
    result sh;
    run(&sh, "rm -rf wide && cp -r %s wide && sed -i 's/\"max_position_embeddings\": 256/"
        "\"max_position_embeddings\": 2048/' wide/config.json && grep -q 2048 wide/config.json",
        FIXTURE);
    cr_assert_eq(sh.code, 0, "%s", sh.err);
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "plugin_path = [\"%s\"];\n"
             "model = { plugin = \"scripted_model\"; path = \"wide\"; threads = 1;\n"
             "  script = [\"Let me add. <tool_call>\\n{\\\"name\\\": \\\"add\\\", "
             "\\\"arguments\\\": {\\\"a\\\": 2, \\\"b\\\": 3}}\\n</tool_call>\"]; };\n",
             TERN_TEST_PLUGINS_DIR);
    char path[1024];
    snprintf(path, sizeof path, "%s/scripted.cfg", test_work_dir());
    write_file(path, cfg);
    served s;
    cr_assert_eq(serve_start(&s, NULL, "scripted.cfg"), 0);
    const char *body =
        "{\"messages\": [{\"role\": \"user\", \"content\": \"2+3?\"}], \"tools\": [{\"type\": "
        "\"function\", \"function\": {\"name\": \"add\", \"description\": \"Add\", "
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": "
        "\"number\"}, \"b\": {\"type\": \"number\"}}}}}], \"max_tokens\": 64}";
    http_reply r;
    http_post(s.port, CHAT, body, &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *v = json_loads(r.body, 0, NULL);
    json_t *c = json_array_get(json_object_get(v, "choices"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(c, "finish_reason")), "tool_calls");
    json_t *msg = json_object_get(c, "message");
    cr_expect_str_eq(json_string_value(json_object_get(msg, "content")), "Let me add.");
    json_t *call = json_array_get(json_object_get(msg, "tool_calls"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(call, "type")), "function");
    cr_expect(json_is_string(json_object_get(call, "id")));
    json_t *fn = json_object_get(call, "function");
    cr_expect_str_eq(json_string_value(json_object_get(fn, "name")), "add");
    json_t *args = json_loads(json_string_value(json_object_get(fn, "arguments")), 0, NULL);
    cr_expect_eq(json_integer_value(json_object_get(args, "a")), 2);
    cr_expect_eq(json_integer_value(json_object_get(args, "b")), 3);
    json_decref(args);
    /* the call and its result go back in, as an agent sends them */
    char next[4096];
    snprintf(next, sizeof next,
             "{\"messages\": [{\"role\": \"user\", \"content\": \"2+3?\"}, {\"role\": "
             "\"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"%s\", \"type\": "
             "\"function\", \"function\": {\"name\": \"add\", \"arguments\": "
             "\"{\\\"a\\\": 2, \\\"b\\\": 3}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": "
             "\"%s\", \"content\": \"5\"}], \"max_tokens\": 64}",
             json_string_value(json_object_get(call, "id")),
             json_string_value(json_object_get(call, "id")));
    json_decref(v);
    http_reply_free(&r);
    http_post(s.port, CHAT, next, &r);
    cr_expect_eq(r.status, 200, "%s", r.body);
    http_reply_free(&r);
    cr_expect_eq(serve_stop(&s), 143);
}

/* A scripted model whose lines continue a forced call: the first turn's
 * after a named function's opening (its arguments on), the second's after
 * "required"'s (the name on). */
Test(serve_alone, a_forced_call_starts_with_the_templates_opening)
{
    result sh;
    run(&sh, "rm -rf wide && cp -r %s wide && sed -i 's/\"max_position_embeddings\": 256/"
        "\"max_position_embeddings\": 2048/' wide/config.json && grep -q 2048 wide/config.json",
        FIXTURE);
    cr_assert_eq(sh.code, 0, "%s", sh.err);
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "plugin_path = [\"%s\"];\n"
             "model = { plugin = \"scripted_model\"; path = \"wide\"; threads = 1;\n"
             "  script = [\"{\\\"a\\\": 2, \\\"b\\\": 3}}\\n</tool_call>\",\n"
             "            \"add\\\", \\\"arguments\\\": {\\\"a\\\": 4, \\\"b\\\": 5}}\\n</tool_call>\"];"
             " };\n",
             TERN_TEST_PLUGINS_DIR);
    char path[1024];
    snprintf(path, sizeof path, "%s/forced.cfg", test_work_dir());
    write_file(path, cfg);
    served s;
    cr_assert_eq(serve_start(&s, NULL, "forced.cfg"), 0);
    const char *tools = "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"mul\", "
                        "\"parameters\": {\"type\": \"object\"}}}, {\"type\": \"function\", "
                        "\"function\": {\"name\": \"add\", \"parameters\": {\"type\": "
                        "\"object\"}}}]";
    const char *turns[2] = {
        "[{\"role\": \"user\", \"content\": \"2+3?\"}]",
        "[{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": "
        "\"hello\"}, {\"role\": \"user\", \"content\": \"4+5?\"}]"};
    const char *choice[2] = {"{\"type\": \"function\", \"function\": {\"name\": \"add\"}}",
                             "\"required\""};
    const int want_a[2] = {2, 4};
    for (int k = 0; k < 2; k++) {
        char body[2048];
        snprintf(body, sizeof body, "{\"messages\": %s, %s, \"tool_choice\": %s, "
                 "\"max_tokens\": 64}", turns[k], tools, choice[k]);
        http_reply r;
        http_post(s.port, CHAT, body, &r);
        cr_assert_eq(r.status, 200, "%s", r.body);
        json_t *v = json_loads(r.body, 0, NULL);
        json_t *c = json_array_get(json_object_get(v, "choices"), 0);
        cr_expect_str_eq(json_string_value(json_object_get(c, "finish_reason")), "tool_calls",
                         "%s", r.body);
        json_t *msg = json_object_get(c, "message");
        cr_expect(json_is_null(json_object_get(msg, "content")), "%s", r.body);
        json_t *fn = json_object_get(json_array_get(json_object_get(msg, "tool_calls"), 0),
                                     "function");
        cr_expect_str_eq(json_string_value(json_object_get(fn, "name")), "add", "%s", r.body);
        json_t *args = json_loads(json_string_value(json_object_get(fn, "arguments")), 0, NULL);
        cr_expect_eq(json_integer_value(json_object_get(args, "a")), want_a[k], "%s", r.body);
        /* the opening is the prompt's (the model wrote the rest): the same
         * conversation without a forced call has a shorter prompt */
        json_int_t forced = json_integer_value(json_object_get(json_object_get(v, "usage"),
                                                               "prompt_tokens"));
        json_decref(args), json_decref(v);
        http_reply_free(&r);
        snprintf(body, sizeof body, "{\"messages\": %s, %s, \"max_tokens\": 64}", turns[k],
                 tools);
        http_post(s.port, CHAT, body, &r);
        cr_assert_eq(r.status, 200, "%s", r.body);
        v = json_loads(r.body, 0, NULL);
        json_int_t free_choice = json_integer_value(json_object_get(json_object_get(v, "usage"),
                                                                    "prompt_tokens"));
        cr_expect_gt(forced, free_choice + 3, "the opening's tokens are the prompt's: %lld, %lld",
                     (long long)forced, (long long)free_choice);
        json_decref(v);
        http_reply_free(&r);
    }
    /* a model that lists no alternatives: the request alone is refused, and
     * the server answers the next */
    http_reply r;
    http_post(s.port, CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
              "\"logprobs\": true, \"top_logprobs\": 2, \"max_tokens\": 4}", &r);
    cr_expect_eq(r.status, 400, "%s", r.body);
    cr_expect(strstr(r.body, "does not list alternatives") && strstr(r.body, "scripted_model"),
              "%s", r.body);
    http_reply_free(&r);
    http_post(s.port, CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], "
              "\"logprobs\": true, \"max_tokens\": 4}", &r);
    cr_expect_eq(r.status, 200, "%s", r.body);
    http_reply_free(&r);
    cr_expect_eq(serve_stop(&s), 143);
}
