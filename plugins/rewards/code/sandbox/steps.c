/* steps.c: running the steps of a request inside the sandbox (steps.h). */
#include "steps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/securebits.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#include "filter.h"

#define ERR_HEAD 1024 /* stderr: the first bytes (a compiler's first error) ... */
#define ERR_TAIL 2944 /* ... and the last (a Python traceback's last line) */

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- The program's process (after fork, before exec) ----------------------- */

static char *const program_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/box", "TMPDIR=/tmp", "LANG=C.UTF-8", NULL,
};

static void set_limit(int resource, uint64_t soft, uint64_t hard)
{
    struct rlimit rl = {(rlim_t)soft, (rlim_t)hard};
    setrlimit(resource, &rl);
}

/* Everything here is async-signal-safe: init is single-threaded, but the
 * rule keeps this code safe to move. Never returns. */
static void exec_program(const sandbox_step *s, const struct sock_fprog *filter, int in_fd,
                         int out_fd, int err_fd, int aux_fd, int report_fd)
{
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);

    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0 ||
        (aux_fd >= 0 && dup2(aux_fd, 3) < 0))
        goto fail;
    /* everything else closes at exec; report_fd stays open until then */
    syscall(SYS_close_range, aux_fd >= 0 ? 4 : 3, ~0u, CLOSE_RANGE_CLOEXEC);

    const sandbox_limits *l = &s->limits;
    uint64_t cpu_s = (l->cpu_ms + 999) / 1000;
    set_limit(RLIMIT_CPU, cpu_s, cpu_s + 1);
    set_limit(RLIMIT_AS, l->memory_bytes, l->memory_bytes);
    /* the sandbox's init is a process of the same user: one more */
    set_limit(RLIMIT_NPROC, l->processes + 1, l->processes + 1);
    set_limit(RLIMIT_NOFILE, l->open_files, l->open_files);
    set_limit(RLIMIT_FSIZE, l->file_bytes, l->file_bytes);
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_MEMLOCK, 0, 0);
    set_limit(RLIMIT_MSGQUEUE, 0, 0);

    /* uid 0 of the user namespace, but without a capability: locked
     * securebits keep exec from granting any back */
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                     SECBIT_NO_CAP_AMBIENT_RAISE |
                                     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) != 0)
        goto fail;
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            goto fail;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &hdr, data) != 0)
        goto fail;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || sandbox_filter_load(filter) != 0)
        goto fail;

    execve(s->argv[0], s->argv, program_env);
fail:;
    int e = errno;
    ssize_t w = write(report_fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* ---- Collecting what the program writes -------------------------------------- */

typedef struct capture {
    uint8_t *data;
    size_t len, limit;
    int over; /* more than limit bytes were written */
} capture;

/* The first ERR_HEAD and last ERR_TAIL bytes of stderr. */
typedef struct err_capture {
    uint8_t head[ERR_HEAD];
    uint8_t tail[ERR_TAIL]; /* a ring */
    size_t head_len, tail_pos, tail_len;
    uint64_t total;
} err_capture;

static int capture_add(capture *c, const uint8_t *p, size_t n)
{
    if (c->len + n > c->limit) {
        n = c->limit - c->len;
        c->over = 1;
    }
    if (!n)
        return 0;
    uint8_t *d = realloc(c->data, c->len + n);
    if (!d)
        return -1;
    memcpy(d + c->len, p, n);
    c->data = d;
    c->len += n;
    return 0;
}

static void err_add(err_capture *e, const uint8_t *p, size_t n)
{
    e->total += n;
    size_t h = ERR_HEAD - e->head_len < n ? ERR_HEAD - e->head_len : n;
    memcpy(e->head + e->head_len, p, h);
    e->head_len += h;
    for (size_t i = h; i < n; i++) {
        e->tail[e->tail_pos] = p[i];
        e->tail_pos = (e->tail_pos + 1) % ERR_TAIL;
        if (e->tail_len < ERR_TAIL)
            e->tail_len++;
    }
}

/* head, a marker if bytes were dropped, tail; malloc'd into r. */
static int err_finish(const err_capture *e, sandbox_step_result *r)
{
    char marker[64] = "";
    uint64_t dropped = e->total - e->head_len - e->tail_len;
    if (dropped)
        snprintf(marker, sizeof marker, "\n[... %llu bytes ...]\n", (unsigned long long)dropped);
    size_t n = e->head_len + strlen(marker) + e->tail_len;
    r->err = malloc(n + 1);
    if (!r->err)
        return -1;
    uint8_t *p = r->err;
    memcpy(p, e->head, e->head_len);
    p += e->head_len;
    memcpy(p, marker, strlen(marker));
    p += strlen(marker);
    size_t start = (e->tail_pos + ERR_TAIL - e->tail_len) % ERR_TAIL;
    for (size_t i = 0; i < e->tail_len; i++)
        *p++ = e->tail[(start + i) % ERR_TAIL];
    r->err_len = n;
    return 0;
}

/* Reads what is there on fd (non-blocking), at most 1 MiB a call so that a
 * program that writes without end cannot hold init away from its clock: 1
 * at end of file, 0 otherwise, -1 out of memory. Bytes past a capture's
 * limit are dropped. */
static int drain(int fd, capture *c, err_capture *e)
{
    uint8_t buf[65536];
    for (int reads = 0; reads < 16; reads++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == 0)
            return 1;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        if (c && capture_add(c, buf, (size_t)n) != 0)
            return -1;
        if (e)
            err_add(e, buf, (size_t)n);
        if (c && c->over)
            return 0;
    }
    return 0;
}

