/* worker.c: a reward plugin in a supervised worker process (see worker.h).
 *
 * Wire format (one machine, one build: native byte order, fixed structs):
 *   worker -> parent, once: ready_head + msg          (create() returned)
 *   parent -> worker:       req_head, then per item item_head + task JSON +
 *                           origin + response bytes
 *   worker -> parent:       per item, in order: reply_head, n_comp x
 *                           (comp_head + name), reason
 * The worker reads a whole request before it answers, so neither side can
 * block the other with a full socket buffer. */
#include "reward/worker.h"

#include <errno.h>
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

#include "tern/support/wait_status.h"
#include "base/clock.h"
#include "base/errmsg.h"
#include "experience/experience.h"
#include "host/host_table.h"
#include "data/task.h"

#define READY_MAGIC 0x31445254u /* "TRD1" */
#define REQ_MAGIC 0x31515254u   /* "TRQ1" */
#define REPLY_MAGIC 0x31505254u /* "TRP1" */
#define NAME_MAX_BYTES TERN_EXPERIENCE_NAME_MAX /* a component name, as kept */
#define MAX_NAMES 64            /* distinct component names a worker may give */
#define NO_ORIGIN UINT32_MAX

typedef struct ready_head {
    uint32_t magic;
    int32_t status;
    uint32_t msg_len;
} ready_head;

typedef struct req_head {
    uint32_t magic;
    uint32_t n;
} req_head;

typedef struct item_head {
    uint32_t task_len;
    uint32_t origin_len; /* NO_ORIGIN: the task has none */
    uint64_t response_len;
    uint32_t response_tokens;
    uint32_t pad;
} item_head;

typedef struct reply_head {
    uint32_t magic;
    int32_t status;
    double reward;
    uint32_t n_comp;
    uint32_t reason_len;
    uint32_t failure; /* the result's tern_reward_failure (ABI 1.10) */
    uint32_t pad;
} reply_head;

typedef struct comp_head {
    uint32_t name_len;
    uint32_t pad;
    double value;
} comp_head;

struct tern_reward_worker {
    const tern_reward_ops *ops;
    tern_ctx *ctx;
    char label[64];
    pid_t pid; /* 0: down */
    int fd;    /* the parent's end of the socket; -1: down */
    char *names[MAX_NAMES];
    size_t n_names;
};

tern_reward_failure tern_reward_failure_of(uint32_t value)
{
    return value <= TERN_REWARD_START ? (tern_reward_failure)value : TERN_REWARD_ERROR;
}

const char *tern_reward_failure_name(tern_reward_failure f)
{
    switch (f) {
    case TERN_REWARD_OK: return "ok";
    case TERN_REWARD_ERROR: return "error";
    case TERN_REWARD_NONFINITE: return "nonfinite";
    case TERN_REWARD_CRASH: return "crash";
    case TERN_REWARD_TIMEOUT: return "timeout";
    case TERN_REWARD_GARBAGE: return "garbage";
    case TERN_REWARD_START: return "start";
    }
    return "unknown";
}

static uint64_t mono_ms(void)
{
    return tern_mono_ns() / 1000000u;
}

/* ---- byte transfer ------------------------------------------------------ */

enum { IO_OK = 0, IO_CLOSED = -1, IO_TIMEOUT = -2 };

/* Wait until fd is ready for `events` or the deadline (ms on mono_ms; 0 =
 * none) passes. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        int ms = -1;
        if (deadline) {
            uint64_t now = mono_ms();
            if (now >= deadline)
                return IO_TIMEOUT;
            ms = deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
        }
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, ms);
        if (r > 0)
            return IO_OK;
        if (r == 0)
            return IO_TIMEOUT;
        if (errno != EINTR)
            return IO_CLOSED;
    }
}

/* Send (or receive) all n bytes by the deadline: IO_OK, IO_CLOSED or
 * IO_TIMEOUT. */
static int move_all(int fd, char *c, size_t n, uint64_t deadline, int sending)
{
    while (n) {
        int w = wait_fd(fd, sending ? POLLOUT : POLLIN, deadline);
        if (w != IO_OK)
            return w;
        ssize_t k = sending ? send(fd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, c, n, MSG_DONTWAIT);
        if (k == 0 && !sending)
            return IO_CLOSED;
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return IO_CLOSED;
        }
        c += k;
        n -= (size_t)k;
    }
    return IO_OK;
}

