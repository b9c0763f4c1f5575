/* serve_job.h: one request on its way through `tern serve` (docs/serve.md).
 *
 * The HTTP thread that read the request makes the job and queues it; the
 * model thread (decode_queue.c) encodes its prompts, decodes it with the
 * other queued jobs in one batch, and writes its reply: the whole JSON body,
 * or, for a stream, server-sent events as tokens come. The two threads meet
 * only at the job's reply buffer, under its lock; everything else in a job
 * is the model thread's once queued. A job is freed by whichever of the two
 * lets go of it last (tern_serve_job_unref). */
#ifndef TERN_SERVE_JOB_H
#define TERN_SERVE_JOB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/tool_calls.h"
#include "serve/serve_request.h"

/* One choice: a sample of one prompt. */
typedef struct tern_serve_choice {
    uint32_t prompt;         /* the prompt it continues */
    int32_t *ids;            /* the sampled tokens so far, a final stop token included */
    float *logprobs;         /* under the distribution sampled from */
    size_t len, cap;
    /* with req.top_logprobs k: token i's alternatives at [i * k, i * k + k),
     * ids (-1 past what the model listed) and log-probs (tern/model.h,
     * on_top); n_top tokens have them */
    int32_t *top_ids;
    float *top_lps;
    size_t n_top;
    /* its text as decoded so far, token by token (a stream, or stop strings):
     * text_end[i] is text_len after token i */
    char *text;
    size_t text_len, text_cap;
    size_t *text_end;
    size_t prefix_off, read_off, prefix_text_len; /* the incremental decoder's window */
    size_t sent_tokens, sent_bytes;               /* what a stream has sent */
    int started;             /* a stream sent its first chunk (the role) */
    int stop_string;         /* 1: a stop string ended it; text is cut before it */
    uint32_t finish;         /* a tern_finish */
    /* after decoding: the answer, and the tool calls read from it */
    char *content;           /* NULL: no content (only calls) */
    tern_parsed_call *calls;
    size_t n_calls;
    int token_based;         /* 1: text is not used (decoded whole at the end) */
} tern_serve_choice;

typedef struct tern_serve_job {
    tern_serve_request req;
    char id[40];              /* "chatcmpl-..." or "cmpl-..." */
    long long created;        /* Unix seconds */
    const char *model_name;   /* the server's, outlives the job */
    /* a trajectory's endpoint (serve_session.h; outlives the job), NULL: none */
    struct tern_serve_session *session;
    uint32_t call;            /* with a session: its call number */
    /* the model thread's */
    int32_t **prompt_ids;     /* [n_prompts] */
    size_t *prompt_len;
    size_t n_prompts;
    size_t prompt_tokens, completion_tokens;
    tern_serve_choice *choices; /* [n_prompts * n], prompt-major */
    size_t n_choices;
    size_t stop_hold;         /* bytes a stream holds back: the longest stop string less 1 */
    char *opening;            /* a forced call's opening (chat_render.h), the prompt's last
                                 tokens and the answer's first text; NULL: none */
    struct tern_serve_job *next; /* in the queue */
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int done;                 /* the reply is whole */
    int cancelled;            /* the client went away: stop decoding it */
    int status;               /* HTTP status of the reply (a stream: 200 from its first byte) */
    char *out;                /* the reply's bytes: a body, or events */
    size_t out_len, out_cap, out_read;
} tern_serve_job;

/* A job for request *req (taken over: *req is left empty), with one
 * reference (the HTTP side's). NULL when out of memory (*req then freed). */
tern_serve_job *tern_serve_job_new(tern_serve_request *req, const char *model_name);
void tern_serve_job_ref(tern_serve_job *j);
/* Let go of j; the last one frees it. */
void tern_serve_job_unref(tern_serve_job *j);

/* Append reply bytes and wake the HTTP side; -1 when out of memory. Model thread. */
int tern_serve_job_write(tern_serve_job *j, const char *bytes, size_t n);
/* The reply is whole, with HTTP status `status`; body replaces what was
 * written when not NULL (taken over). Model thread. */
void tern_serve_job_finish(tern_serve_job *j, int status, char *body);
/* As finish, with OpenAI's error object for e. */
void tern_serve_job_fail(tern_serve_job *j, const tern_serve_error *e);
/* 1 when the client went away (the HTTP side set cancelled). */
int tern_serve_job_cancelled(tern_serve_job *j);

/* HTTP side: wait until the reply is whole (a plain reply). */
void tern_serve_job_wait(tern_serve_job *j);
/* HTTP side, a stream: wait until the reply is whole (an error before any
 * event: a plain reply) or its first event is written; 1 when streaming. */
int tern_serve_job_wait_start(tern_serve_job *j);
/* HTTP side, a stream: up to max bytes of what was written and not yet
 * read into buf, waiting for some; 0 at the end of a whole reply. */
size_t tern_serve_job_read(tern_serve_job *j, char *buf, size_t max);
/* HTTP side: the client went away. */
void tern_serve_job_cancel(tern_serve_job *j);

/* OpenAI's error body for e: {"error": {"message", "type", "param", "code"}}
 * (malloc'd, NULL when out of memory). */
char *tern_serve_error_body(const tern_serve_error *e);

#endif
