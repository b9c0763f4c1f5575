/* serve_job.c: one request on its way through `tern serve` (serve_job.h). */
#include "serve/serve_job.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tern/support/utf8.h"

tern_serve_job *tern_serve_job_new(tern_serve_request *req, const char *model_name)
{
    static atomic_uint_fast64_t counter;
    tern_serve_job *j = calloc(1, sizeof *j);
    if (!j) {
        tern_serve_request_free(req);
        return NULL;
    }
    j->req = *req;
    memset(req, 0, sizeof *req);
    j->model_name = model_name;
    j->created = (long long)time(NULL);
    j->refs = 1;
    j->status = 200;
    /* unique within the server's life, and across restarts by the time */
    unsigned long long k = (unsigned long long)atomic_fetch_add(&counter, 1);
    snprintf(j->id, sizeof j->id, "%s-%llx%06llx",
             j->req.kind == TERN_SERVE_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)j->created,
             k & 0xffffffULL);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    return j;
}

void tern_serve_job_ref(tern_serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
}

static void free_choice(tern_serve_choice *c)
{
    free(c->ids), free(c->logprobs), free(c->text), free(c->text_end), free(c->content);
    free(c->top_ids), free(c->top_lps);
    tern_tool_calls_free(c->calls, c->n_calls);
}

void tern_serve_job_unref(tern_serve_job *j)
{
    if (!j)
        return;
    pthread_mutex_lock(&j->mu);
    int last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last)
        return;
    free(j->opening);
    for (size_t i = 0; i < j->n_prompts; i++)
        free(j->prompt_ids[i]);
    free(j->prompt_ids), free(j->prompt_len);
    for (size_t i = 0; i < j->n_choices; i++)
        free_choice(&j->choices[i]);
    free(j->choices);
    free(j->out);
    tern_serve_request_free(&j->req);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* out += bytes, under mu */
static int append(tern_serve_job *j, const char *bytes, size_t n)
{
    if (j->out_len + n + 1 > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 4096;
        while (cap < j->out_len + n + 1)
            cap *= 2;
        char *p = realloc(j->out, cap);
        if (!p)
            return -1;
        j->out = p, j->out_cap = cap;
    }
    memcpy(j->out + j->out_len, bytes, n);
    j->out_len += n;
    j->out[j->out_len] = '\0';
    return 0;
}

int tern_serve_job_write(tern_serve_job *j, const char *bytes, size_t n)
{
    pthread_mutex_lock(&j->mu);
    int rc = append(j, bytes, n);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void tern_serve_job_finish(tern_serve_job *j, int status, char *body)
{
    pthread_mutex_lock(&j->mu);
    if (body) {
        free(j->out);
        j->out = body;
        j->out_len = strlen(body);
        j->out_cap = j->out_len + 1;
        j->out_read = 0;
    }
    j->status = status;
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

char *tern_serve_error_body(const tern_serve_error *e)
{
    /* a message quotes what the client sent (a URL, a field's name), and
     * the fixed-size fields may cut a character: JSON needs whole UTF-8 */
    char *message = tern_utf8_clean(e->message), *param = tern_utf8_clean(e->param);
    json_t *o = message && param
                    ? json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", message, "type",
                                e->type[0] ? e->type : "invalid_request_error", "param",
                                param[0] ? json_string(param) : json_null(), "code",
                                e->code[0] ? json_string(e->code) : json_null())
                    : NULL;
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    free(message), free(param);
    return s;
}

void tern_serve_job_fail(tern_serve_job *j, const tern_serve_error *e)
{
    char *body = tern_serve_error_body(e);
    pthread_mutex_lock(&j->mu);
    int streaming = j->out_len > 0; /* a stream already under way: the error is an event */
    pthread_mutex_unlock(&j->mu);
    if (streaming && body) {
        tern_serve_job_write(j, "data: ", 6);
        tern_serve_job_write(j, body, strlen(body));
        tern_serve_job_write(j, "\n\n", 2);
        free(body);
        tern_serve_job_finish(j, 200, NULL);
        return;
    }
    tern_serve_job_finish(j, body ? e->status : 500,
                          body ? body : strdup("{\"error\":{\"message\":\"out of memory\","
                                               "\"type\":\"server_error\",\"param\":null,"
                                               "\"code\":null}}"));
}

int tern_serve_job_cancelled(tern_serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    int c = j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return c;
}

void tern_serve_job_wait(tern_serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

int tern_serve_job_wait_start(tern_serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (!j->done && j->out_len == 0)
        pthread_cond_wait(&j->cv, &j->mu);
    int streaming = !(j->done && j->status != 200) && j->out_len > 0;
    pthread_mutex_unlock(&j->mu);
    return streaming;
}

size_t tern_serve_job_read(tern_serve_job *j, char *buf, size_t max)
{
    pthread_mutex_lock(&j->mu);
    while (j->out_read == j->out_len && !j->done)
        pthread_cond_wait(&j->cv, &j->mu);
    size_t n = j->out_len - j->out_read;
    if (n > max)
        n = max;
    memcpy(buf, j->out + j->out_read, n);
    j->out_read += n;
    pthread_mutex_unlock(&j->mu);
    return n;
}

void tern_serve_job_cancel(tern_serve_job *j)
{
    pthread_mutex_lock(&j->mu);
    j->cancelled = 1;
    pthread_mutex_unlock(&j->mu);
}
