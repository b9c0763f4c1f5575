/* runner.c: the sandbox settings every plugin running programs in
 * tern-sandbox shares, the pool they make, one program run once (runner.h). */
#include "runner.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Host paths every sandbox shows: the system's programs and libraries, and
 * what the dynamic loader and compiler read from /etc. Missing ones are
 * left out. */
static const char *const default_binds[] = {"/usr", "/etc/alternatives", "/etc/ld.so.cache"};

/* ---- Settings ------------------------------------------------------------------ */

static uint64_t get_u(const tern_host *host, tern_ctx *ctx, const char *key)
{
    int64_t v = 0;
    host->get_int(ctx, key, &v);
    return (uint64_t)v;
}

static uint64_t get_mb(const tern_host *host, tern_ctx *ctx, const char *key)
{
    return get_u(host, ctx, key) << 20;
}

/* Whether path is dir or lies under it. */
static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether path (resolved) lies in one of the binds. */
static int visible(const code_runner *r, const char *resolved)
{
    for (size_t i = 0; i < r->n_binds; i++)
        if (under(resolved, r->binds[i]))
            return 1;
    return 0;
}

int code_runner_check_program(const tern_host *host, tern_ctx *ctx, const code_runner *r,
                              const char *key, const char *path)
{
    char resolved[PATH_MAX];
    if (path[0] != '/')
        return host->setting_error(ctx, key, "'%s' is not an absolute path", path);
    if (!realpath(path, resolved) || access(resolved, X_OK) != 0)
        return host->setting_error(ctx, key, "'%s': %s", path, strerror(errno));
    if (!visible(r, resolved))
        return host->setting_error(ctx, key, "'%s' (%s) is outside what the sandbox shows "
                                   "(binds): add its folder to `binds`", path, resolved);
    return TERN_OK;
}

static int read_binds(const tern_host *host, tern_ctx *ctx, code_runner *r)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof default_binds / sizeof *default_binds; i++)
        if (access(default_binds[i], F_OK) == 0)
            r->binds[n++] = default_binds[i];
    size_t extra = 0;
    host->get_count(ctx, "binds", &extra);
    if (n + extra > CODE_RUNNER_MAX_BINDS)
        return host->setting_error(ctx, "binds", "%zu paths; at most %zu", extra,
                                   (size_t)CODE_RUNNER_MAX_BINDS - n);
    for (size_t i = 0; i < extra; i++) {
        char key[32];
        const char *b = NULL;
        snprintf(key, sizeof key, "binds.%zu", i);
        host->get_string(ctx, key, &b);
        char resolved[PATH_MAX];
        errno = 0;
        if (b[0] != '/' || strstr(b, "/./") || strstr(b, "/../") || strcmp(b, "/") == 0 ||
            (strlen(b) > 1 && b[strlen(b) - 1] == '/'))
            return host->setting_error(ctx, "binds", "'%s' is not a plain absolute path to a "
                                       "folder or file (no trailing '/', no . or ..)", b);
        /* the reserved paths first: whether such a path exists on this
         * machine does not matter, it can never be bound */
        static const char *const reserved[] = {"/tmp", "/box", "/dev", "/proc"};
        for (size_t k = 0; k < sizeof reserved / sizeof *reserved; k++)
            if (under(b, reserved[k]))
                return host->setting_error(ctx, "binds", "'%s': %s is the sandbox's own", b,
                                           reserved[k]);
        if (!realpath(b, resolved) || strcmp(resolved, b) != 0)
            return host->setting_error(ctx, "binds", "'%s': %s", b, errno ? strerror(errno) :
                                       "a symbolic link: give the path it leads to");
        r->binds[n++] = b;
    }
    r->n_binds = n;
    return TERN_OK;
}