static int send_all(int fd, const void *p, size_t n, uint64_t deadline)
{
    return move_all(fd, (char *)p, n, deadline, 1);
}

static int recv_all(int fd, void *p, size_t n, uint64_t deadline)
{
    return move_all(fd, p, n, deadline, 0);
}

/* A growing byte buffer for a request. */
typedef struct bytes {
    char *p;
    size_t len, cap;
} bytes;

static int put(bytes *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return TERN_ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    return TERN_OK;
}

/* ---- the worker process ------------------------------------------------- */

/* Read one whole request: tasks parsed, responses copied. Returns the count
 * (>= 0), or -1 when the parent closed the socket or sent garbage. */
static long read_request(int fd, tern_task ***tasks, char ***texts, tern_reward_item **items)
{
    req_head h;
    if (recv_all(fd, &h, sizeof h, 0) != IO_OK || h.magic != REQ_MAGIC)
        return -1;
    size_t n = h.n;
    *tasks = calloc(n ? n : 1, sizeof **tasks);
    *texts = calloc(2 * (n ? n : 1), sizeof **texts); /* origin, response per item */
    *items = calloc(n ? n : 1, sizeof **items);
    if (!*tasks || !*texts || !*items)
        return -1;
    for (size_t i = 0; i < n; i++) {
        item_head ih;
        if (recv_all(fd, &ih, sizeof ih, 0) != IO_OK)
            return -1;
        char *task = malloc((size_t)ih.task_len + 1);
        char *origin = ih.origin_len == NO_ORIGIN ? NULL : malloc((size_t)ih.origin_len + 1);
        char *resp = malloc(ih.response_len + 1);
        (*texts)[2 * i] = origin;
        (*texts)[2 * i + 1] = resp;
        if (!task || !resp || (ih.origin_len != NO_ORIGIN && !origin) ||
            recv_all(fd, task, ih.task_len, 0) != IO_OK ||
            (origin && recv_all(fd, origin, ih.origin_len, 0) != IO_OK) ||
            recv_all(fd, resp, ih.response_len, 0) != IO_OK) {
            free(task);
            return -1;
        }
        task[ih.task_len] = '\0';
        resp[ih.response_len] = '\0';
        if (origin)
            origin[ih.origin_len] = '\0';
        /* a task the parent parsed parses here too; NULL only out of memory */
        tern_task_parse(task, ih.task_len, "reward worker", &(*tasks)[i]);
        free(task);
        if ((*tasks)[i])
            tern_task_set_origin((*tasks)[i], origin);
        (*items)[i] = (tern_reward_item){.size = sizeof(tern_reward_item), .task = (*tasks)[i],
                                         .response = resp, .response_len = ih.response_len,
                                         .response_tokens = ih.response_tokens};
    }
    return (long)n;
}

/* Send one verdict, keeping only what the parent accepts. */
static int send_reply(int fd, int status, const tern_reward_result *r, const char *error)
{
    bytes b = {0};
    reply_head h = {.magic = REPLY_MAGIC, .status = status, .reward = r->reward,
                    .failure = status == TERN_OK ? r->failure : 0};
    uint32_t n_comp = 0;
    for (uint32_t c = 0; status == TERN_OK && c < r->n_components &&
                         c < TERN_REWARD_MAX_COMPONENTS;
         c++)
        n_comp += r->components[c].name != NULL;
    const char *reason = status == TERN_OK ? r->reason : error;
    h.n_comp = n_comp;
    h.reason_len = (uint32_t)strnlen(reason, TERN_REWARD_REASON_MAX - 1);
    int rc = put(&b, &h, sizeof h);
    for (uint32_t c = 0; rc == TERN_OK && n_comp && c < r->n_components &&
                         c < TERN_REWARD_MAX_COMPONENTS;
         c++) {
        const char *name = r->components[c].name;
        if (!name)
            continue;
        comp_head ch = {.name_len = (uint32_t)strnlen(name, NAME_MAX_BYTES + 1),
                        .value = r->components[c].value};
        rc = put(&b, &ch, sizeof ch);
        if (rc == TERN_OK)
            rc = put(&b, name, ch.name_len);
    }
    if (rc == TERN_OK)
        rc = put(&b, reason, h.reason_len);
    if (rc == TERN_OK)
        rc = send_all(fd, b.p, b.len, 0) == IO_OK ? TERN_OK : TERN_EIO;
    free(b.p);
    return rc;
}

