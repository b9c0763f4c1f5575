/*
 * main.c: tern-sandbox, the helper the `code` reward starts for every run.
 *
 *   tern-sandbox [--parent PID] < request > response
 *   tern-sandbox --check
 *
 * It reads one request (wire.h) from standard input, creates the sandbox
 * and writes one response to standard output. The exit status is 0 when a
 * response was written, whatever the programs did (a sandbox that could not
 * be made is a response with `error` set); 2 for a usage error.
 *
 * The process tree of one run:
 *
 *   tern (the plugin) --posix_spawn--> tern-sandbox (this, outside)
 *        --clone(new user, PID, network, mount, IPC, UTS, cgroup namespaces)-->
 *            init (pid 1 inside: box.c, steps.c) --fork--> the programs
 *
 * This process stays outside to write the user namespace's uid and gid maps
 * (uid 0 inside is an unprivileged user outside: nobody when we run as
 * root, otherwise our own uid) and to watch init: when init outlives the
 * request's time, or when tern goes away (PR_SET_PDEATHSIG), init is killed,
 * and with pid 1 the kernel kills every process of the namespace.
 *
 * --check runs `true` in a sandbox and says whether that worked; the
 * plugin's settings check and docs/sandbox.md use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "box.h"
#include "filter.h"
#include "steps.h"
#include "wire.h"

#define NOBODY 65534
#define INIT_STACK (256 * 1024)
#define MAX_REQUEST (1u << 30)

typedef struct init_args {
    const sandbox_request *req;
    const struct sock_fprog *filter;
    int go;       /* read end: one byte once the maps are written */
    int lifeline; /* read end: end of file when this process is gone */
    int report;   /* write end: the encoded response */
    int parent_ends[3]; /* the ends this process keeps: init closes its copies */
} init_args;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- Inside: the sandbox's init ------------------------------------------------ */

static int init_main(void *arg)
{
    init_args *a = arg;
    sandbox_response res = {0};
    char go;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 0; i < 3; i++)
        close(a->parent_ends[i]);
    /* the helper's stdin and stdout are the plugin's memfds: not ours */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        close(null);
    }
    if (read(a->go, &go, 1) != 1)
        _exit(1); /* the helper died before the maps were written */
    close(a->go);

    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
        snprintf(res.error, sizeof res.error, "becoming uid 0 of the user namespace: %s",
                 strerror(errno));
    else if (sethostname("sandbox", 7) != 0)
        snprintf(res.error, sizeof res.error, "sethostname: %s", strerror(errno));
    else if (sandbox_box_enter(a->req, res.error, sizeof res.error) != 0)
        ; /* res.error says why */
    else
        sandbox_run_steps(a->req, a->filter, a->lifeline, &res);

    sandbox_buf out = {0};
    int rc = sandbox_response_encode(&res, &out) == 0 && write_all(a->report, out.data, out.len) == 0
                 ? 0
                 : 1;
    _exit(rc);
}

/* ---- Outside: this process ----------------------------------------------------- */

static int write_map(pid_t pid, const char *file, const char *text)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* What a failed clone() usually means, for the one message a user reads. */
static const char *clone_hint(int e)
{
    switch (e) {
    case EPERM:
        return " (user namespaces are not allowed here: kernel.unprivileged_userns_clone=0, "
               "an AppArmor or SELinux policy, or a container without them; docs/sandbox.md)";
    case ENOSPC:
        return " (user.max_user_namespaces or another namespace limit is reached)";
    case EINVAL:
        return " (this kernel lacks one of the namespaces; docs/sandbox.md)";
    }
    return "";
}

/* Reads fd to its end into *out, until deadline_ms: 0, -1 on timeout or
 * error. */
static int read_until(int fd, sandbox_buf *out, uint64_t deadline_ms)
{
    fcntl(fd, F_SETFL, O_NONBLOCK);
    uint8_t buf[65536];
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline_ms)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(deadline_ms - now));
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        for (;;) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n == 0)
                return 0;
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN)
                    break;
                return -1;
            }
            if (sandbox_buf_append(out, buf, (size_t)n) != 0)
                return -1;
        }
    }
}

