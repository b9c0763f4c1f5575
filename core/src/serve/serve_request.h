/* serve_request.h: an OpenAI API request body, read and checked (docs/serve.md).
 *
 * `tern serve` takes /v1/chat/completions and /v1/completions bodies as
 * OpenAI documents them. This file turns one body (JSON, through jansson)
 * into a tern_serve_request, or into the error the client gets back: an
 * HTTP status and OpenAI's error object (message, type, param, code). It
 * needs no model: what depends on the model (the prompt's length, the chat
 * template) is checked when the request is encoded (decode_queue.c).
 *
 * Every field OpenAI defines is either honoured, or refused when it asks for
 * something tern does not do (a penalty, a logit bias, a response format),
 * so that no setting is silently ignored; a field OpenAI does not define is
 * refused as OpenAI refuses it ("Unrecognized request argument"). */
#ifndef TERN_SERVE_REQUEST_H
#define TERN_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/export.h"

/* Which endpoint a body is for. */
typedef enum tern_serve_kind {
    TERN_SERVE_CHAT = 1,      /* /v1/chat/completions */
    TERN_SERVE_COMPLETION = 2 /* /v1/completions */
} tern_serve_kind;

/* The defaults of tern_serve_limits. */
enum {
    TERN_SERVE_MAX_BODY_BYTES = 4 << 20, /* a request body */
    TERN_SERVE_MAX_MESSAGES = 512,       /* messages of one chat request */
    TERN_SERVE_MAX_N = 16,               /* choices of one request (n) */
    TERN_SERVE_MAX_TOKENS = 4096,        /* max_tokens; a request without it gets
                                            the context's room, at most this */
    TERN_SERVE_MAX_PROMPTS = 64,         /* prompts of one completions request */
    TERN_SERVE_MAX_TOOLS = 128,          /* functions of one chat request */
    TERN_SERVE_MAX_STOP = 4,             /* stop strings (OpenAI's limit) */
    TERN_SERVE_MAX_STOP_BYTES = 256      /* bytes of one stop string */
};

/* What one request may ask for; each is refused, naming it, above its limit. */
typedef struct tern_serve_limits {
    size_t body_bytes;
    uint32_t messages, n, max_tokens, prompts, tools;
} tern_serve_limits;

/* The limits above. */
TERN_INTERNAL tern_serve_limits tern_serve_default_limits(void);

/* What goes back to a client that asked for something wrong: an HTTP status
 * and OpenAI's error object. */
typedef struct tern_serve_error {
    int status;        /* 400, 401, 404, 405, 413, 500, 503 */
    char type[32];     /* "invalid_request_error", "authentication_error", "server_error" */
    char param[64];    /* the field at fault, "" when none */
    char code[48];     /* OpenAI's code ("context_length_exceeded", ...), "" when none */
    char message[512]; /* one line: what is wrong and how to mend it */
} tern_serve_error;

/* Fill e; returns -1, for `return tern_serve_fail(...)`. */
int tern_serve_fail(tern_serve_error *e, int status, const char *type, const char *param,
                    const char *code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* One prompt of a completions request: text, or token ids. */
typedef struct tern_serve_prompt {
    char *text;     /* NULL when ids */
    int32_t *ids;
    size_t n_ids;
} tern_serve_prompt;

/* A request as read. Strings and arrays are owned (tern_serve_request_free). */
typedef struct tern_serve_request {
    tern_serve_kind kind;
    char *model;             /* the model asked for (NULL: none named) */
    /* chat: the conversation as Hugging Face's templates take it (roles
     * system, user, assistant, tool; content text; an assistant's tool_calls
     * with arguments as objects; a tool message's name), compact JSON */
    char *messages;
    size_t n_messages;
    int plain_messages;      /* 1: every message a system, user or assistant text
                                (a model without a JSON template can render it) */
    char *tools;             /* the function schemas (JSON array), NULL: none or
                                tool_choice "none" */
    int call_required;       /* tool_choice "required" or a named function: the
                                turn starts with the template's call opening */
    char *call_name;         /* a named function (tool_choice {"type": "function",
                                "function": {"name": ...}}), one of tools; NULL: any */
    /* completions */
    tern_serve_prompt *prompts;
    size_t n_prompts;
    /* sampling */
    uint32_t n;              /* choices per prompt */
    uint32_t max_tokens;     /* 0: not given */
    float temperature;       /* [0, 2]; 0 greedy */
    float top_p;             /* (0, 1] */
    int32_t top_k;           /* 0: off (tern's own field, as vLLM's) */
    char *stop[TERN_SERVE_MAX_STOP];
    size_t n_stop;
    int has_seed;
    uint64_t seed;
    int logprobs;            /* 1: return each token's log-prob */
    uint32_t top_logprobs;   /* and its most likely alternatives, this many (chat's
                                top_logprobs, completions' logprobs N) */
    int stream;              /* 1: server-sent events */
    int include_usage;       /* stream_options.include_usage */
} tern_serve_request;

/* Read body[0..len) for endpoint `kind` into *out under `lim`. 0, or -1 with
 * *err filled (then *out holds nothing to free). */
int tern_serve_parse(tern_serve_kind kind, const char *body, size_t len,
                     const tern_serve_limits *lim, tern_serve_request *out, tern_serve_error *err);

void tern_serve_request_free(tern_serve_request *r);

#endif
