/* serve_session.h: one trajectory's own endpoint on the server a run's
 * workflow talks to (docs/agents.md, "Workflows").
 *
 * The workflow's program for a trajectory calls /s/KEY/v1/...; its requests
 * are sampled with the run's settings, whatever they ask (the trainer
 * scores the tokens at the run's temperature), and every call is recorded:
 * the exact ids the model continued, the ids it sampled and their
 * log-probs. A chat call whose messages are the previous call's, its answer
 * as the server gave it, and new user or tool turns continues the previous
 * call's ids: the template's tokens for the new turns are appended to them,
 * never the answer rendered again, so the trajectory is token-exact. A call
 * that says anything else (history rewritten, an answer edited) is rendered
 * whole; the recording says whether its prompt still extends the previous
 * call's ids.
 *
 * Threads: the owner fills the settings and opens the session before any
 * request can name it, and reads the calls after it closed it and the
 * server stopped; between, the model's thread is the only one that touches
 * it (begin, prompt, record), and close may come from any thread. */
#ifndef TERN_SERVE_SESSION_H
#define TERN_SERVE_SESSION_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "serve/serve_job.h"

/* One call, as the model decoded it. */
typedef struct tern_serve_call {
    int32_t *prompt;         /* the ids the model continued */
    size_t prompt_len;
    int32_t *ids;            /* the ids it sampled, a final stop token included */
    float *logprobs;         /* [len] under the distribution sampled from */
    size_t len;
    uint32_t finish;         /* a tern_finish */
    int extends;             /* 1: prompt begins with the previous call's prompt and ids */
    char *text;              /* the answer as the client got it (content, without calls) */
} tern_serve_call;

typedef struct tern_serve_session {
    /* the owner's, before it is served */
    float temperature, top_p; /* the run's sampling: 0 greedy; 1 no nucleus */
    int32_t top_k;
    uint32_t max_tokens;     /* a call's tokens at most (a request may ask fewer) */
    uint32_t max_calls;      /* calls at most; more are refused */
    uint64_t seed;           /* call k is seeded seed + k * a constant */
    /* under mu */
    pthread_mutex_t mu;
    int closed;              /* no more calls: its program ended */
    /* the model thread's */
    uint32_t started;        /* calls begun */
    tern_serve_call *calls;
    size_t n_calls, cap;
    json_t *last_messages;   /* the last chat call's messages, NULL: none */
    json_t *last_answer;     /* its answer: {"content": "...", "calls": [[name, arguments]]} */
    char *last_tools;        /* its tools (JSON text), NULL: none */
} tern_serve_session;

/* An empty session (settings to fill). */
void tern_serve_session_init(tern_serve_session *s);
/* No more calls: later requests are answered 410. Any thread. */
void tern_serve_session_close(tern_serve_session *s);
int tern_serve_session_closed(tern_serve_session *s);
/* Free what s holds (after the server stopped). */
void tern_serve_session_free(tern_serve_session *s);
void tern_serve_call_free(tern_serve_call *c);

/* Model thread: a request of s begins; it takes call number *k. -1 with e
 * (410 when closed, 429 past max_calls, 400 for n > 1 or several prompts:
 * a trajectory's call is one sample). */
int tern_serve_session_begin(tern_serve_session *s, const tern_serve_request *r, uint32_t *k,
                             tern_serve_error *e);

/* Model thread: chat request r's prompt ids when it continues s's last call
 * (see above): *ids, *n our own; 1 when it does, 0 when r must be rendered
 * whole (nothing allocated), -1 with e on a failure. eos ends a turn. */
int tern_serve_session_continue(tern_serve_session *s, const tern_model *m, int32_t eos,
                                const tern_serve_request *r, int32_t **ids, size_t *n,
                                tern_serve_error *e);

/* Model thread: record request r's decoded choice c of prompt[0..n) (not
 * once s is closed: its program never saw the answer). 0, or -1 when out of
 * memory. */
int tern_serve_session_record(tern_serve_session *s, const tern_serve_request *r,
                              const int32_t *prompt, size_t n, const tern_serve_choice *c);

#endif