/* ---- One step ------------------------------------------------------------------ */

/* Kills every process of the sandbox but init and reaps them all. */
static void kill_all(void)
{
    /* kill(-1) outside a PID namespace of our own would reach every process
     * this user may signal: never */
    if (getpid() != 1)
        abort();
    for (;;) {
        kill(-1, SIGKILL);
        pid_t p = waitpid(-1, NULL, 0);
        if (p < 0 && errno == ECHILD)
            return;
    }
}

static int memfd_with(const uint8_t *data, uint64_t len)
{
    int fd = memfd_create("stdin", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (uint64_t done = 0; done < len;) {
        ssize_t w = write(fd, data + done, (size_t)(len - done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (uint64_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Runs step s into r: 0, or -1 when init could not (errno). */
static int run_step(const sandbox_step *s, const struct sock_fprog *filter, int lifeline,
                    sandbox_step_result *r)
{
    int in_fd = -1, out[2] = {-1, -1}, err[2] = {-1, -1}, aux[2] = {-1, -1}, rep[2] = {-1, -1};
    int pidfd = -1, rc = -1;
    capture out_cap = {.limit = s->limits.output_bytes}, aux_cap = {.limit = s->limits.output_bytes};
    err_capture *err_cap = calloc(1, sizeof *err_cap);
    int want_aux = (s->flags & SANDBOX_STEP_RESULT_FD) != 0;

    if (!err_cap || (in_fd = memfd_with(s->stdin_data, s->stdin_len)) < 0 ||
        pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        (want_aux && pipe2(aux, O_CLOEXEC) != 0) || pipe2(rep, O_CLOEXEC) != 0)
        goto done;

    uint64_t t0 = now_us();
    pid_t pid = fork();
    if (pid < 0)
        goto done;
    if (pid == 0)
        exec_program(s, filter, in_fd, out[1], err[1], aux[1], rep[1]);
    close_fd(&in_fd);
    close_fd(&out[1]);
    close_fd(&err[1]);
    close_fd(&aux[1]);
    close_fd(&rep[1]);
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        kill_all();
        goto done;
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    if (aux[0] >= 0)
        fcntl(aux[0], F_SETFL, O_NONBLOCK);

    uint64_t deadline = t0 + s->limits.wall_ms * 1000u;
    uint32_t outcome = SANDBOX_EXITED;
    int limit_hit = 0, exited = 0;
    while (!exited && !limit_hit) {
        uint64_t now = now_us();
        if (now >= deadline) {
            outcome = SANDBOX_WALL_LIMIT;
            limit_hit = 1;
            break;
        }
        struct pollfd p[5] = {
            {.fd = pidfd, .events = POLLIN},     {.fd = lifeline, .events = POLLIN},
            {.fd = out[0], .events = POLLIN},    {.fd = err[0], .events = POLLIN},
            {.fd = aux[0], .events = POLLIN},
        };
        int wait_ms = (int)((deadline - now + 999) / 1000);
        if (poll(p, 5, wait_ms) < 0 && errno != EINTR)
            goto done;
        if (p[1].revents)
            _exit(1); /* the helper is gone: ending init ends the sandbox */
        /* a pipe at end of file stays readable: stop polling it */
        if (p[2].revents && drain(out[0], &out_cap, NULL) != 0)
            close_fd(&out[0]);
        if (p[3].revents && drain(err[0], NULL, err_cap) != 0)
            close_fd(&err[0]);
        if (aux[0] >= 0 && p[4].revents && drain(aux[0], &aux_cap, NULL) != 0)
            close_fd(&aux[0]);
        if (out_cap.over || aux_cap.over) {
            outcome = SANDBOX_OUTPUT_LIMIT;
            limit_hit = 1;
        }
        if (p[0].revents)
            exited = 1;
    }
    if (limit_hit)
        kill(pid, SIGKILL);

    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    r->wall_us = now_us() - t0;
    /* The others go first: once no process holds the pipes, what is left in
     * them (written just before the end) reads to end of file. */
    kill_all();
    if (!limit_hit) {
        while (out[0] >= 0 && drain(out[0], &out_cap, NULL) == 0 && !out_cap.over) {
        }
        while (err[0] >= 0 && drain(err[0], NULL, err_cap) == 0) {
        }
        while (aux[0] >= 0 && drain(aux[0], &aux_cap, NULL) == 0 && !aux_cap.over) {
        }
        if (out_cap.over || aux_cap.over)
            outcome = SANDBOX_OUTPUT_LIMIT;
    }

    r->cpu_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
                (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
    r->max_rss_kb = (uint64_t)ru.ru_maxrss;
    int exec_errno = 0;
    ssize_t got = read(rep[0], &exec_errno, sizeof exec_errno);
    if (outcome == SANDBOX_EXITED) {
        if (got == (ssize_t)sizeof exec_errno) {
            outcome = SANDBOX_START_FAILED;
            r->code = exec_errno;
        } else if (WIFSIGNALED(status)) {
            int sig = WTERMSIG(status);
            int over_cpu = r->cpu_us >= s->limits.cpu_ms * 1000u;
            outcome = sig == SIGXCPU || (sig == SIGKILL && over_cpu) ? SANDBOX_CPU_LIMIT
                                                                     : SANDBOX_SIGNALED;
            r->code = sig;
        } else {
            r->code = WEXITSTATUS(status);
            /* RLIMIT_CPU counts whole seconds: the exact limit is checked here */
            if (r->cpu_us > s->limits.cpu_ms * 1000u)
                outcome = SANDBOX_CPU_LIMIT;
        }
    } else if (WIFSIGNALED(status)) {
        r->code = WTERMSIG(status);
    }
    r->outcome = outcome;
    r->out = out_cap.data;
    r->out_len = out_cap.len;
    r->aux = aux_cap.data;
    r->aux_len = aux_cap.len;
    out_cap.data = aux_cap.data = NULL;
    if (err_finish(err_cap, r) != 0)
        goto done;
    rc = 0;
done:;
    int e = errno;
    free(out_cap.data);
    free(aux_cap.data);
    free(err_cap);
    close_fd(&in_fd);
    close_fd(&pidfd);
    for (int i = 0; i < 2; i++) {
        close_fd(&out[i]);
        close_fd(&err[i]);
        close_fd(&aux[i]);
        close_fd(&rep[i]);
    }
    errno = e;
    return rc;
}

int sandbox_run_steps(const sandbox_request *req, const struct sock_fprog *filter, int lifeline,
                      sandbox_response *res)
{
    res->steps = calloc(req->n_steps ? req->n_steps : 1, sizeof *res->steps);
    if (!res->steps) {
        snprintf(res->error, sizeof res->error, "sandbox init: out of memory");
        return -1;
    }
    res->n_steps = req->n_steps;
    int skip = 0;
    for (uint32_t i = 0; i < req->n_steps; i++) {
        sandbox_step_result *r = &res->steps[i];
        if (skip) {
            r->outcome = SANDBOX_NOT_RUN;
            continue;
        }
        if (run_step(&req->steps[i], filter, lifeline, r) != 0) {
            snprintf(res->error, sizeof res->error, "sandbox init: step %u: %s", i,
                     strerror(errno));
            return -1;
        }
        if ((req->steps[i].flags & SANDBOX_STEP_REQUIRED) &&
            !(r->outcome == SANDBOX_EXITED && r->code == 0))
            skip = 1;
    }
    return 0;
}
