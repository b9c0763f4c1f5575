/* child_pool.c: many child programs at once (child_pool.h). */
#include "agent/child_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/abi.h"

extern char **environ;
static char *no_environ[] = {NULL}; /* environ after clearenv() is NULL */

#define TICK_MS 50          /* the longest poll: cancel and timeouts are seen within it */
#define GRACE_S 0.1         /* after its exit, how long a child's pipes may stay open */
#define READ_CHUNK 65536
#define READS_PER_TURN 4    /* per pipe and turn: a fast writer does not starve the rest */
#define OUT_FIRST_CAP 4096

/* One child running. */
typedef struct child {
    size_t index;           /* into specs[] and results[] */
    pid_t pid;              /* also its process group's id */
    int pidfd;              /* readable once it has exited; -1 without pidfd_open */
    int in_fd, out_fd, err_fd; /* our ends; -1 once closed */
    const char *input;
    size_t in_len, in_done;
    double started, deadline; /* deadline 0: none */
    int pid_ready;          /* its pidfd was readable this turn */
    int exited;             /* waitid saw it end (still a zombie: not reaped) */
    double exited_at;
    int how, status;         /* how it ended: waitid's si_code and si_status */
    tern_child_outcome killed; /* TIMED_OUT or CANCELLED once we killed it; 0 */
    char *out;
    size_t out_len, out_cap;
    int out_truncated;
    char *err;              /* TERN_CHILD_ERR_TAIL + 1 bytes */
    size_t err_len;
} child;

typedef struct pool {
    const tern_child_spec *specs;
    tern_child_result *results;
    size_t n, slots, active;
    child *kids;            /* kids[0..active) are running */
    struct pollfd *fds;     /* four per child: pidfd, stdin, stdout, stderr */
    char *buf;              /* READ_CHUNK bytes */
    tern_child_done_fn on_done;
    void *user;
    int sigpipe_was_pending; /* the caller's, before we blocked it */
} pool;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* fd moved to 3 or above: with 0-2 closed in our process a pipe could land
 * there, and the child's dup2s onto 0-2 would clobber one another. */
static int above_stdio(int fd)
{
    if (fd >= 3)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* A close-on-exec pipe, both ends above stdio; 0, or -1 with errno. */
static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) != 0) {
        p[0] = p[1] = -1;
        return -1;
    }
    p[0] = above_stdio(p[0]);
    p[1] = above_stdio(p[1]);
    if (p[0] >= 0 && p[1] >= 0)
        return 0;
    int e = errno;
    close_fd(&p[0]);
    close_fd(&p[1]);
    errno = e;
    return -1;
}

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

static int same_name(const char *a, const char *b)
{
    size_t n = name_len(a);
    return n == name_len(b) && memcmp(a, b, n) == 0;
}

/* Our environment with `add` replacing same-named entries (the last of
 * repeated names in add wins); the strings are not copied. NULL: no memory. */
static char **child_env(const char *const *add)
{
    char **ours = environ ? environ : no_environ;
    size_t n_ours = 0, n_add = 0;
    while (ours[n_ours])
        n_ours++;
    while (add[n_add])
        n_add++;
    char **envp = malloc((n_ours + n_add + 1) * sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_ours; i++) {
        int replaced = 0;
        for (size_t j = 0; j < n_add && !replaced; j++)
            replaced = same_name(ours[i], add[j]);
        if (!replaced)
            envp[k++] = ours[i];
    }
    for (size_t j = 0; j < n_add; j++) {
        int later = 0;
        for (size_t m = j + 1; m < n_add && !later; m++)
            later = same_name(add[j], add[m]);
        if (!later)
            envp[k++] = (char *)add[j]; /* posix_spawn's type; it only reads them */
    }
    envp[k] = NULL;
    return envp;
}

static int check_spec(const tern_child_spec *s, size_t i)
{
    if (!s->argv || !s->argv[0] || !s->argv[0][0])
        return tern_errorf(TERN_EINVAL, "child %zu: no program to run (argv[0])", i);
    for (const char *const *e = s->env; e && *e; e++)
        if (!strchr(*e, '=') || **e == '=')
            return tern_errorf(TERN_EINVAL, "child %zu (%s): environment entry \"%.80s\" is "
                               "not NAME=value", i, s->argv[0], *e);
    return TERN_OK;
}

