/* exec_child.c: the exec reward's supervised command (see exec_child.h). */
#include "exec_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* What failed in the child before exec: the step and its errno, sent whole
 * on the close-on-exec pipe (a successful exec closes it unwritten). */
typedef struct child_error {
    int err;
    char what[8]; /* "dup2", "chdir", "exec" */
} child_error;

/* In the child, after fork: become the command, or report why not on
 * err_fd. Only async-signal-safe calls here: tern may have threads. */
__attribute__((noreturn)) static void become(int sock, int err_fd, char *const *argv,
                                             const char *dir)
{
    setpgid(0, 0);                   /* killed as a group on a timeout */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* and with tern */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_IGN); /* ^C is tern's: it winds the command down */
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    child_error ce = {0, ""};
    if (dup2(sock, 0) < 0 || dup2(sock, 1) < 0) {
        ce.err = errno;
        memcpy(ce.what, "dup2", 5);
    } else if (dir && chdir(dir) != 0) {
        ce.err = errno;
        memcpy(ce.what, "chdir", 6);
    } else {
        close_range(3, ~0u, CLOSE_RANGE_CLOEXEC); /* the run's files stay tern's */
        execvp(argv[0], argv);
        ce.err = errno;
        memcpy(ce.what, "exec", 5);
    }
    ssize_t ignored = write(err_fd, &ce, sizeof ce);
    (void)ignored;
    _exit(127);
}

int exec_child_start(exec_child *c, char *const *argv, const char *dir, char *why, size_t n)
{
    c->pid = 0;
    c->fd = -1;
    c->len = 0;
    c->used = 0;
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(why, n, "socketpair: %s", strerror(errno));
        return -1;
    }
    if (pipe2(ep, O_CLOEXEC) != 0) {
        snprintf(why, n, "pipe: %s", strerror(errno));
        close(sv[0]), close(sv[1]);
        return -1;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, n, "fork: %s", strerror(errno));
        close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        close(ep[0]);
        become(sv[1], ep[1], argv, dir);
    }
    close(sv[1]);
    close(ep[1]);
    /* exec closed ep[1] (EOF, nothing read) or the child said why it failed */
    child_error ce;
    ssize_t k;
    while ((k = read(ep[0], &ce, sizeof ce)) < 0 && errno == EINTR)
        ;
    close(ep[0]);
    if (k > 0) {
        ce.what[sizeof ce.what - 1] = '\0';
        snprintf(why, n, "%s: %s", k == (ssize_t)sizeof ce ? ce.what : "start",
                 k == (ssize_t)sizeof ce ? strerror(ce.err) : "failed");
        close(sv[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    c->pid = pid;
    c->fd = sv[0];
    return 0;
}

exec_io exec_child_pump(exec_child *c, const char *out, size_t n, size_t *sent,
                        uint64_t deadline_ns, const char **line, size_t *len)
{
    /* the line returned last is consumed */
    if (c->used) {
        memmove(c->buf, c->buf + c->used, c->len - c->used);
        c->len -= c->used;
        c->used = 0;
    }
    for (;;) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        if (nl) {
            *line = c->buf;
            *len = (size_t)(nl - c->buf);
            c->used = *len + 1;
            return EXEC_IO_OK;
        }
        if (c->len >= (c->max_line ? c->max_line : EXEC_MAX_LINE))
            return EXEC_IO_TOO_LONG;
        if (c->cap - c->len < 4096) {
            size_t cap = c->cap ? 2 * c->cap : 8192;
            char *b = realloc(c->buf, cap);
            if (!b)
                return EXEC_IO_TOO_LONG; /* treated as a bad reply: the child is restarted */
            c->buf = b;
            c->cap = cap;
        }
        short want = POLLIN | (*sent < n ? POLLOUT : 0);
        int ms = -1;
        if (deadline_ns) {
            uint64_t now = now_ns();
            if (now >= deadline_ns)
                return EXEC_IO_TIMEOUT;
            uint64_t left = (deadline_ns - now + 999999) / 1000000;
            ms = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd p = {.fd = c->fd, .events = want};
        int r = poll(&p, 1, ms);
        if (r < 0 && errno != EINTR)
            return EXEC_IO_CLOSED;
        if (r <= 0)
            continue; /* a signal, or the deadline: checked above */
        if (*sent < n && (p.revents & POLLOUT)) {
            ssize_t w = send(c->fd, out + *sent, n - *sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                *sent += (size_t)w;
            else if (w < 0 && errno != EINTR && errno != EAGAIN)
                *sent = n; /* it stopped reading: its replies so far are still read, then EOF */
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
            if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
                return EXEC_IO_CLOSED;
            if (got > 0)
                c->len += (size_t)got;
        }
    }
}

exec_io exec_child_ask(exec_child *c, const char *data, size_t n, uint64_t deadline_ns,
                       const char **line, size_t *len)
{
    size_t sent = 0;
    return exec_child_pump(c, data, n, &sent, deadline_ns, line, len);
}

void exec_child_kill(exec_child *c, int *status)
{
    int st = 0;
    if (c->pid > 0) {
        kill(-c->pid, SIGKILL);
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (c->fd >= 0)
        close(c->fd);
    c->pid = 0;
    c->fd = -1;
    c->len = 0;
    c->used = 0;
    if (status)
        *status = st;
}

int exec_child_end(exec_child *c, int grace_ms, int *status)
{
    int st = 0;
    pid_t r = 0;
    if (c->pid > 0) {
        uint64_t until = now_ns() + (uint64_t)grace_ms * 1000000ull;
        while ((r = waitpid(c->pid, &st, WNOHANG)) == 0 && now_ns() < until) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (r == c->pid) {
            kill(-c->pid, SIGKILL); /* what it left behind in its group */
            c->pid = 0;
        }
    }
    int killed = c->pid > 0;
    exec_child_kill(c, killed ? status : NULL);
    if (!killed && status)
        *status = st;
    return killed;
}

void exec_child_stop(exec_child *c, int grace_ms)
{
    if (c->pid > 0) {
        shutdown(c->fd, SHUT_WR); /* end of its input: it should exit */
        uint64_t until = now_ns() + (uint64_t)grace_ms * 1000000ull;
        pid_t r = 0;
        int st;
        while ((r = waitpid(c->pid, &st, WNOHANG)) == 0 && now_ns() < until) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (r == c->pid) {
            kill(-c->pid, SIGKILL); /* what it left behind in its group */
            c->pid = 0;
        }
    }
    exec_child_kill(c, NULL);
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
}