static void send_ready(int fd, int status, const char *msg)
{
    ready_head h = {.magic = READY_MAGIC, .status = status, .msg_len = (uint32_t)strlen(msg)};
    if (send_all(fd, &h, sizeof h, 0) == IO_OK)
        send_all(fd, msg, h.msg_len, 0);
}

static void free_request(long n, tern_task **tasks, char **texts, tern_reward_item *items)
{
    for (long i = 0; tasks && i < n; i++)
        tern_task_free(tasks[i]);
    for (long i = 0; texts && i < 2 * n; i++)
        free(texts[i]);
    free(tasks), free(texts), free(items);
}

__attribute__((noreturn)) static void worker_main(int fd, const tern_reward_ops *ops,
                                                  tern_ctx *ctx)
{
    tern_host_enter_worker();
    /* its own process group: ^C reaches the parent, which winds the worker
     * down; the whole group is killed on a timeout */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    /* not the run's stop handlers, inherited at fork: a TERM or HUP sent to
     * the worker itself ends it (the parent reports the worker's death) */
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    if (fd != 3) {
        dup2(fd, 3);
        fd = 3;
    }
    close_range(4, ~0u, 0); /* the run's files stay the parent's alone */

    void *state = NULL;
    tern_error_clear();
    int rc = ops->create(ctx, &state);
    send_ready(fd, rc, rc == TERN_OK ? "" : tern_error_message());
    if (rc != TERN_OK)
        _exit(3);
    for (;;) {
        tern_task **tasks = NULL;
        char **texts = NULL;
        tern_reward_item *items = NULL;
        long n = read_request(fd, &tasks, &texts, &items);
        if (n < 0) {
            free_request(0, tasks, texts, items);
            break;
        }
        for (long i = 0; i < n; i++) {
            tern_reward_result r;
            memset(&r, 0, sizeof r);
            r.size = sizeof r;
            tern_error_clear();
            int st = items[i].task ? ops->score(state, &items[i], &r, 1) : TERN_ENOMEM;
            const char *msg = tern_error_message();
            if (send_reply(fd, st, &r, *msg ? msg : "it gave no reason") != TERN_OK)
                _exit(4);
        }
        free_request(n, tasks, texts, items);
    }
    if (ops->destroy)
        ops->destroy(state);
    _exit(0);
}

/* ---- the parent's side -------------------------------------------------- */

/* Kill the worker's process group and reap it; *status gets its wait status. */
static void kill_worker(tern_reward_worker *w, int *status)
{
    int st = 0;
    if (w->pid > 0) {
        kill(-w->pid, SIGKILL);
        kill(w->pid, SIGKILL);
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (w->fd >= 0)
        close(w->fd);
    w->pid = 0;
    w->fd = -1;
    if (status)
        *status = st;
}

static int spawn(tern_reward_worker *w)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return tern_errorf(TERN_EIO, "%s: cannot start the reward worker: socketpair: %s",
                           w->label, strerror(errno));
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]), close(sv[1]);
        return tern_errorf(TERN_EIO, "%s: cannot start the reward worker: fork: %s", w->label,
                           strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        worker_main(sv[1], w->ops, w->ctx);
    }
    close(sv[1]);
    w->pid = pid;
    w->fd = sv[0];
    ready_head h;
    int io = recv_all(w->fd, &h, sizeof h, 0);
    if (io == IO_OK && h.magic == READY_MAGIC && h.status == TERN_OK && h.msg_len == 0)
        return TERN_OK;
    char msg[512] = "";
    if (io == IO_OK && h.magic == READY_MAGIC) {
        size_t k = h.msg_len < sizeof msg - 1 ? h.msg_len : sizeof msg - 1;
        if (recv_all(w->fd, msg, k, mono_ms() + 1000) != IO_OK)
            k = 0;
        msg[k] = '\0';
    }
    int st = 0;
    kill_worker(w, &st);
    if (*msg)
        return tern_errorf(TERN_ECONFIG, "%s: the plugin did not start in its worker process: "
                           "%s", w->label, msg);
    char death[64];
    tern_wait_status_text(st, death, sizeof death);
    return tern_errorf(TERN_EIO, "%s: the reward worker %s while starting", w->label,
                       death);
}