/* The result of a child that never ran: SPAWN_FAILED or CANCELLED, with
 * empty output, handed to on_done. */
static int report_unstarted(pool *p, size_t i, tern_child_outcome outcome, int spawn_errno)
{
    char *out = calloc(1, 1), *err = calloc(1, 1);
    if (!out || !err) {
        free(out);
        free(err);
        return tern_errorf(TERN_ENOMEM, "child %zu (%s): out of memory", i,
                           p->specs[i].argv[0]);
    }
    tern_child_result *r = &p->results[i];
    *r = (tern_child_result){.outcome = outcome, .spawn_errno = spawn_errno, .out = out,
                             .err_tail = err};
    if (p->on_done)
        p->on_done(p->user, i, r);
    return TERN_OK;
}

/* Start spec i in c: TERN_OK with c->pid > 0, or with c->pid 0 and *spawn_errno
 * when posix_spawnp refused it (a result, not our failure); else a failure
 * of our own with a message, nothing left open. */
static int start(pool *p, child *c, size_t i, int *spawn_errno)
{
    const tern_child_spec *s = &p->specs[i];
    *c = (child){.index = i, .pidfd = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1,
                 .input = s->input, .in_len = s->input ? strlen(s->input) : 0};
    *spawn_errno = 0;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    int rc = TERN_OK, e = 0, have_fa = 0, have_at = 0;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    char **envp = s->env ? child_env(s->env) : environ ? environ : no_environ;
    c->err = malloc(TERN_CHILD_ERR_TAIL + 1);
    if (!envp || !c->err) {
        rc = tern_errorf(TERN_ENOMEM, "child %zu (%s): out of memory", i, s->argv[0]);
        goto done;
    }
    if ((s->input && make_pipe(in) != 0) || make_pipe(out) != 0 || make_pipe(err) != 0 ||
        (in[1] >= 0 && set_nonblocking(in[1]) != 0) || set_nonblocking(out[0]) != 0 ||
        set_nonblocking(err[0]) != 0) {
        rc = tern_errorf(TERN_EIO, "child %zu (%s): its pipes: %s", i, s->argv[0],
                         strerror(errno));
        goto done;
    }
    if ((e = posix_spawn_file_actions_init(&fa)) == 0)
        have_fa = 1;
    if (e == 0 && (e = posix_spawnattr_init(&at)) == 0)
        have_at = 1;
    if (e == 0)
        e = in[0] >= 0 ? posix_spawn_file_actions_adddup2(&fa, in[0], 0)
                       : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (e == 0)
        e = posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (e == 0)
        e = posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    /* our other files (the run's, other children's pipes) are not its: a
     * sibling holding another's pipe would keep it from EOF */
    if (e == 0)
        e = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (e == 0 && s->cwd)
        e = posix_spawn_file_actions_addchdir_np(&fa, s->cwd);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    /* it starts clean of our blocked (SIGPIPE here) and ignored signals; its
     * own process group, killed whole at its end */
    if (e == 0)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (e == 0)
        e = posix_spawnattr_setsigdefault(&at, &all);
    if (e == 0)
        e = posix_spawnattr_setpgroup(&at, 0);
    if (e == 0)
        e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                              POSIX_SPAWN_SETPGROUP);
    if (e != 0) {
        rc = tern_errorf(e == ENOMEM ? TERN_ENOMEM : TERN_ERR, "child %zu (%s): preparing its "
                         "start: %s", i, s->argv[0], strerror(e));
        goto done;
    }
    c->started = now_s();
    e = posix_spawnp(&c->pid, s->argv[0], &fa, &at, (char *const *)s->argv, envp);
    if (e != 0) {
        c->pid = 0;
        *spawn_errno = e;
        goto done;
    }
    /* without pidfd_open (Linux < 5.3) each turn asks waitid instead */
    c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0); /* close-on-exec by nature */
    c->in_fd = in[1], in[1] = -1;
    c->out_fd = out[0], out[0] = -1;
    c->err_fd = err[0], err[0] = -1;
    if (c->in_fd >= 0 && c->in_len == 0)
        close_fd(&c->in_fd); /* "" : at EOF at once */
    if (s->timeout_s > 0)
        c->deadline = c->started + s->timeout_s;
