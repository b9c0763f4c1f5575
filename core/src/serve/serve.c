/* serve.c: `tern serve`'s HTTP side over GNU libmicrohttpd (serve.h).
 *
 * libmicrohttpd parses HTTP; this file routes requests, checks the API
 * key, reads bodies up to their limit, queues jobs and writes their replies:
 * a JSON body, or a stream of server-sent events read from the job as the
 * model thread writes it. One thread per connection: a handler may block on
 * its job. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/errmsg.h"
#include "serve/decode_queue.h"
#include "serve/serve_job.h"
#include "serve/serve_reply.h"
#include "serve/serve_session.h"

typedef struct tern_server {
    const tern_serve_options *o;
    tern_serve_queue *q;
    long long started;
    pthread_mutex_t log_mu;
    struct MHD_Daemon *d;
} server;

/* What a connection's request is for. */
typedef enum route {
    ROUTE_NONE = 0,
    ROUTE_HEALTH,
    ROUTE_MODELS,
    ROUTE_MODEL,   /* /v1/models/NAME */
    ROUTE_CHAT,
    ROUTE_COMPLETIONS
} route;

typedef struct request_state {
    route route;
    tern_serve_session *session; /* /s/KEY/...: a trajectory's endpoint */
    int refused;            /* the answer is err, decided before the body: drop the body */
    tern_serve_error err;
    const char *allow;      /* with a 405: the method the URL takes */
    char *body;
    size_t len, cap;
} request_state;

int tern_serve_is_loopback(const char *address)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(address, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, address, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, address, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

static void log_line(server *s, const char *method, const char *url, int status)
{
    if (!s->o->log)
        return;
    pthread_mutex_lock(&s->log_mu);
    fprintf(s->o->log, "tern serve: %s %s %d\n", method, url, status);
    fflush(s->o->log);
    pthread_mutex_unlock(&s->log_mu);
}

static enum MHD_Result respond(server *s, struct MHD_Connection *c, const char *method,
                               const char *url, int status, const char *body, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (allow)
        MHD_add_response_header(r, "Allow", allow);
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    log_line(s, method, url, status);
    return rc;
}

static enum MHD_Result respond_error(server *s, struct MHD_Connection *c, const char *method,
                                     const char *url, const tern_serve_error *e,
                                     const char *allow)
{
    char *body = tern_serve_error_body(e);
    enum MHD_Result rc = respond(s, c, method, url, body ? e->status : 500,
                                 body ? body : "{\"error\":{\"message\":\"out of memory\","
                                               "\"type\":\"server_error\",\"param\":null,"
                                               "\"code\":null}}",
                                 allow);
    free(body);
    return rc;
}

/* Route url and method; 0, or -1 with the error (404, 405) and *allow. */
static int route_of(server *s, const char *url, const char *method, route *out,
                    tern_serve_error *e, const char **allow)
{
    const char *get = "GET", *post = "POST";
    const char *want = NULL;
    *out = ROUTE_NONE;
    if (strcmp(url, "/health") == 0)
        *out = ROUTE_HEALTH, want = get;
    else if (strcmp(url, "/v1/models") == 0)
        *out = ROUTE_MODELS, want = get;
    else if (strncmp(url, "/v1/models/", 11) == 0)
        *out = ROUTE_MODEL, want = get;
    else if (strcmp(url, "/v1/chat/completions") == 0)
        *out = ROUTE_CHAT, want = post;
    else if (strcmp(url, "/v1/completions") == 0)
        *out = ROUTE_COMPLETIONS, want = post;
    if (!want)
        return tern_serve_fail(e, 404, "invalid_request_error", NULL, "unknown_url",
                               "Unknown request URL: %s %.200s. tern serve has /v1/chat/"
                               "completions, /v1/completions, /v1/models and /health", method,
                               url);
    if (strcmp(method, want) != 0) {
        *allow = want;
        return tern_serve_fail(e, 405, "invalid_request_error", NULL, "method_not_allowed",
                               "%.200s takes %s, not %s", url, want, method);
    }
    (void)s;
    return 0;
}

/* The API key, compared in constant time. */
static int authorized(server *s, struct MHD_Connection *c)
{
    const char *key = s->o->api_key;
    if (!key)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0)
        return 0;
    h += 7;
    size_t n = strlen(key), m = strlen(h);
    unsigned char diff = n != m;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(key[i] ^ (i < m ? h[i] : 0));
    return diff == 0;
}

/* ---- streams ---------------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    size_t n = tern_serve_job_read(cls, buf, max);
    return n ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

/* The response is done with, sent or not (the client may have gone). */
static void stream_free(void *cls)
{
    tern_serve_job_cancel(cls);
    tern_serve_job_unref(cls);
}

/* ---- a request ---------------------------------------------------------------- */