int tern_reward_worker_start(tern_reward_worker **out, const tern_reward_ops *ops, tern_ctx *ctx,
                             const char *label)
{
    *out = NULL;
    tern_reward_worker *w = calloc(1, sizeof *w);
    if (!w)
        return tern_errorf(TERN_ENOMEM, "%s: out of memory", label);
    w->ops = ops;
    w->ctx = ctx;
    w->fd = -1;
    snprintf(w->label, sizeof w->label, "%s", label);
    int rc = spawn(w);
    if (rc != TERN_OK) {
        free(w);
        return rc;
    }
    *out = w;
    return TERN_OK;
}

long tern_reward_worker_pid(const tern_reward_worker *w) { return w ? (long)w->pid : 0; }

int tern_reward_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > NAME_MAX_BYTES)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

/* The worker's copy of `name`, or NULL when it is not a valid name or the
 * table is full. */
static const char *intern(tern_reward_worker *w, const char *name, size_t len)
{
    if (!tern_reward_name_ok(name, len))
        return NULL;
    for (size_t i = 0; i < w->n_names; i++)
        if (strlen(w->names[i]) == len && memcmp(w->names[i], name, len) == 0)
            return w->names[i];
    if (w->n_names == MAX_NAMES)
        return NULL;
    char *copy = strndup(name, len);
    if (copy)
        w->names[w->n_names++] = copy;
    return copy;
}

/* Read one verdict into *r. IO_OK with *status the plugin's; IO_CLOSED,
 * IO_TIMEOUT, or 1 for a malformed reply. */
static int read_reply(tern_reward_worker *w, tern_reward_result *r, int *status,
                      uint64_t deadline)
{
    reply_head h;
    int io = recv_all(w->fd, &h, sizeof h, deadline);
    if (io != IO_OK)
        return io;
    if (h.magic != REPLY_MAGIC || h.n_comp > TERN_REWARD_MAX_COMPONENTS ||
        h.reason_len >= TERN_REWARD_REASON_MAX)
        return 1;
    *status = h.status;
    r->reward = h.reward;
    r->failure = h.failure;
    r->n_components = 0;
    for (uint32_t c = 0; c < h.n_comp; c++) {
        comp_head ch;
        char name[NAME_MAX_BYTES + 1];
        if ((io = recv_all(w->fd, &ch, sizeof ch, deadline)) != IO_OK)
            return io;
        if (ch.name_len > NAME_MAX_BYTES + 1)
            return 1;
        if ((io = recv_all(w->fd, name, ch.name_len, deadline)) != IO_OK)
            return io;
        const char *kept = intern(w, name, ch.name_len);
        if (kept)
            r->components[r->n_components++] = (tern_reward_component){kept, ch.value};
    }
    if ((io = recv_all(w->fd, r->reason, h.reason_len, deadline)) != IO_OK)
        return io;
    r->reason[h.reason_len] = '\0';
    return IO_OK;
}

/* Send items[from..n) as one request. */
static int send_request(tern_reward_worker *w, const tern_reward_item *items, size_t from,
                        size_t n, uint64_t deadline)
{
    bytes b = {0};
    req_head rh = {.magic = REQ_MAGIC, .n = (uint32_t)(n - from)};
    int rc = put(&b, &rh, sizeof rh);
    for (size_t i = from; rc == TERN_OK && i < n; i++) {
        char *task = tern_task_json(items[i].task, ""); /* "" is the whole object */
        const char *origin = tern_task_origin(items[i].task);
        if (!task) {
            rc = TERN_ENOMEM;
            break;
        }
        item_head ih = {.task_len = (uint32_t)strlen(task),
                        .origin_len = origin ? (uint32_t)strlen(origin) : NO_ORIGIN,
                        .response_len = items[i].response_len,
                        .response_tokens = items[i].response_tokens};
        rc = put(&b, &ih, sizeof ih);
        if (rc == TERN_OK)
            rc = put(&b, task, ih.task_len);
        if (rc == TERN_OK && origin)
            rc = put(&b, origin, ih.origin_len);
        if (rc == TERN_OK)
            rc = put(&b, items[i].response, items[i].response_len);
        free(task);
    }
    if (rc == TERN_OK)
        rc = send_all(w->fd, b.p, b.len, deadline) == IO_OK ? TERN_OK : TERN_EIO;
    free(b.p);
    return rc;
}

