/* http_client.h: a minimal HTTP/1.1 client for the tests of `tern serve`
 * (one request per connection, "Connection: close"), and starting and
 * stopping a `tern serve` process. */
#ifndef TERN_TEST_HTTP_CLIENT_H
#define TERN_TEST_HTTP_CLIENT_H

#include <stddef.h>
#include <sys/types.h>

typedef struct http_reply {
    int status;     /* 0: no reply (could not connect, or the connection died) */
    char *headers;  /* the head as sent, malloc'd */
    char *body;     /* the body, de-chunked, NUL-terminated, malloc'd */
    size_t body_len;
} http_reply;

/* Send `method path` with `body` (NULL: none) and `extra` header lines
 * (each ending "\r\n"; NULL: none) to 127.0.0.1:port; the whole reply. */
void http_request(int port, const char *method, const char *path, const char *extra,
                  const char *body, size_t body_len, http_reply *r);
/* POST of a JSON text. */
void http_post(int port, const char *path, const char *json, http_reply *r);
void http_reply_free(http_reply *r);

/* A `tern serve` process. */
typedef struct served {
    pid_t pid;
    int port;
    char log[512]; /* its stderr, a file in the test's work directory */
} served;

/* Start `tern serve ARGS --port 0` (ARGS a shell-quoted text), env
 * assignments `env` before it (NULL: none), and wait for its "listening"
 * line: 0 with s filled, or -1 (the process ended: s->pid 0, its log kept). */
int serve_start(served *s, const char *env, const char *args);
/* SIGTERM, and the exit code; a sanitizer's report in its log fails the test (128 + signal for a signal's death, -1 if it
 * had to be killed after 30 s). */
int serve_stop(served *s);
/* The same without looking at its log. */
int serve_end(served *s);

#endif