done:
    for (int k = 0; k < 2; k++) {
        close_fd(&in[k]);
        close_fd(&out[k]);
        close_fd(&err[k]);
    }
    if (have_fa)
        posix_spawn_file_actions_destroy(&fa);
    if (have_at)
        posix_spawnattr_destroy(&at);
    if (s->env)
        free(envp);
    if (c->pid <= 0) {
        free(c->err);
        c->err = NULL;
    }
    return rc;
}

static int keep_out(child *c, const char *data, size_t k)
{
    size_t take = TERN_CHILD_OUT_MAX - c->out_len;
    if (k > take)
        c->out_truncated = 1;
    else
        take = k;
    if (take == 0)
        return TERN_OK;
    if (c->out_len + take + 1 > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : OUT_FIRST_CAP;
        while (cap < c->out_len + take + 1)
            cap *= 2;
        if (cap > (size_t)TERN_CHILD_OUT_MAX + 1)
            cap = (size_t)TERN_CHILD_OUT_MAX + 1;
        char *grown = realloc(c->out, cap);
        if (!grown)
            return tern_errorf(TERN_ENOMEM, "child %zu: out of memory for its output", c->index);
        c->out = grown;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, take);
    c->out_len += take;
    return TERN_OK;
}

/* The last TERN_CHILD_ERR_TAIL bytes: the older ones slide out. */
static void keep_err(child *c, const char *data, size_t k)
{
    if (k >= TERN_CHILD_ERR_TAIL) {
        memcpy(c->err, data + k - TERN_CHILD_ERR_TAIL, TERN_CHILD_ERR_TAIL);
        c->err_len = TERN_CHILD_ERR_TAIL;
        return;
    }
    if (c->err_len + k > TERN_CHILD_ERR_TAIL) {
        size_t drop = c->err_len + k - TERN_CHILD_ERR_TAIL;
        memmove(c->err, c->err + drop, c->err_len - drop);
        c->err_len -= drop;
    }
    memcpy(c->err + c->err_len, data, k);
    c->err_len += k;
}

/* What *fd holds now, a bounded amount; closed at EOF. */
static int read_pipe(pool *p, child *c, int *fd)
{
    for (int turn = 0; turn < READS_PER_TURN && *fd >= 0; turn++) {
        ssize_t k = read(*fd, p->buf, READ_CHUNK);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (k <= 0) {
            close_fd(fd); /* EOF; a read error is no better than one */
            break;
        }
        if (fd == &c->err_fd)
            keep_err(c, p->buf, (size_t)k);
        else if (keep_out(c, p->buf, (size_t)k) != TERN_OK)
            return TERN_ENOMEM;
    }
    return TERN_OK;
}

/* Our write's SIGPIPE, left pending on this thread (blocked), taken back so
 * that unblocking it at the end does not kill us. The caller's own pending
 * one, if any, is left alone (ours merged into it). */
static void take_back_sigpipe(const pool *p)
{
    if (p->sigpipe_was_pending)
        return;
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
    }
}

/* As much of its input as its pipe takes now; stdin closed after the last
 * byte, or once it closed its end (the rest is not for it). */
static void write_input(pool *p, child *c)
{
    while (c->in_done < c->in_len) {
        ssize_t k = write(c->in_fd, c->input + c->in_done, c->in_len - c->in_done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k < 0) {
            if (errno == EPIPE)
                take_back_sigpipe(p);
            break;
        }
        c->in_done += (size_t)k;
    }
    close_fd(&c->in_fd);
}

/* Whether c has ended, without reaping it: a zombie keeps its process
 * group's id from reuse until we have killed the group. */
static int check_exit(child *c, double now)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r;
    while ((r = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT)) < 0 &&
           errno == EINTR) {
    }
    if (r < 0)
        return tern_errorf(TERN_ERR, "child %zu: waitid: %s (was it reaped elsewhere? "
                           "SIGCHLD must not be ignored)", c->index, strerror(errno));
    if (si.si_pid != c->pid)
        return TERN_OK;
    c->exited = 1;
    c->exited_at = now;
    c->how = si.si_code;
    c->status = si.si_status;
    close_fd(&c->pidfd);
    close_fd(&c->in_fd); /* it will not read the rest */
    return TERN_OK;
}

