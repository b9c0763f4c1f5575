/* decode_queue.c: the requests of `tern serve`, decoded together on the
 * model's thread (decode_queue.h).
 *
 * Text as tokens come: a token's text is not its own decoding (a byte token
 * is part of a character; a SentencePiece word's space depends on what came
 * before), so each new token decodes a short window of the tokens before it,
 * and what that adds to the window's earlier text is the token's text, once
 * it ends with a whole character (the way vLLM and transformers' streamers
 * do it). */
#include "serve/decode_queue.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"
#include "serve/chat_render.h"
#include "serve/serve_reply.h"
#include "serve/serve_session.h"
#include "tern/support/utf8.h"

struct tern_serve_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tern_serve_job *head, *tail;
    int closed;
    int closing;           /* tern_serve_queue_close: run returns */
    tern_serve_limits lim;
    uint32_t max_samples;
    uint64_t seed, drawn;
    /* the model thread's */
    const tern_model *m;
    int32_t eos;
    int32_t context;
    volatile sig_atomic_t *stop;
    /* whether the model lists alternatives (top_logprobs): 0 not yet asked,
     * 1 it does, -1 it does not (why: its answer) */
    int alternatives;
    char no_alternatives[300];
};

tern_serve_queue *tern_serve_queue_new(const tern_serve_limits *lim, uint32_t max_samples,
                                       uint64_t seed)
{
    tern_serve_queue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->lim = *lim;
    q->max_samples = max_samples ? max_samples : 1;
    q->seed = seed;
    return q;
}

