/* serve.h: `tern serve`, a model behind OpenAI's HTTP API (docs/serve.md).
 *
 * An HTTP server (GNU libmicrohttpd, one thread per connection) takes
 * /v1/chat/completions, /v1/completions, /v1/models and /health; the
 * calling thread, which owns the model, decodes the requests in batches
 * (decode_queue.h). Loopback only unless an API key guards it. */
#ifndef TERN_SERVE_SERVE_H
#define TERN_SERVE_SERVE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "base/export.h"
#include "model/model.h"
#include "serve/serve_request.h"

/* The defaults of tern_serve_options. */
enum {
    TERN_SERVE_PORT = 8000,
    TERN_SERVE_MAX_CONNECTIONS = 256, /* clients connected at once (a thread each) */
    TERN_SERVE_BATCH_SAMPLES = 64,    /* choices decoded in one generate() call */
    TERN_SERVE_IDLE_SECONDS = 300     /* a connection that sends nothing this long is closed */
};

typedef struct tern_serve_options {
    size_t size;                 /* sizeof(tern_serve_options) */
    const char *address;         /* numeric IPv4 or IPv6, or "localhost" */
    uint16_t port;               /* 0: any free port (the log line names it) */
    const char *api_key;         /* NULL: none; required off loopback */
    const char *model_name;      /* the id /v1/models lists and requests name */
    uint32_t max_connections;
    uint32_t batch_samples;
    uint64_t seed;               /* for requests without a seed */
    tern_serve_limits limits;
    FILE *log;                   /* the "listening" line and one line per request */
    /* A run's workflow (docs/agents.md, "Workflows"): the trajectory endpoint
     * /s/KEY/v1/... names (key[0..len)), NULL for none; it outlives the
     * server. NULL: the server has no such URLs. Called on HTTP threads. */
    struct tern_serve_session *(*session)(void *user, const char *key, size_t len);
    void *session_user;
} tern_serve_options;

/* 1 when address is a loopback one (127.0.0.0/8, ::1, "localhost"). */
TERN_INTERNAL int tern_serve_is_loopback(const char *address);

/* A server of m listening (o->port 0: any free port, *port says which),
 * not yet decoding: requests queue until tern_server_run. TERN_OK, or the
 * failures of tern_serve. o and m outlive it. */
typedef struct tern_server tern_server;
TERN_INTERNAL int tern_server_start(const tern_model *m, const tern_serve_options *o,
                                    tern_server **out, unsigned *port);
/* The model's thread: decode requests until *stop is set or another thread
 * calls tern_server_close, then refuse what is still queued (503). TERN_OK. */
TERN_INTERNAL int tern_server_run(tern_server *s, volatile sig_atomic_t *stop);
TERN_INTERNAL void tern_server_close(tern_server *s);
/* Stop listening (every connection answered first) and free s. */
TERN_INTERNAL void tern_server_free(tern_server *s);

/* Serve m until *stop is set (a signal), then finish or refuse what is in
 * flight and return TERN_OK. Failures before serving (an address it cannot
 * listen on, an API key missing off loopback, the model's special tokens)
 * return their status with a message (tern_error_message()). */
TERN_INTERNAL int tern_serve(const tern_model *m, const tern_serve_options *o,
                             volatile sig_atomic_t *stop);

#endif