static void kill_group(const child *c)
{
    if (kill(-c->pid, SIGKILL) != 0)
        kill(c->pid, SIGKILL);
}

/* Its group killed, it reaped, its files closed, its buffers freed. */
static void end_child(child *c)
{
    kill_group(c);
    close_fd(&c->pidfd);
    close_fd(&c->in_fd);
    close_fd(&c->out_fd);
    close_fd(&c->err_fd);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
    }
    free(c->out);
    free(c->err);
    c->out = c->err = NULL;
}

/* kids[k] has exited and its pipes are drained (or their grace is over):
 * its result, handed to on_done; it leaves the running ones either way. */
static int finish(pool *p, size_t k)
{
    child *c = &p->kids[k];
    int rc = TERN_OK;
    if (!c->out && !(c->out = malloc(1)))
        rc = tern_errorf(TERN_ENOMEM, "child %zu: out of memory", c->index);
    tern_child_result r = {0};
    if (rc == TERN_OK) {
        r.out = c->out, r.out_len = c->out_len, r.out_truncated = c->out_truncated;
        r.out[r.out_len] = '\0';
        r.err_tail = c->err, r.err_len = c->err_len;
        r.err_tail[r.err_len] = '\0';
        r.seconds = c->exited_at - c->started;
        c->out = c->err = NULL; /* the result's now */
        if (c->how == CLD_EXITED) {
            r.outcome = TERN_CHILD_EXITED;
            r.exit_code = c->status;
        } else {
            r.signal = c->status;
            r.outcome = c->killed && r.signal == SIGKILL ? c->killed : TERN_CHILD_SIGNALED;
        }
    }
    size_t i = c->index;
    /* what it left in the background goes too */
    end_child(c);
    p->kids[k] = p->kids[--p->active];
    if (rc != TERN_OK)
        return rc;
    p->results[i] = r;
    if (p->on_done)
        p->on_done(p->user, i, &p->results[i]);
    return TERN_OK;
}