/* Mark items[from..n) failed with `why`. */
static void fail_rest(tern_reward_result *res, tern_reward_failure *fail, size_t from, size_t n,
                      tern_reward_failure why, const char *reason)
{
    for (size_t i = from; i < n; i++) {
        fail[i] = why;
        snprintf(res[i].reason, sizeof res[i].reason, "%s", reason);
    }
}

int tern_reward_worker_score(tern_reward_worker *w, const tern_reward_item *items,
                             tern_reward_result *res, tern_reward_failure *fail, size_t n,
                             int64_t timeout_ms, uint64_t *restarts)
{
    for (size_t i = 0; i < n; i++)
        fail[i] = TERN_REWARD_OK;
    size_t next = 0;
    while (next < n) {
        /* a worker that died while idle (killed from outside) is replaced */
        int st = 0;
        if (w->pid > 0 && waitpid(w->pid, &st, WNOHANG) == w->pid) {
            w->pid = 0;
            kill_worker(w, NULL);
        }
        if (w->pid == 0) {
            int rc = spawn(w);
            if (rc != TERN_OK) {
                char why[TERN_REWARD_REASON_MAX];
                snprintf(why, sizeof why, "the reward worker did not restart: %s",
                         tern_error_message());
                fail_rest(res, fail, next, n, TERN_REWARD_START, why);
                return TERN_OK;
            }
            (*restarts)++;
        }
        uint64_t deadline = timeout_ms > 0 ? mono_ms() + (uint64_t)timeout_ms * (n - next) : 0;
        int rc = send_request(w, items, next, n, deadline);
        if (rc == TERN_ENOMEM)
            return tern_errorf(TERN_ENOMEM, "%s: out of memory sending responses to the reward "
                               "worker", w->label);
        size_t k = next;
        int io = rc == TERN_OK ? IO_OK : IO_CLOSED;
        for (; io == IO_OK && k < n; k++) {
            int status = TERN_OK;
            io = read_reply(w, &res[k], &status,
                            timeout_ms > 0 ? mono_ms() + (uint64_t)timeout_ms : 0);
            if (io == IO_OK && status != TERN_OK) {
                char msg[TERN_REWARD_REASON_MAX];
                snprintf(msg, sizeof msg, "%s", res[k].reason);
                snprintf(res[k].reason, sizeof res[k].reason, "the plugin failed: %.130s", msg);
                res[k].n_components = 0;
                fail[k] = TERN_REWARD_ERROR;
            } else if (io == IO_OK && res[k].failure != TERN_REWARD_OK) {
                fail[k] = tern_reward_failure_of(res[k].failure); /* the plugin's own word */
                res[k].n_components = 0;
            }
            if (io != IO_OK)
                break;
        }
        if (io == IO_OK) {
            next = n;
            break;
        }
        /* item k has no verdict: the worker is dead, late or out of step */
        int dead = 0;
        kill_worker(w, &dead);
        memset(&res[k], 0, sizeof res[k]);
        res[k].size = sizeof res[k];
        if (io == IO_TIMEOUT) {
            fail[k] = TERN_REWARD_TIMEOUT;
            snprintf(res[k].reason, sizeof res[k].reason,
                     "no verdict within %lld ms: the reward worker was killed",
                     (long long)timeout_ms);
        } else if (io == IO_CLOSED) {
            char death[64];
            tern_wait_status_text(dead, death, sizeof death);
            fail[k] = TERN_REWARD_CRASH;
            snprintf(res[k].reason, sizeof res[k].reason, "the reward worker %s", death);
        } else {
            fail[k] = TERN_REWARD_GARBAGE;
            snprintf(res[k].reason, sizeof res[k].reason,
                     "the reward worker sent a malformed reply");
        }
        tern_error_clear();
        next = k + 1;
    }
    return TERN_OK;
}

void tern_reward_worker_stop(tern_reward_worker *w)
{
    if (!w)
        return;
    if (w->pid > 0) {
        /* EOF tells the worker to destroy its instance and exit */
        shutdown(w->fd, SHUT_WR);
        int st = 0;
        uint64_t until = mono_ms() + 1000;
        pid_t r = 0;
        while ((r = waitpid(w->pid, &st, WNOHANG)) == 0 && mono_ms() < until) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (r == w->pid) {
            kill(-w->pid, SIGKILL); /* anything it left behind */
            w->pid = 0;
        }
    }
    kill_worker(w, NULL);
    for (size_t i = 0; i < w->n_names; i++)
        free(w->names[i]);
    free(w);
}