int tern_serve_queue_push(tern_serve_queue *q, tern_serve_job *j)
{
    pthread_mutex_lock(&q->mu);
    int closed = q->closed;
    if (!closed) {
        tern_serve_job_ref(j);
        j->next = NULL;
        if (q->tail)
            q->tail->next = j;
        else
            q->head = j;
        q->tail = j;
        pthread_cond_signal(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return closed ? -1 : 0;
}

static void fail_status(tern_serve_job *j, int status, const char *type, const char *code,
                        const char *message)
{
    tern_serve_error e;
    tern_serve_fail(&e, status, type, NULL, code, "%s", message);
    tern_serve_job_fail(j, &e);
}

static void shutting_down(tern_serve_job *j)
{
    fail_status(j, 503, "server_error", "server_shutting_down",
                "the server is shutting down: send the request again when it is back");
}

/* ---- encoding -------------------------------------------------------------- */

static void heard_top(void *user, uint32_t sample, const int32_t *ids, const float *logprobs,
                      uint32_t k)
{
    (void)sample, (void)ids, (void)logprobs;
    *(uint32_t *)user = k;
}

/* Whether the model lists alternatives: asked once, with one greedy token
 * after its end-of-turn token (any id it knows), the first time a request
 * wants them. A model built before ABI 1.16 cannot be asked; one that
 * refuses, or answers without listing, does not. A request that a model
 * cannot serve so is refused alone, before it joins a batch whose other
 * requests its failure would fail too. */
static int lists_alternatives(tern_serve_queue *q)
{
    if (q->alternatives != 0)
        return q->alternatives > 0;
    uint32_t heard = 0;
    const int32_t prompt[1] = {q->eos >= 0 ? q->eos : 0};
    tern_gen_request req = {.size = sizeof req, .prompt = prompt, .prompt_len = 1,
                            .n_samples = 1, .max_new_tokens = 1, .temperature = 0,
                            .top_p = 1, .seed = 1, .on_token_user = &heard,
                            .top_logprobs = 1, .on_top = heard_top};
    tern_gen_output out = {.size = sizeof out};
    q->alternatives = -1;
    if (q->m->abi_minor != 0 && q->m->abi_minor < 16) {
        snprintf(q->no_alternatives, sizeof q->no_alternatives,
                 "its plugin was built for ABI 1.%u, before alternatives (1.16)",
                 q->m->abi_minor);
    } else if (tern_model_generate(q->m, "listing alternatives", &req, 1, &out) != TERN_OK) {
        snprintf(q->no_alternatives, sizeof q->no_alternatives, "%s", tern_error_message());
    } else {
        tern_model_release_outputs(q->m, &out, 1);
        if (heard == 1)
            q->alternatives = 1;
        else
            snprintf(q->no_alternatives, sizeof q->no_alternatives,
                     "its plugin drew a token without listing them");
    }
    return q->alternatives > 0;
}

/* tool_choice "required" or a named function: the prompt *ids[0..*n) gets
 * the opening of the model's call format (chat_render.h), which the answer's
 * text then starts with. `appended`: the ids are a trajectory's, not the
 * messages' rendering, which the opening is found from. */
static int force_call(tern_serve_queue *q, tern_serve_job *j, int32_t **ids, size_t *n,
                      int appended, tern_serve_error *e)
{
    const tern_serve_request *r = &j->req;
    int32_t *fresh = NULL, *open = NULL;
    size_t nf = 0, no = 0;
    if (appended && tern_serve_render_chat(q->m, r->messages, r->plain_messages, r->tools, &fresh,
                                           &nf, e) != 0)
        return -1;
    int rc = tern_serve_call_opening(q->m, r->messages, r->tools, r->call_name,
                                     appended ? fresh : *ids, appended ? nf : *n, &j->opening,
                                     &open, &no, e);
    free(fresh);
    if (rc != 0)
        return -1;
    int32_t *grown = realloc(*ids, (*n + no + 1) * sizeof **ids);
    if (!grown) {
        free(open);
        return tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    memcpy(grown + *n, open, no * sizeof *open);
    *ids = grown;
    *n += no;
    free(open);
    return 0;
}

/* The prompts' ids, and the error a client gets when they cannot be made. */
static int encode(tern_serve_queue *q, tern_serve_job *j, tern_serve_error *e)
{
    const tern_serve_request *r = &j->req;
    size_t np = r->kind == TERN_SERVE_CHAT ? 1 : r->n_prompts;
    j->prompt_ids = calloc(np, sizeof *j->prompt_ids);
    j->prompt_len = calloc(np, sizeof *j->prompt_len);
    j->choices = calloc(np * r->n, sizeof *j->choices);
    if (!j->prompt_ids || !j->prompt_len || !j->choices)
        return tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    j->n_prompts = np;
    if (r->top_logprobs > 0 && !lists_alternatives(q))
        return tern_serve_fail(e, 400, "invalid_request_error",
                               r->kind == TERN_SERVE_CHAT ? "top_logprobs" : "logprobs",
                               "unsupported_parameter",
                               "this model does not list alternatives (%s): ask for the "
                               "sampled tokens' log-probs only (%s)", q->no_alternatives,
                               r->kind == TERN_SERVE_CHAT ? "top_logprobs 0" : "logprobs 0");
    if (j->session && tern_serve_session_begin(j->session, r, &j->call, e) != 0)
        return -1;
    for (size_t i = 0; i < np; i++) {
        int rc;
        int32_t **ids = &j->prompt_ids[i];
        size_t *n = &j->prompt_len[i];
        if (r->kind == TERN_SERVE_CHAT) {
            /* a trajectory's call that continues its last one: appended */
            int more = j->session ? tern_serve_session_continue(j->session, q->m, q->eos, r, ids,
                                                                n, e)
                                  : 0;
            if (more < 0 || (more == 0 && tern_serve_render_chat(q->m, r->messages,
                                                                 r->plain_messages, r->tools,
                                                                 ids, n, e) != 0))
                return -1;
            if (r->call_required && force_call(q, j, ids, n, more, e) != 0)
                return -1;
        } else if (r->prompts[i].text) {
            rc = tern_model_tokenize(q->m, "the model cannot tokenize the prompt",
                                     r->prompts[i].text, strlen(r->prompts[i].text), 1, ids, n);
            if (rc != TERN_OK)
                return tern_serve_fail(e, 400, "invalid_request_error", "prompt", NULL, "%s",
                                       tern_error_message());
        } else {
            /* ids the model does not know would fail the whole batch: its decoder says */
            char *text = NULL;
            rc = tern_model_text(q->m, "prompt", r->prompts[i].ids, r->prompts[i].n_ids, &text,
                                 NULL);
            free(text);
            if (rc != TERN_OK)
                return tern_serve_fail(e, 400, "invalid_request_error", "prompt", NULL,
                                       "prompt %zu: %s", i, tern_error_message());
            *ids = malloc(r->prompts[i].n_ids * sizeof **ids);
            if (!*ids)
                return tern_serve_fail(e, 500, "server_error", NULL, NULL, "out of memory");
            memcpy(*ids, r->prompts[i].ids, r->prompts[i].n_ids * sizeof **ids);
            *n = r->prompts[i].n_ids;
        }
        if (*n == 0)
            return tern_serve_fail(e, 400, "invalid_request_error", "prompt", NULL,
                                   "prompt %zu is empty", i);
        if (q->context > 0 && (*n >= (size_t)q->context ||
                               (r->max_tokens && *n + r->max_tokens > (size_t)q->context)))
            return tern_serve_fail(
                e, 400, "invalid_request_error", r->kind == TERN_SERVE_CHAT ? "messages" : "prompt",
                "context_length_exceeded",
                "This model's maximum context length is %d tokens. However, you requested %zu "
                "tokens (%zu in the %s, %u for the completion). Please reduce the length of the "
                "%s or completion.", q->context, *n + r->max_tokens, *n,
                r->kind == TERN_SERVE_CHAT ? "messages" : "prompt", r->max_tokens,
                r->kind == TERN_SERVE_CHAT ? "messages" : "prompt");
        j->prompt_tokens += *n * 1;
    }
    j->n_choices = np * r->n;
    for (size_t k = 0; k < j->n_choices; k++)
        j->choices[k].prompt = (uint32_t)(k / r->n);
    for (size_t s = 0; s < r->n_stop; s++)
        if (strlen(r->stop[s]) - 1 > j->stop_hold)
            j->stop_hold = strlen(r->stop[s]) - 1;
    return 0;
}

/* ---- tokens as they come ----------------------------------------------------- */

/* The request of one prompt of a job, for on_token. */
typedef struct prompt_ref {
    tern_serve_queue *q;
    tern_serve_job *j;
    uint32_t prompt;
} prompt_ref;

static int grow(void **p, size_t *cap, size_t need, size_t each)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *np = realloc(*p, c * each);
    if (!np)
        return -1;
    *p = np;
    *cap = c;
    return 0;
}

/* 1 when s[0..n) ends inside a character (a lead byte without all of its
 * continuation bytes): its token's text is not whole yet. */
static int cut_character(const char *s, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return want > back;
    }
    return 0;
}

/* Decode the choice's newest token into its text (see the file's comment). */
static int decode_newest(const tern_model *m, tern_serve_choice *c)
{
    char *win = NULL, *pre = NULL;
    size_t win_len = 0, pre_len = 0;
    if (tern_model_text(m, "tern serve: decode", c->ids + c->prefix_off, c->len - c->prefix_off,
                        &win, &win_len) != TERN_OK)
        return -1;
    if (win_len > c->prefix_text_len && !cut_character(win, win_len) &&
        !(win_len >= 3 && memcmp(win + win_len - 3, "\xef\xbf\xbd", 3) == 0)) {
        char *delta = tern_utf8_clean(win + c->prefix_text_len);
        size_t dn = delta ? strlen(delta) : 0;
        int ok = delta && grow((void **)&c->text, &c->text_cap, c->text_len + dn + 1, 1) == 0;
        if (ok) {
            memcpy(c->text + c->text_len, delta, dn);
            c->text_len += dn;
            c->text[c->text_len] = '\0';
            c->prefix_off = c->read_off;
            c->read_off = c->len;
            ok = tern_model_text(m, "tern serve: decode", c->ids + c->prefix_off,
                                 c->read_off - c->prefix_off, &pre, &pre_len) == TERN_OK;
            c->prefix_text_len = pre_len;
        }
        free(delta), free(pre);
        if (!ok) {
            free(win);
            return -1;
        }
    }
    free(win);
    return 0;
}

/* Where the first stop string starts in the choice's text, or -1. */
static long stop_at(const tern_serve_job *j, const tern_serve_choice *c, size_t from)
{
    long best = -1;
    for (size_t s = 0; s < j->req.n_stop; s++) {
        const char *hit = strstr(c->text + from, j->req.stop[s]);
        if (hit && (best < 0 || hit - c->text < best))
            best = hit - c->text;
    }
    return best;
}

/* A stream sends what can no longer turn into a stop string: whole tokens
 * whose text ends at least stop_hold bytes before the text's end. Tool calls
 * are only known once a turn is whole: a request with tools streams at its end. */
static int release(tern_serve_queue *q, tern_serve_job *j, size_t k)
{
    tern_serve_choice *c = &j->choices[k];
    if (j->req.tools)
        return 0;
    size_t safe = c->text_len > j->stop_hold ? c->text_len - j->stop_hold : 0, t = c->sent_tokens;
    while (t < c->len && c->text_end[t] <= safe)
        t++;
    if (t == c->sent_tokens && c->started)
        return 0;
    size_t upto = t > 0 ? c->text_end[t - 1] : 0;
    int rc = tern_serve_stream_chunk(j, q->m, k, c->text + c->sent_bytes, upto - c->sent_bytes,
                                     c->sent_tokens, t, 0, NULL);
    c->sent_tokens = t;
    return rc;
}

/* Room for n tokens in a choice's ids, log-probs, text ends and, with k > 0,
 * k alternatives each (one capacity for them all). 0, or -1 when out of
 * memory. */
static int choice_reserve(tern_serve_choice *c, size_t n, uint32_t k)
{
    size_t cap = c->cap;
    if (grow((void **)&c->ids, &cap, n, sizeof *c->ids) != 0)
        return -1;
    cap = c->cap;
    if (grow((void **)&c->logprobs, &cap, n, sizeof *c->logprobs) != 0)
        return -1;
    cap = c->cap;
    if (k > 0 && grow((void **)&c->top_ids, &cap, n, k * sizeof *c->top_ids) != 0)
        return -1;
    cap = c->cap;
    if (k > 0 && grow((void **)&c->top_lps, &cap, n, k * sizeof *c->top_lps) != 0)
        return -1;
    return grow((void **)&c->text_end, &c->cap, n, sizeof *c->text_end);
}

/* The alternatives of the choice's next token (tern/model.h, on_top): they
 * come just before the token itself. */
static void on_top(void *user, uint32_t sample, const int32_t *ids, const float *logprobs,
                   uint32_t k)
{
    prompt_ref *p = user;
    tern_serve_job *j = p->j;
    const uint32_t want = j->req.top_logprobs;
    tern_serve_choice *c = &j->choices[(size_t)p->prompt * j->req.n + sample];
    if (want == 0 || choice_reserve(c, c->len + 1, want) != 0)
        return; /* out of memory: n_top falls short, and the reply says so */
    for (uint32_t i = 0; i < want; i++) {
        c->top_ids[c->len * want + i] = i < k ? ids[i] : -1;
        c->top_lps[c->len * want + i] = i < k ? logprobs[i] : 0.0f;
    }
    c->n_top = c->len + 1;
}

static int on_token(void *user, uint32_t sample, int32_t token, float logprob)
{
    prompt_ref *p = user;
    tern_serve_job *j = p->j;
    tern_serve_queue *q = p->q;
    tern_serve_choice *c = &j->choices[(size_t)p->prompt * j->req.n + sample];
    if (*q->stop || tern_serve_job_cancelled(j))
        return TERN_GEN_STOP;
    if (choice_reserve(c, c->len + 1, j->req.top_logprobs) != 0)
        return TERN_GEN_STOP;
    c->ids[c->len] = token;
    c->logprobs[c->len] = logprob;
    c->len++;
    if (!j->req.stream && j->req.n_stop == 0) {
        c->text_end[c->len - 1] = 0;
        return TERN_GEN_CONTINUE; /* decoded whole at the end */
    }
    const size_t before = c->text_len;
    if (token != q->eos && decode_newest(q->m, c) != 0)
        return TERN_GEN_STOP;
    c->text_end[c->len - 1] = c->text_len;
    if (j->req.n_stop) {
        /* a stop string this token completed starts at most stop_hold bytes before it */
        long at = stop_at(j, c, before > j->stop_hold ? before - j->stop_hold : 0);
        if (at >= 0) {
            c->stop_string = 1;
            c->text_len = (size_t)at;
            c->text[at] = '\0';
            return TERN_GEN_STOP;
        }
    }
    if (j->req.stream && token != q->eos && release(q, j, (size_t)p->prompt * j->req.n + sample))
        return TERN_GEN_STOP;
    return TERN_GEN_CONTINUE;
}

/* ---- after decoding ---------------------------------------------------------- */

/* The text outside the calls' <tool_call> spans, trimmed; NULL when none. */
static char *outside_calls(const char *text)
{
    size_t n = strlen(text), o = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (const char *s = text; *s;) {
        const char *open = strstr(s, "<tool_call>");
        size_t keep = open ? (size_t)(open - s) : strlen(s);
        memcpy(out + o, s, keep);
        o += keep;
        if (!open)
            break;
        const char *close = strstr(open, "</tool_call>");
        s = close ? close + strlen("</tool_call>") : open + strlen(open);
    }
    out[o] = '\0';
    size_t a = 0;
    while (out[a] == ' ' || out[a] == '\n' || out[a] == '\t' || out[a] == '\r')
        a++;
    while (o > a && (out[o - 1] == ' ' || out[o - 1] == '\n' || out[o - 1] == '\t' ||
                     out[o - 1] == '\r'))
        o--;
    if (o == a || strstr(text, "<tool_call>") == NULL) {
        free(out); /* nothing outside, or a Llama 3.1 call: the whole turn */
        return NULL;
    }
    memmove(out, out + a, o - a);
    out[o - a] = '\0';
    return out;
}

/* A choice's answer from the model's output o. */
static int settle(tern_serve_queue *q, tern_serve_job *j, tern_serve_choice *c,
                  const tern_gen_output *o)
{
    /* the outputs are the decoder's word; the callback saw the same tokens */
    if (choice_reserve(c, o->len + 1, j->req.top_logprobs) != 0)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    if (j->req.top_logprobs > 0 && c->n_top < o->len)
        return tern_errorf(TERN_ERR, "the model listed the alternatives of %zu of its %zu "
                           "tokens (top_logprobs): a bug in its plugin, or out of memory",
                           c->n_top, o->len);
    memcpy(c->ids, o->tokens, o->len * sizeof *c->ids);
    memcpy(c->logprobs, o->logprobs, o->len * sizeof *c->logprobs);
    c->len = o->len;
    c->finish = o->finish;
    j->completion_tokens += o->len;
    char *text = NULL;
    if (c->stop_string) {
        text = strdup(c->text ? c->text : "");
    } else {
        size_t n = c->finish == TERN_FINISH_STOP && c->len ? c->len - 1 : c->len;
        char *raw = NULL;
        int rc = tern_model_text(q->m, "tern serve: the answer's text", c->ids, n, &raw, NULL);
        if (rc != TERN_OK)
            return rc;
        text = tern_utf8_clean(raw);
        free(raw);
    }
    if (text && j->opening) { /* a forced call: its opening, then what the model wrote */
        char *whole = malloc(strlen(j->opening) + strlen(text) + 1);
        if (whole)
            strcat(strcpy(whole, j->opening), text);
        free(text);
        text = whole;
    }
    if (!text)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    if (j->req.tools) {
        int rc = tern_tool_calls_parse(text, &c->calls, &c->n_calls);
        if (rc != TERN_OK) {
            free(text);
            return rc;
        }
        size_t valid = 0;
        for (size_t i = 0; i < c->n_calls; i++)
            valid += c->calls[i].error == NULL;
        if (valid > 0) {
            c->content = outside_calls(text);
            free(text);
            return TERN_OK;
        }
    }
    c->content = text;
    return TERN_OK;
}

/* The end of a stream: each choice's rest, its calls and finish_reason. */
static int end_stream(tern_serve_queue *q, tern_serve_job *j)
{
    for (size_t k = 0; k < j->n_choices; k++) {
        tern_serve_choice *c = &j->choices[k];
        const char *content = c->content ? c->content : "";
        size_t n = strlen(content);
        size_t from = c->sent_bytes <= n && c->text && memcmp(content, c->text, c->sent_bytes) == 0
                          ? c->sent_bytes : n; /* what was sent is the answer's start */
        if (!c->text && c->sent_bytes == 0)
            from = 0;
        size_t answer = c->finish == TERN_FINISH_STOP && c->len ? c->len - 1 : c->len;
        if (tern_serve_stream_chunk(j, q->m, k, content + from, n - from,
                                    c->sent_tokens < answer ? c->sent_tokens : answer, answer, 1,
                                    tern_serve_finish_reason(c)) != 0)
            return -1;
    }
    return tern_serve_stream_end(j);
}

/* Decode jobs[0..n) in one generate() call and answer each. */
static void decode_batch(tern_serve_queue *q, tern_serve_job **jobs, size_t n)
{
    size_t nreq = 0;
    for (size_t i = 0; i < n; i++)
        nreq += jobs[i]->n_prompts;
    tern_gen_request *req = calloc(nreq ? nreq : 1, sizeof *req);
    prompt_ref *refs = calloc(nreq ? nreq : 1, sizeof *refs);
    size_t nout = 0;
    for (size_t i = 0; i < n; i++)
        nout += jobs[i]->n_choices;
    tern_gen_output *outs = calloc(nout ? nout : 1, sizeof *outs);
    const int32_t stop_ids[1] = {q->eos};
    int rc = req && refs && outs ? TERN_OK : tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0, r = 0; rc == TERN_OK && i < n; i++) {
        tern_serve_job *j = jobs[i];
        for (size_t p = 0; p < j->n_prompts; p++, r++) {
            uint32_t room = q->context > 0 ? (uint32_t)(q->context - (int32_t)j->prompt_len[p])
                                           : q->lim.max_tokens;
            uint32_t max_new = j->req.max_tokens ? j->req.max_tokens
                               : room < q->lim.max_tokens ? room : q->lim.max_tokens;
            uint64_t seed = j->req.has_seed ? j->req.seed + 0x9e3779b97f4a7c15ull * p
                                            : q->seed ^ (0xbf58476d1ce4e5b9ull * ++q->drawn);
            float temperature = j->req.temperature, top_p = j->req.top_p;
            int32_t top_k = j->req.top_k;
            const tern_serve_session *s = j->session;
            if (s) { /* a trajectory's call: the run's sampling, its own seed */
                temperature = s->temperature, top_p = s->top_p, top_k = s->top_k;
                if (max_new > s->max_tokens)
                    max_new = s->max_tokens;
                if (max_new > room)
                    max_new = room;
                seed = s->seed + 0x9e3779b97f4a7c15ull * j->call;
            }
            refs[r] = (prompt_ref){.q = q, .j = j, .prompt = (uint32_t)p};
            req[r] = (tern_gen_request){.size = sizeof req[r],
                                        .prompt = j->prompt_ids[p],
                                        .prompt_len = j->prompt_len[p],
                                        .n_samples = j->req.n,
                                        .max_new_tokens = max_new,
                                        .temperature = temperature,
                                        .top_k = top_k,
                                        .top_p = top_p,
                                        .stop = q->eos >= 0 ? stop_ids : NULL,
                                        .n_stop = q->eos >= 0 ? 1 : 0,
                                        .seed = seed,
                                        .on_token = on_token,
                                        .on_token_user = &refs[r],
                                        .top_logprobs = j->req.top_logprobs,
                                        .on_top = j->req.top_logprobs ? on_top : NULL};
        }
    }
    for (size_t k = 0; k < nout && outs; k++)
        outs[k].size = sizeof outs[k];
    if (rc == TERN_OK)
        rc = tern_model_generate(q->m, "tern serve: generate", req, nreq, outs);
    char message[400];
    snprintf(message, sizeof message, "the model failed: %s", tern_error_message());
    for (size_t i = 0, o = 0; i < n; i++) {
        tern_serve_job *j = jobs[i];
        int ok = rc == TERN_OK;
        for (size_t k = 0; ok && k < j->n_choices; k++)
            ok = settle(q, j, &j->choices[k], &outs[o + k]) == TERN_OK;
        if (!ok && rc == TERN_OK)
            snprintf(message, sizeof message, "the model failed: %s", tern_error_message());
        if (ok && j->session &&
            tern_serve_session_record(j->session, &j->req, j->prompt_ids[0], j->prompt_len[0],
                                      &j->choices[0]) != 0) {
            ok = 0;
            snprintf(message, sizeof message, "out of memory recording the call");
        }
        o += j->n_choices;
        if (*q->stop && !tern_serve_job_cancelled(j)) {
            shutting_down(j);
        } else if (!ok) {
            fail_status(j, 500, "server_error", NULL, message);
        } else if (j->req.stream) {
            if (end_stream(q, j) != 0)
                fail_status(j, 500, "server_error", NULL, "out of memory");
            else
                tern_serve_job_finish(j, 200, NULL);
        } else {
            char *body = tern_serve_reply_body(j, q->m);
            if (body)
                tern_serve_job_finish(j, 200, body);
            else
                fail_status(j, 500, "server_error", NULL, "the reply could not be written");
        }
    }
    if (rc == TERN_OK)
        tern_model_release_outputs(q->m, outs, nout);
    free(req), free(refs), free(outs);
}