/* Kill what runs and report the rest, once the caller cancelled. */
static int cancel_all(pool *p, size_t *next)
{
    for (size_t k = 0; k < p->active; k++) {
        child *c = &p->kids[k];
        kill_group(c); /* an exited one's leftovers too: its pipes close sooner */
        if (!c->exited && !c->killed)
            c->killed = TERN_CHILD_CANCELLED;
    }
    for (; *next < p->n; (*next)++) {
        int rc = report_unstarted(p, *next, TERN_CHILD_CANCELLED, 0);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

/* The next children into the free places, in index order. */
static int start_more(pool *p, size_t *next)
{
    while (*next < p->n && p->active < p->slots) {
        size_t i = (*next)++;
        int spawn_errno;
        int rc = start(p, &p->kids[p->active], i, &spawn_errno);
        if (rc == TERN_OK && p->kids[p->active].pid > 0)
            p->active++;
        else if (rc == TERN_OK)
            rc = report_unstarted(p, i, TERN_CHILD_SPAWN_FAILED, spawn_errno);
        if (rc != TERN_OK)
            return rc;
    }
    return TERN_OK;
}

/* Milliseconds from now to t, within [0, cap]. */
static int ms_until(double t, double now, int cap)
{
    double ms = (t - now) * 1000.0 + 1.0;
    return ms <= 0 ? 0 : ms >= cap ? cap : (int)ms;
}

/* One poll() over every running child's pidfd and pipes, and what it saw. */
static int turn(pool *p)
{
    double now = now_s();
    int wait_ms = TICK_MS;
    for (size_t k = 0; k < p->active; k++) {
        child *c = &p->kids[k];
        struct pollfd *f = &p->fds[4 * k];
        f[0] = (struct pollfd){.fd = c->exited ? -1 : c->pidfd, .events = POLLIN};
        f[1] = (struct pollfd){.fd = c->in_fd, .events = POLLOUT};
        f[2] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
        f[3] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
        if (c->exited)
            wait_ms = ms_until(c->exited_at + GRACE_S, now, wait_ms);
        else if (c->deadline > 0 && !c->killed)
            wait_ms = ms_until(c->deadline, now, wait_ms);
    }
    if (poll(p->fds, 4 * p->active, wait_ms) < 0 && errno != EINTR)
        return tern_errorf(TERN_EIO, "child pool: poll: %s", strerror(errno));
    for (size_t k = 0; k < p->active; k++) {
        child *c = &p->kids[k];
        const struct pollfd *f = &p->fds[4 * k];
        int rc = TERN_OK;
        c->pid_ready = f[0].revents != 0;
        if (f[1].revents && c->in_fd >= 0)
            write_input(p, c); /* POLLERR: its write fails with EPIPE */
        if (f[2].revents && c->out_fd >= 0)
            rc = read_pipe(p, c, &c->out_fd);
        if (rc == TERN_OK && f[3].revents && c->err_fd >= 0)
            rc = read_pipe(p, c, &c->err_fd);
        if (rc != TERN_OK)
            return rc;
    }
    now = now_s();
    for (size_t k = 0; k < p->active;) {
        child *c = &p->kids[k];
        int rc = TERN_OK;
        if (!c->exited && (c->pidfd < 0 || c->pid_ready))
            rc = check_exit(c, now);
        if (rc != TERN_OK)
            return rc;
        if (!c->exited && !c->killed && c->deadline > 0 && now >= c->deadline) {
            kill_group(c);
            c->killed = TERN_CHILD_TIMED_OUT;
        }
        /* a grandchild may hold its pipes open long after it: not ours to wait for */
        if (c->exited && ((c->out_fd < 0 && c->err_fd < 0) || now >= c->exited_at + GRACE_S)) {
            rc = finish(p, k);
            if (rc != TERN_OK)
                return rc;
            continue; /* kids[k] is another now */
        }
        k++;
    }
    return TERN_OK;
}

static int run_all(pool *p, const _Atomic int *cancel)
{
    size_t next = 0;
    int cancelled = 0, rc = TERN_OK;
    while (rc == TERN_OK && (next < p->n || p->active > 0)) {
        if (!cancelled && cancel && atomic_load(cancel)) {
            cancelled = 1;
            rc = cancel_all(p, &next);
        }
        if (rc == TERN_OK && !cancelled)
            rc = start_more(p, &next);
        if (rc == TERN_OK && p->active > 0)
            rc = turn(p);
    }
    return rc;
}

int tern_child_pool_run(const tern_child_spec *specs, size_t n, uint32_t concurrency,
                        tern_child_result *results, tern_child_done_fn on_done, void *user,
                        const _Atomic int *cancel)
{
    for (size_t i = 0; results && i < n; i++)
        results[i] = (tern_child_result){0};
    if (n == 0)
        return TERN_OK;
    if (!specs || !results || concurrency == 0)
        return tern_errorf(TERN_EINVAL, "child pool: %s", concurrency == 0 ? "a concurrency of 0"
                           : "no specs or no results");
    for (size_t i = 0; i < n; i++) {
        int rc = check_spec(&specs[i], i);
        if (rc != TERN_OK)
            return rc;
    }
    pool p = {.specs = specs, .results = results, .n = n, .on_done = on_done, .user = user};
    p.slots = concurrency < n ? concurrency : n;
    p.kids = calloc(p.slots, sizeof *p.kids);
    p.fds = calloc(4 * p.slots, sizeof *p.fds);
    p.buf = malloc(READ_CHUNK);
    if (!p.kids || !p.fds || !p.buf) {
        free(p.kids);
        free(p.fds);
        free(p.buf);
        return tern_errorf(TERN_ENOMEM, "child pool: out of memory");
    }
    /* a child closing its stdin before taking all its input must not kill
     * us: SIGPIPE blocked on this thread while we write (pipes have no
     * MSG_NOSIGNAL), the one a write raises taken back; the process's
     * disposition is left as the caller set it */
    sigset_t pipe_set, old_mask, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
    p.sigpipe_was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;

    int rc = run_all(&p, cancel);
    while (p.active > 0) /* after our failure: nothing left behind */
        end_child(&p.kids[--p.active]);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    free(p.kids);
    free(p.fds);
    free(p.buf);
    return rc;
}

void tern_child_result_free(tern_child_result *r)
{
    if (!r)
        return;
    free(r->out);
    free(r->err_tail);
    *r = (tern_child_result){0};
}