int code_runner_read(const tern_host *host, tern_ctx *ctx, code_runner *r)
{
    *r = (code_runner){0};
    host->get_string(ctx, "python", &r->python);
    sandbox_limits *l = &r->limits;
    l->wall_ms = get_u(host, ctx, "time_ms");
    l->cpu_ms = get_u(host, ctx, "cpu_ms");
    if (l->cpu_ms == 0)
        l->cpu_ms = l->wall_ms;
    l->memory_bytes = get_mb(host, ctx, "memory_mb");
    l->processes = get_u(host, ctx, "processes");
    l->open_files = get_u(host, ctx, "open_files");
    l->file_bytes = get_mb(host, ctx, "file_mb");
    l->output_bytes = get_u(host, ctx, "output_kb") << 10;
    r->tmpfs_bytes = get_mb(host, ctx, "tmpfs_mb");
    uint64_t slots = get_u(host, ctx, "pool");
    if (slots == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        slots = cpus > 0 ? (uint64_t)cpus : 1;
    }
    r->slots = (unsigned)slots;
    int rc = read_binds(host, ctx, r);
    if (rc == TERN_OK)
        rc = code_runner_check_program(host, ctx, r, "python", r->python);
    return rc;
}

/* tern-sandbox: the `helper` setting, else beside this plugin's .so. */
static int find_helper(const tern_host *host, tern_ctx *ctx, const char *plugin, char *out,
                       size_t cap)
{
    const char *given = NULL;
    if (host->get_string(ctx, "helper", &given) == TERN_OK && given && given[0]) {
        snprintf(out, cap, "%s", given);
    } else {
        /* this function is linked into the plugin: its address is in the .so */
        Dl_info info;
        if (!dladdr((void *)find_helper, &info) || !info.dli_fname)
            return host->fail(ctx, TERN_ERR, "%s: cannot find where this plugin was "
                              "loaded from; set `helper` to the path of tern-sandbox", plugin);
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = slash ? (int)(slash - info.dli_fname) : 1;
        snprintf(out, cap, "%.*s/tern-sandbox", dir, slash ? info.dli_fname : ".");
    }
    if (access(out, X_OK) != 0)
        return host->setting_error(ctx, "helper", "tern-sandbox '%s': %s (it is installed "
                                   "beside the plugin; docs/sandbox.md)", out, strerror(errno));
    return TERN_OK;
}

int code_runner_start(const tern_host *host, tern_ctx *ctx, const char *plugin, code_runner *r)
{
    char why[300];
    int rc = find_helper(host, ctx, plugin, r->helper, sizeof r->helper);
    if (rc == TERN_OK && !(r->pool = sandbox_pool_create(r->helper, r->slots)))
        rc = host->fail(ctx, TERN_ENOMEM, "%s: out of memory", plugin);
    /* one real sandbox now, so a machine that cannot make them is told at
     * start (and by `tern check`), not at the first run */
    if (rc == TERN_OK && sandbox_pool_check(r->pool, why, sizeof why) != 0)
        rc = host->fail(ctx, TERN_EUNSUPPORTED, "%s: cannot run sandboxes here: %s", plugin,
                        why);
    if (rc != TERN_OK)
        code_runner_close(r);
    return rc;
}

void code_runner_close(code_runner *r)
{
    sandbox_pool_destroy(r->pool);
    r->pool = NULL;
}

/* ---- One run --------------------------------------------------------------------- */

int code_runner_once(const code_runner *r, const sandbox_file *files, uint32_t n_files,
                     char **argv, const sandbox_limits *limits, sandbox_response *res, char *why,
                     size_t why_cap)
{
    uint32_t argc = 0;
    while (argv[argc])
        argc++;
    sandbox_step step = {.argc = argc, .argv = argv, .limits = *limits};
    sandbox_request req = {
        .tmpfs_bytes = r->tmpfs_bytes,
        .n_binds = (uint32_t)r->n_binds,
        .binds = (char **)r->binds,
        .n_files = n_files,
        .files = (sandbox_file *)files,
        .n_steps = 1,
        .steps = &step,
    };
    const sandbox_request *reqs[] = {&req};
    return sandbox_pool_run(r->pool, reqs, res, 1, why, why_cap);
}

/* ---- Reading a result ------------------------------------------------------------ */

int code_runner_out_of_memory(const sandbox_limits *l, const sandbox_step_result *res)
{
    if (res->err && memmem(res->err, res->err_len, "MemoryError", 11))
        return 1;
    /* a C program whose malloc() failed and then crashed, or the kernel's
     * OOM killer: most of the address-space limit was resident */
    return (res->outcome == SANDBOX_SIGNALED || res->code != 0) &&
           res->max_rss_kb * 1024u >= l->memory_bytes / 10u * 9u;
}
