/* http_client.c: a minimal HTTP/1.1 client and `tern serve` processes for
 * tests (http_client.h). Written here rather than with libcurl: the tests
 * need one request per connection and the raw reply, and nothing else. */
#include "http_client.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h"

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* The body of a chunked reply, in place. */
static size_t dechunk(char *b, size_t n)
{
    size_t in = 0, out = 0;
    while (in < n) {
        char *end;
        unsigned long len = strtoul(b + in, &end, 16);
        char *crlf = strstr(b + in, "\r\n");
        if (!crlf || end == b + in)
            break;
        in = (size_t)(crlf - b) + 2;
        if (len == 0 || in + len > n)
            break;
        memmove(b + out, b + in, len);
        out += len, in += len + 2;
    }
    b[out] = '\0';
    return out;
}

void http_request(int port, const char *method, const char *path, const char *extra,
                  const char *body, size_t body_len, http_reply *r)
{
    memset(r, 0, sizeof *r);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s%s", method,
                      path, port, extra ? extra : "",
                      body ? "Content-Type: application/json\r\n" : "");
    if (body)
        hn += snprintf(head + hn, sizeof head - (size_t)hn, "Content-Length: %zu\r\n", body_len);
    hn += snprintf(head + hn, sizeof head - (size_t)hn, "\r\n");
    if (send_all(fd, head, (size_t)hn) != 0 || (body && send_all(fd, body, body_len) != 0)) {
        close(fd);
        return;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 4096 + 1 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t got = recv(fd, buf + n, cap - n - 1, 0);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    char *sep = strstr(buf, "\r\n\r\n");
    if (!sep || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
        free(buf);
        r->status = 0;
        return;
    }
    r->headers = strndup(buf, (size_t)(sep - buf));
    size_t bn = n - (size_t)(sep + 4 - buf);
    r->body = malloc(bn + 1);
    memcpy(r->body, sep + 4, bn);
    r->body[bn] = '\0';
    r->body_len = strcasestr(r->headers, "Transfer-Encoding: chunked") ? dechunk(r->body, bn) : bn;
    free(buf);
}

void http_post(int port, const char *path, const char *json, http_reply *r)
{
    http_request(port, "POST", path, NULL, json, strlen(json), r);
}

void http_reply_free(http_reply *r)
{
    free(r->headers);
    free(r->body);
    memset(r, 0, sizeof *r);
}

int serve_start(served *s, const char *env, const char *args)
{
    static int count;
    memset(s, 0, sizeof *s);
    snprintf(s->log, sizeof s->log, "%s/serve_%d_%d.log", test_work_dir(), (int)getpid(),
             count++);
    remove(s->log);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && unset TERN_PLUGIN_PATH && exec env %s %s serve %s "
             "--port 0 2>%s </dev/null", test_work_dir(), env ? env : "", TERN_TEST_BIN, args,
             s->log);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    /* the model loads in about a second; under a sanitizer, more */
    for (int i = 0; i < 1200; i++) {
        char text[8192];
        slurp(s->log, text, sizeof text);
        const char *at = strstr(text, " on http://127.0.0.1:");
        if (at) {
            s->port = atoi(at + strlen(" on http://127.0.0.1:"));
            return 0;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            return -1;
        }
        usleep(50 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    s->pid = 0;
    return -1;
}

/* A sanitizer's report in the server's log fails the test (the sanitizer
 * build instruments the server too). */
static void check_log(const served *s)
{
    static char text[1 << 20];
    slurp(s->log, text, sizeof text);
    cr_expect_null(strstr(text, "Sanitizer"), "tern serve: %s", text);
    cr_expect_null(strstr(text, "runtime error:"), "tern serve: %s", text);
}

int serve_stop(served *s)
{
    int code = serve_end(s);
    check_log(s);
    return code;
}

int serve_end(served *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 600; i++) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        usleep(50 * 1000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    return -1;
}