static enum MHD_Result answer_job(server *s, struct MHD_Connection *c, const char *method,
                                  const char *url, request_state *st)
{
    tern_serve_kind kind = st->route == ROUTE_CHAT ? TERN_SERVE_CHAT : TERN_SERVE_COMPLETION;
    tern_serve_request req;
    tern_serve_error e;
    if (tern_serve_parse(kind, st->body ? st->body : "", st->len, &s->o->limits, &req, &e) != 0)
        return respond_error(s, c, method, url, &e, NULL);
    /* a trajectory's endpoint serves the policy whatever a program calls it */
    if (req.model && !st->session && strcmp(req.model, s->o->model_name) != 0) {
        tern_serve_fail(&e, 404, "invalid_request_error", "model", "model_not_found",
                        "The model `%.100s` does not exist: this server serves `%.100s`",
                        req.model, s->o->model_name);
        tern_serve_request_free(&req);
        return respond_error(s, c, method, url, &e, NULL);
    }
    tern_serve_job *j = tern_serve_job_new(&req, s->o->model_name);
    if (!j) {
        tern_serve_fail(&e, 500, "server_error", NULL, NULL, "the server is out of memory");
        return respond_error(s, c, method, url, &e, NULL);
    }
    j->session = st->session;
    if (tern_serve_queue_push(s->q, j) != 0) {
        tern_serve_job_unref(j);
        tern_serve_fail(&e, 503, "server_error", NULL, "server_shutting_down",
                        "the server is shutting down: send the request again when it is back");
        return respond_error(s, c, method, url, &e, NULL);
    }
    if (!j->req.stream || !tern_serve_job_wait_start(j)) {
        tern_serve_job_wait(j);
        enum MHD_Result rc = respond(s, c, method, url, j->status, j->out ? j->out : "{}", NULL);
        tern_serve_job_unref(j);
        return rc;
    }
    /* the response holds the job now, and lets go of it in stream_free */
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, j,
                                          stream_free);
    if (!r) {
        stream_free(j);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    log_line(s, method, url, 200);
    return rc;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    server *s = cls;
    request_state *st = *con_cls;
    if (!st) {
        /* what is wrong is answered once the body is read (and dropped): a
         * client sends its whole body before it reads, so an answer before
         * that would leave both waiting */
        if (!(st = calloc(1, sizeof *st)))
            return MHD_NO;
        *con_cls = st;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        const char *path = url;
        if (s->o->session && strncmp(url, "/s/", 3) == 0) {
            /* a trajectory's endpoint: /s/KEY, then the API's own paths */
            size_t len = strcspn(url + 3, "/");
            st->session = s->o->session(s->o->session_user, url + 3, len);
            path = url + 3 + len;
            if (!st->session)
                st->refused = tern_serve_fail(&st->err, 404, "invalid_request_error", NULL,
                                              "unknown_trajectory",
                                              "no trajectory has the endpoint %.*s: use the "
                                              "OPENAI_BASE_URL the program was given",
                                              (int)(len < 100 ? len : 100), url);
        }
        if (st->refused)
            ;
        else if (route_of(s, path, method, &st->route, &st->err, &st->allow) != 0)
            st->refused = 1;
        else if (st->route != ROUTE_HEALTH && !authorized(s, c))
            st->refused = tern_serve_fail(&st->err, 401, "invalid_request_error", NULL,
                                          "invalid_api_key",
                                          "Incorrect API key provided: send it as "
                                          "'Authorization: Bearer KEY', the key this server "
                                          "was started with") != 0;
        else if (cl && strtoull(cl, NULL, 10) > s->o->limits.body_bytes)
            st->refused = tern_serve_fail(&st->err, 413, "invalid_request_error", NULL,
                                          "request_too_large",
                                          "the request body is %s bytes; this server takes at "
                                          "most %zu", cl, s->o->limits.body_bytes) != 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!st->refused && st->len + *upload_size > s->o->limits.body_bytes) {
            /* a body without Content-Length (chunked) is cut at its limit */
            st->refused = tern_serve_fail(&st->err, 413, "invalid_request_error", NULL,
                                          "request_too_large",
                                          "the request body is over this server's limit of "
                                          "%zu bytes", s->o->limits.body_bytes) != 0;
        } else if (!st->refused) {
            if (st->len + *upload_size + 1 > st->cap) {
                size_t cap = st->cap ? st->cap : 4096;
                while (cap < st->len + *upload_size + 1)
                    cap *= 2;
                char *p = realloc(st->body, cap);
                if (!p)
                    return MHD_NO;
                st->body = p, st->cap = cap;
            }
            memcpy(st->body + st->len, upload, *upload_size);
            st->len += *upload_size;
            st->body[st->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (st->refused)
        return respond_error(s, c, method, url, &st->err, st->allow);
    switch (st->route) {
    case ROUTE_HEALTH:
        return respond(s, c, method, url, 200, "{\"status\":\"ok\"}", NULL);
    case ROUTE_MODELS:
    case ROUTE_MODEL: {
        const char *name = strstr(url, "/v1/models/") + 11;
        if (st->route == ROUTE_MODEL && strcmp(name, s->o->model_name) != 0) {
            tern_serve_fail(&st->err, 404, "invalid_request_error", "model", "model_not_found",
                            "The model `%.100s` does not exist: this server serves `%.100s`",
                            name, s->o->model_name);
            return respond_error(s, c, method, url, &st->err, NULL);
        }
        char *body = tern_serve_models_body(s->o->model_name, s->started,
                                            st->route == ROUTE_MODEL);
        enum MHD_Result rc = respond(s, c, method, url, body ? 200 : 500, body ? body : "{}",
                                     NULL);
        free(body);
        return rc;
    }
    default:
        return answer_job(s, c, method, url, st);
    }
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    request_state *st = *con_cls;
    if (st) {
        free(st->body);
        free(st);
    }
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    server *s = cls;
    if (!s->o->log)
        return;
    pthread_mutex_lock(&s->log_mu);
    fprintf(s->o->log, "tern serve: ");
    vfprintf(s->o->log, fmt, ap);
    fflush(s->o->log);
    pthread_mutex_unlock(&s->log_mu);
}

/* The socket address to listen on. 0, or -1 (not a numeric address). */
static int socket_address(const char *address, uint16_t port, struct sockaddr_storage *ss,
                          int *v6)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    const char *a = strcmp(address, "localhost") == 0 ? "127.0.0.1" : address;
    *v6 = 0;
    if (inet_pton(AF_INET, a, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        return 0;
    }
    if (inet_pton(AF_INET6, a, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        *v6 = 1;
        return 0;
    }
    return -1;
}

int tern_server_start(const tern_model *m, const tern_serve_options *o, tern_server **out,
                      unsigned *port)
{
    *out = NULL;
    if (!o || o->size < sizeof *o || !o->address || !o->model_name)
        return tern_errorf(TERN_EINVAL, "tern serve: options are missing");
    if (!tern_serve_is_loopback(o->address) && !(o->api_key && *o->api_key))
        return tern_errorf(TERN_ECONFIG,
                           "tern serve: %s is not a loopback address, and anyone who can reach "
                           "it could use the model: give an API key (TERN_API_KEY or "
                           "--api-key-file FILE)", o->address);
    struct sockaddr_storage ss;
    int v6;
    if (socket_address(o->address, o->port, &ss, &v6) != 0)
        return tern_errorf(TERN_ECONFIG,
                           "tern serve: '%s' is not a numeric IPv4 or IPv6 address (or "
                           "localhost)", o->address);
    server *s = calloc(1, sizeof *s);
    if (!s)
        return tern_errorf(TERN_ENOMEM, "tern serve: out of memory");
    s->o = o;
    s->started = (long long)time(NULL);
    pthread_mutex_init(&s->log_mu, NULL);
    s->q = tern_serve_queue_new(&o->limits, o->batch_samples, o->seed);
    int rc = s->q ? tern_serve_queue_open(s->q, m)
                  : tern_errorf(TERN_ENOMEM, "tern serve: out of memory");
    if (rc == TERN_OK) {
        unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
        s->d = MHD_start_daemon(flags, o->port, NULL, NULL, &answer, s,
                                MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, s, MHD_OPTION_SOCK_ADDR,
                                (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
                                (unsigned)(o->max_connections ? o->max_connections
                                                              : TERN_SERVE_MAX_CONNECTIONS),
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)TERN_SERVE_IDLE_SECONDS,
                                MHD_OPTION_NOTIFY_COMPLETED, &completed, s, MHD_OPTION_END);
        if (!s->d)
            rc = tern_errorf(TERN_ERR,
                             "tern serve: cannot listen on %s port %u: %s (is another server "
                             "on it? --port N picks another)", o->address, (unsigned)o->port,
                             strerror(errno ? errno : EADDRINUSE));
    }
    if (rc != TERN_OK) {
        tern_server_free(s);
        return rc;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : o->port;
    if (o->log) {
        pthread_mutex_lock(&s->log_mu);
        fprintf(o->log, "tern serve: %s on http://%s%s%s:%u/v1 (OpenAI API; /health)\n",
                o->model_name, v6 ? "[" : "", o->address, v6 ? "]" : "", *port);
        fflush(o->log);
        pthread_mutex_unlock(&s->log_mu);
    }
    *out = s;
    return TERN_OK;
}

int tern_server_run(tern_server *s, volatile sig_atomic_t *stop)
{
    return tern_serve_queue_run(s->q, stop);
}

void tern_server_close(tern_server *s)
{
    tern_serve_queue_close(s->q);
}

void tern_server_free(tern_server *s)
{
    if (!s)
        return;
    if (s->q)
        tern_serve_queue_drain(s->q); /* a handler waiting on a job is answered */
    if (s->d)
        MHD_stop_daemon(s->d); /* every job is answered: the connections' threads end */
    tern_serve_queue_free(s->q);
    pthread_mutex_destroy(&s->log_mu);
    free(s);
}

int tern_serve(const tern_model *m, const tern_serve_options *o, volatile sig_atomic_t *stop)
{
    tern_server *s = NULL;
    unsigned port = 0;
    int rc = tern_server_start(m, o, &s, &port);
    if (rc == TERN_OK)
        rc = tern_server_run(s, stop);
    tern_server_free(s);
    return rc;
}
