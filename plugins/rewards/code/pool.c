/* pool.c: many tern-sandbox runs at once (pool.h). */
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_MARGIN_MS 5000      /* past the helper's own deadline for its init */
#define MAX_RESPONSE (1u << 30)

extern char **environ;

struct sandbox_pool {
    char *helper;
    unsigned slots, free_slots;
    pthread_mutex_t lock;
    pthread_cond_t freed;
};

/* One helper running. */
typedef struct run {
    size_t index; /* into reqs[] / res[] */
    pid_t pid;
    int pidfd, out_fd, err_fd;
    uint64_t deadline_ms;
} run;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

sandbox_pool *sandbox_pool_create(const char *helper, unsigned slots)
{
    sandbox_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->helper = strdup(helper))) {
        free(p);
        return NULL;
    }
    p->slots = p->free_slots = slots ? slots : 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    return p;
}

void sandbox_pool_destroy(sandbox_pool *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->freed);
    free(p->helper);
    free(p);
}

/* A slot: waiting for one when `wait`, else 0 when none is free. */
static int take_slot(sandbox_pool *p, int wait)
{
    pthread_mutex_lock(&p->lock);
    while (wait && p->free_slots == 0)
        pthread_cond_wait(&p->freed, &p->lock);
    int got = p->free_slots > 0;
    if (got)
        p->free_slots--;
    pthread_mutex_unlock(&p->lock);
    return got;
}