/* Take queued jobs up to max_samples choices (at least one job); NULL-ended. */
static size_t take(tern_serve_queue *q, tern_serve_job ***jobs, size_t *cap)
{
    size_t n = 0, samples = 0;
    pthread_mutex_lock(&q->mu);
    while (q->head) {
        tern_serve_job *j = q->head;
        size_t s = (size_t)j->req.n * (j->req.kind == TERN_SERVE_CHAT ? 1 : j->req.n_prompts);
        if (n > 0 && samples + s > q->max_samples)
            break;
        if (grow((void **)jobs, cap, n + 1, sizeof **jobs) != 0)
            break;
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        (*jobs)[n++] = j;
        samples += s;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

int tern_serve_queue_open(tern_serve_queue *q, const tern_model *m)
{
    q->m = m;
    tern_special_tokens sp = {.size = sizeof sp};
    int rc = tern_model_special(m, "tern serve: the model's special tokens", &sp);
    if (rc != TERN_OK && rc != TERN_EUNSUPPORTED)
        return rc;
    q->eos = sp.eos;
    q->context = rc == TERN_OK && TERN_HAS(&sp, context_len) ? sp.context_len : 0;
    return TERN_OK;
}

int32_t tern_serve_queue_context(const tern_serve_queue *q)
{
    return q->context;
}

int tern_serve_queue_run(tern_serve_queue *q, volatile sig_atomic_t *stop)
{
    q->stop = stop;
    tern_serve_job **jobs = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        int closing = q->closing;
        pthread_mutex_unlock(&q->mu);
        if (*stop || closing)
            break;
        pthread_mutex_lock(&q->mu);
        if (!q->head && !*stop && !q->closing) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100 * 1000 * 1000; /* to see *stop soon */
            if (until.tv_nsec >= 1000000000L)
                until.tv_sec++, until.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&q->cv, &q->mu, &until);
        }
        pthread_mutex_unlock(&q->mu);
        size_t n = take(q, &jobs, &cap), ready = 0;
        for (size_t i = 0; i < n; i++) {
            tern_serve_error e;
            if (tern_serve_job_cancelled(jobs[i])) {
                tern_serve_job_finish(jobs[i], 499, NULL);
                tern_serve_job_unref(jobs[i]);
            } else if (encode(q, jobs[i], &e) != 0) {
                tern_serve_job_fail(jobs[i], &e);
                tern_serve_job_unref(jobs[i]);
            } else {
                jobs[ready++] = jobs[i];
            }
        }
        if (ready > 0)
            decode_batch(q, jobs, ready);
        for (size_t i = 0; i < ready; i++)
            tern_serve_job_unref(jobs[i]);
    }
    free(jobs);
    tern_serve_queue_drain(q);
    return TERN_OK;
}

void tern_serve_queue_drain(tern_serve_queue *q)
{
    /* what is still queued will not be decoded: its clients hear so now */
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    tern_serve_job *j = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (j) {
        tern_serve_job *next = j->next;
        shutting_down(j);
        tern_serve_job_unref(j);
        j = next;
    }
}

void tern_serve_queue_close(tern_serve_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void tern_serve_queue_free(tern_serve_queue *q)
{
    if (!q)
        return;
    tern_serve_job *j = q->head;
    while (j) {
        tern_serve_job *next = j->next;
        shutting_down(j);
        tern_serve_job_unref(j);
        j = next;
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}