/* Runs req in a fresh sandbox; the encoded response goes into *out. */
static void run(const sandbox_request *req, sandbox_buf *out)
{
    sandbox_response res = {0};
    struct sock_fprog filter;
    int go[2] = {-1, -1}, life[2] = {-1, -1}, rep[2] = {-1, -1};
    char *stack = NULL;
    pid_t pid = -1;

    if (sandbox_filter_build(&filter, res.error, sizeof res.error) != 0)
        goto done;
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(life, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 ||
        !(stack = malloc(INIT_STACK))) {
        snprintf(res.error, sizeof res.error, "tern-sandbox: %s", strerror(errno));
        goto done;
    }
    init_args args = {req, &filter, go[0], life[0], rep[1], {go[1], life[1], rep[0]}};
    pid = clone(init_main, stack + INIT_STACK,
                CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC |
                    CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD,
                &args);
    if (pid < 0) {
        int e = errno;
        snprintf(res.error, sizeof res.error, "cannot create the sandbox's namespaces: %s%s",
                 strerror(e), clone_hint(e));
        goto done;
    }
    close(go[0]);
    close(life[0]);
    close(rep[1]);
    go[0] = life[0] = rep[1] = -1;

    uid_t uid = geteuid();
    gid_t gid = getegid();
    char map[64];
    snprintf(map, sizeof map, "0 %u 1\n", uid == 0 ? NOBODY : (unsigned)uid);
    int ok = write_map(pid, "uid_map", map) == 0;
    snprintf(map, sizeof map, "0 %u 1\n", uid == 0 ? NOBODY : (unsigned)gid);
    ok = ok && write_map(pid, "setgroups", "deny") == 0 && write_map(pid, "gid_map", map) == 0;
    if (!ok) {
        snprintf(res.error, sizeof res.error, "writing the user namespace's id maps: %s",
                 strerror(errno));
        goto done;
    }
    if (write_all(go[1], "g", 1) != 0) {
        snprintf(res.error, sizeof res.error, "the sandbox's init died while starting");
        goto done;
    }

    uint64_t budget = sandbox_request_budget_ms(req);
    sandbox_buf got = {0};
    int rc = read_until(rep[0], &got, now_ms() + budget);
    if (rc != 0) {
        snprintf(res.error, sizeof res.error, "the sandbox's init did not answer within %llu ms",
                 (unsigned long long)budget);
        sandbox_buf_free(&got);
        goto done;
    }
    /* init's answer is passed on after a check that it is whole */
    sandbox_response check;
    char why[120];
    if (sandbox_response_decode(got.data, got.len, &check, why, sizeof why) != 0) {
        snprintf(res.error, sizeof res.error, "the sandbox's init answered badly: %s", why);
        sandbox_buf_free(&got);
        goto done;
    }
    sandbox_response_free(&check);
    sandbox_buf_free(out);
    *out = got;
    goto finish;

done:
    sandbox_buf_free(out);
    sandbox_response_encode(&res, out);
finish:
    if (pid > 0) {
        kill(pid, SIGKILL); /* init: and with it the whole PID namespace */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    int fds[] = {go[0], go[1], life[0], life[1], rep[0], rep[1]};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(stack);
    sandbox_filter_free(&filter);
}

static int read_request(sandbox_buf *in)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (in->len + (size_t)n > MAX_REQUEST) {
            errno = EFBIG;
            return -1;
        }
        if (sandbox_buf_append(in, buf, (size_t)n) != 0)
            return -1;
    }
}

static int check(void)
{
    sandbox_buf out = {0};
    run(sandbox_check_request(), &out);
    sandbox_response res;
    char why[300];
    int rc = sandbox_response_decode(out.data, out.len, &res, why, sizeof why);
    if (rc == 0) {
        rc = sandbox_check_response(&res, why, sizeof why);
        sandbox_response_free(&res);
    }
    sandbox_buf_free(&out);
    if (rc != 0) {
        fprintf(stderr, "tern-sandbox: %s\n", why);
        return 1;
    }
    printf("tern-sandbox: ok (user, PID, network, mount, IPC, UTS and cgroup namespaces; "
           "seccomp; programs run as %s)\n", geteuid() == 0 ? "nobody" : "you");
    return 0;
}

int main(int argc, char **argv)
{
    /* tern gone: so are we, and init after us */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (argc == 2 && strcmp(argv[1], "--check") == 0)
        return check();
    if (argc == 3 && strcmp(argv[1], "--parent") == 0) {
        /* the parent died before the line above: nobody waits for us */
        if (getppid() != (pid_t)atol(argv[2]))
            return 1;
    } else if (argc != 1) {
        fprintf(stderr, "usage: tern-sandbox [--parent PID] < request > response\n"
                        "       tern-sandbox --check\n"
                        "The helper of tern's code reward (docs/sandbox.md).\n");
        return 2;
    }
    sandbox_buf in = {0}, out = {0};
    sandbox_request req;
    char why[160];
    if (read_request(&in) != 0) {
        sandbox_response res = {0};
        snprintf(res.error, sizeof res.error, "reading the request: %s", strerror(errno));
        sandbox_response_encode(&res, &out);
    } else if (sandbox_request_decode(in.data, in.len, &req, why, sizeof why) != 0) {
        sandbox_response res = {0};
        snprintf(res.error, sizeof res.error, "a malformed request: %s", why);
        sandbox_response_encode(&res, &out);
    } else {
        run(&req, &out);
        sandbox_request_free(&req);
    }
    sandbox_buf_free(&in);
    int rc = out.oom || write_all(1, out.data, out.len) != 0 ? 1 : 0;
    sandbox_buf_free(&out);
    return rc;
}