static void give_slot(sandbox_pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->free_slots++;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

static void set_error(sandbox_response *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(sandbox_response *r, const char *fmt, ...)
{
    sandbox_response_free(r);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

/* A memfd holding the encoded request, at offset 0. */
static int request_fd(const sandbox_request *req)
{
    sandbox_buf b = {0};
    if (sandbox_request_encode(req, &b) != 0) {
        sandbox_buf_free(&b);
        errno = ENOMEM;
        return -1;
    }
    int fd = memfd_create("tern-sandbox-request", MFD_CLOEXEC);
    int ok = fd >= 0;
    for (size_t done = 0; ok && done < b.len;) {
        ssize_t w = write(fd, b.data + done, b.len - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        done += ok ? (size_t)w : 0;
    }
    ok = ok && lseek(fd, 0, SEEK_SET) == 0;
    int e = errno;
    sandbox_buf_free(&b);
    if (!ok && fd >= 0)
        close(fd);
    errno = e;
    return ok ? fd : -1;
}

/* Starts the helper on req: 0, or -1 with errno (the run is not started). */
static int start(sandbox_pool *p, const sandbox_request *req, run *r)
{
    int in_fd = request_fd(req);
    r->out_fd = memfd_create("tern-sandbox-response", MFD_CLOEXEC);
    r->err_fd = memfd_create("tern-sandbox-stderr", MFD_CLOEXEC);
    r->pidfd = -1;
    int rc = -1, e = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    if (in_fd >= 0 && r->out_fd >= 0 && r->err_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
        posix_spawn_file_actions_adddup2(&fa, r->out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, r->err_fd, 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        /* tern's threads may block or ignore signals: the helper starts clean */
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &all);
        /* its own process group: a Ctrl-C at tern's terminal is tern's to
         * handle (it winds down); the helper dies with tern (PDEATHSIG) */
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                          POSIX_SPAWN_SETPGROUP);
        char parent[24];
        snprintf(parent, sizeof parent, "%ld", (long)getpid());
        char *argv[] = {p->helper, "--parent", parent, NULL};
        e = posix_spawn(&r->pid, p->helper, &fa, &at, argv, environ);
        if (e == 0) {
            r->pidfd = (int)syscall(SYS_pidfd_open, r->pid, 0);
            if (r->pidfd < 0) {
                e = errno;
                kill(r->pid, SIGKILL);
                waitpid(r->pid, NULL, 0);
            } else {
                r->deadline_ms = now_ms() + sandbox_request_budget_ms(req) + KILL_MARGIN_MS;
                rc = 0;
            }
        }
    } else {
        e = errno;
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (in_fd >= 0)
        close(in_fd);
    if (rc != 0) {
        if (r->out_fd >= 0)
            close(r->out_fd);
        if (r->err_fd >= 0)
            close(r->err_fd);
        errno = e;
    }
    return rc;
}

/* The whole of a memfd, NUL-terminated; NULL out of memory or too big. */
static uint8_t *slurp(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > MAX_RESPONSE)
        return NULL;
    size_t n = (size_t)st.st_size;
    uint8_t *d = malloc(n + 1);
    if (!d)
        return NULL;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, d + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    d[got] = 0;
    *len = got;
    return d;
}

/* The helper's stderr as one line for a message. */
static void first_line(int fd, char *dst, size_t cap)
{
    size_t n = 0;
    uint8_t *t = slurp(fd, &n);
    dst[0] = '\0';
    if (!t)
        return;
    size_t i = 0;
    while (i < n && t[i] != '\n' && i + 1 < cap) {
        dst[i] = (t[i] >= 0x20 && t[i] < 0x7f) ? (char)t[i] : '?';
        i++;
    }
    dst[i] = '\0';
    free(t);
}

/* The helper ended (or was killed: timed_out): its response into res. */
static void finish(sandbox_pool *p, run *r, sandbox_response *res, int timed_out)
{
    int status = 0;
    if (timed_out)
        kill(r->pid, SIGKILL);
    while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
    }
    char line[160];
    if (timed_out) {
        set_error(res, "tern-sandbox did not finish in time and was killed");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        first_line(r->err_fd, line, sizeof line);
        if (WIFSIGNALED(status))
            set_error(res, "tern-sandbox was killed by signal %d%s%s", WTERMSIG(status),
                      line[0] ? ": " : "", line);
        else
            set_error(res, "tern-sandbox exited with status %d%s%s", WEXITSTATUS(status),
                      line[0] ? ": " : "", line);
    } else {
        size_t n = 0;
        uint8_t *msg = slurp(r->out_fd, &n);
        char why[120];
        if (!msg)
            set_error(res, "reading tern-sandbox's response: out of memory");
        else if (sandbox_response_decode(msg, n, res, why, sizeof why) != 0)
            set_error(res, "tern-sandbox answered badly: %s", why);
        free(msg);
    }
    close(r->pidfd);
    close(r->out_fd);
    close(r->err_fd);
    give_slot(p);
}

int sandbox_pool_run(sandbox_pool *p, const sandbox_request *const *reqs, sandbox_response *res,
                     size_t n, char *why, size_t why_cap)
{
    for (size_t i = 0; i < n; i++)
        res[i] = (sandbox_response){0};
    run *running = calloc(p->slots, sizeof *running);
    struct pollfd *fds = calloc(p->slots, sizeof *fds);
    if (!running || !fds) {
        free(running);
        free(fds);
        snprintf(why, why_cap, "out of memory");
        for (size_t i = 0; i < n; i++)
            set_error(&res[i], "out of memory");
        return -1;
    }
    size_t next = 0, active = 0;
    int rc = 0;
    while (next < n || active > 0) {
        /* start what the free slots allow; with nothing of ours running,
         * wait for a slot another caller frees */
        while (next < n && active < p->slots && take_slot(p, active == 0)) {
            run *r = &running[active];
            r->index = next;
            if (start(p, reqs[next], r) != 0) {
                int e = errno;
                give_slot(p);
                set_error(&res[next], "cannot start %s: %s", p->helper, strerror(e));
                if (e == ENOMEM || e == EMFILE || e == ENFILE) {
                    snprintf(why, why_cap, "starting tern-sandbox: %s", strerror(e));
                    rc = -1;
                }
            } else {
                active++;
            }
            next++;
        }
        if (active == 0)
            continue;
        uint64_t now = now_ms(), soonest = UINT64_MAX;
        for (size_t i = 0; i < active; i++) {
            fds[i] = (struct pollfd){.fd = running[i].pidfd, .events = POLLIN};
            if (running[i].deadline_ms < soonest)
                soonest = running[i].deadline_ms;
        }
        int wait_ms = soonest <= now ? 0 : (int)(soonest - now > 1000 ? 1000 : soonest - now);
        if (poll(fds, active, wait_ms) < 0 && errno != EINTR) {
            snprintf(why, why_cap, "poll: %s", strerror(errno));
            rc = -1;
        }
        now = now_ms();
        for (size_t i = 0; i < active;) {
            int done = fds[i].revents != 0, late = running[i].deadline_ms <= now;
            if (!done && !late) {
                i++;
                continue;
            }
            finish(p, &running[i], &res[running[i].index], !done && late);
            /* the last one takes this place */
            running[i] = running[active - 1];
            fds[i] = fds[active - 1];
            active--;
        }
    }
    free(running);
    free(fds);
    return rc;
}

int sandbox_pool_check(sandbox_pool *p, char *why, size_t why_cap)
{
    const sandbox_request *reqs[] = {sandbox_check_request()};
    sandbox_response res;
    int rc = sandbox_pool_run(p, reqs, &res, 1, why, why_cap);
    if (rc == 0)
        rc = sandbox_check_response(&res, why, why_cap);
    sandbox_response_free(&res);
    return rc;
}
