/* wire.c: encoding and decoding of sandbox requests and responses (wire.h). */
#include "wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Writing ---------------------------------------------------------------- */

void sandbox_buf_free(sandbox_buf *b)
{
    free(b->data);
    *b = (sandbox_buf){0};
}

int sandbox_buf_append(sandbox_buf *b, const void *p, size_t n)
{
    if (b->oom)
        return -1;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->oom = 1;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static void put(sandbox_buf *b, const void *p, size_t n)
{
    sandbox_buf_append(b, p, n);
}

static void put_u32(sandbox_buf *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 4);
}

static void put_u64(sandbox_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 8);
}

static void put_bytes(sandbox_buf *b, const void *p, uint64_t n)
{
    put_u64(b, n);
    put(b, p, (size_t)n);
}

static void put_str(sandbox_buf *b, const char *s)
{
    put_bytes(b, s, strlen(s));
}

static void put_limits(sandbox_buf *b, const sandbox_limits *l)
{
    put_u64(b, l->wall_ms);
    put_u64(b, l->cpu_ms);
    put_u64(b, l->memory_bytes);
    put_u64(b, l->processes);
    put_u64(b, l->open_files);
    put_u64(b, l->file_bytes);
    put_u64(b, l->output_bytes);
}

int sandbox_request_encode(const sandbox_request *req, sandbox_buf *out)
{
    put_u32(out, SANDBOX_REQUEST_MAGIC);
    put_u32(out, SANDBOX_WIRE_VERSION);
    put_u64(out, req->tmpfs_bytes);
    put_u32(out, req->n_binds);
    for (uint32_t i = 0; i < req->n_binds; i++)
        put_str(out, req->binds[i]);
    put_u32(out, req->n_files);
    for (uint32_t i = 0; i < req->n_files; i++) {
        const sandbox_file *f = &req->files[i];
        put_str(out, f->name);
        put_u32(out, f->mode);
        put_bytes(out, f->data, f->len);
    }
    put_u32(out, req->n_steps);
    for (uint32_t i = 0; i < req->n_steps; i++) {
        const sandbox_step *s = &req->steps[i];
        put_u32(out, s->argc);
        for (uint32_t a = 0; a < s->argc; a++)
            put_str(out, s->argv[a]);
        put_bytes(out, s->stdin_data, s->stdin_len);
        put_limits(out, &s->limits);
        put_u32(out, s->flags);
    }
    return out->oom ? -1 : 0;
}

int sandbox_response_encode(const sandbox_response *res, sandbox_buf *out)
{
    put_u32(out, SANDBOX_RESPONSE_MAGIC);
    put_u32(out, SANDBOX_WIRE_VERSION);
    put_str(out, res->error);
    put_u32(out, res->n_steps);
    for (uint32_t i = 0; i < res->n_steps; i++) {
        const sandbox_step_result *r = &res->steps[i];
        put_u32(out, r->outcome);
        put_u32(out, (uint32_t)r->code);
        put_u64(out, r->cpu_us);
        put_u64(out, r->wall_us);
        put_u64(out, r->max_rss_kb);
        put_bytes(out, r->out, r->out_len);
        put_bytes(out, r->err, r->err_len);
        put_bytes(out, r->aux, r->aux_len);
    }
    return out->oom ? -1 : 0;
}

/* ---- Reading ---------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t left;
    char *why;
    size_t why_cap;
    int bad; /* the first problem is in why */
} reader;

static void bad(reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(reader *r, const char *fmt, ...)
{
    if (r->bad)
        return;
    r->bad = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, r->why_cap, fmt, ap);
    va_end(ap);
}

static uint64_t get_int(reader *r, int bytes, const char *what)
{
    if (r->bad)
        return 0;
    if (r->left < (size_t)bytes) {
        bad(r, "truncated at %s", what);
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    r->left -= (size_t)bytes;
    return v;
}

static uint32_t get_u32(reader *r, const char *what)
{
    return (uint32_t)get_int(r, 4, what);
}

static uint64_t get_u64(reader *r, const char *what)
{
    return get_int(r, 8, what);
}

/* A counted byte string, copied with a NUL after it (so names are strings). */
static uint8_t *get_bytes(reader *r, uint64_t *len, uint64_t max, const char *what)
{
    uint64_t n = get_u64(r, what);
    if (r->bad)
        return NULL;
    if (n > r->left) {
        bad(r, "truncated in %s (%llu bytes announced, %zu left)", what,
            (unsigned long long)n, r->left);
        return NULL;
    }
    if (n > max) {
        bad(r, "%s is %llu bytes, more than %llu", what, (unsigned long long)n,
            (unsigned long long)max);
        return NULL;
    }
    uint8_t *d = malloc((size_t)n + 1);
    if (!d) {
        bad(r, "out of memory reading %s", what);
        return NULL;
    }
    memcpy(d, r->p, (size_t)n);
    d[n] = 0;
    r->p += n;
    r->left -= (size_t)n;
    if (len)
        *len = n;
    return d;
}

/* A string without NUL bytes. */
static char *get_str(reader *r, uint64_t max, const char *what)
{
    uint64_t n = 0;
    char *s = (char *)get_bytes(r, &n, max, what);
    if (s && strlen(s) != n) {
        bad(r, "%s holds a NUL byte", what);
        free(s);
        return NULL;
    }
    return s;
}

/* A count, checked against its bound and against the bytes left (each
 * element takes at least min_bytes), so a huge count cannot make us allocate
 * before the message runs out. */
static uint32_t get_count(reader *r, uint32_t max, size_t min_bytes, const char *what)
{
    uint32_t n = get_u32(r, what);
    if (r->bad)
        return 0;
    if (n > max) {
        bad(r, "%u %s, more than %u", n, what, max);
        return 0;
    }
    if ((size_t)n * min_bytes > r->left) {
        bad(r, "truncated: %u %s announced", n, what);
        return 0;
    }
    return n;
}

static void get_limits(reader *r, sandbox_limits *l)
{
    l->wall_ms = get_u64(r, "wall_ms");
    l->cpu_ms = get_u64(r, "cpu_ms");
    l->memory_bytes = get_u64(r, "memory_bytes");
    l->processes = get_u64(r, "processes");
    l->open_files = get_u64(r, "open_files");
    l->file_bytes = get_u64(r, "file_bytes");
    l->output_bytes = get_u64(r, "output_bytes");
}

static void check_header(reader *r, uint32_t magic)
{
    if (get_u32(r, "the magic word") != magic && !r->bad)
        bad(r, "not a tern-sandbox message (wrong magic word)");
    uint32_t v = get_u32(r, "the version");
    if (!r->bad && v != SANDBOX_WIRE_VERSION)
        bad(r, "wire version %u, this side speaks %u", v, SANDBOX_WIRE_VERSION);
}

int sandbox_file_name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= SANDBOX_MAX_NAME && !strchr(name, '/') && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0;
}

int sandbox_request_decode(const uint8_t *msg, size_t len, sandbox_request *req, char *why,
                           size_t why_cap)
{
    reader r = {msg, len, why, why_cap, 0};
    *req = (sandbox_request){0};
    check_header(&r, SANDBOX_REQUEST_MAGIC);
    req->tmpfs_bytes = get_u64(&r, "tmpfs_bytes");

    uint32_t nb = get_count(&r, SANDBOX_MAX_BINDS, 8, "binds");
    if (nb && !(req->binds = calloc(nb, sizeof *req->binds)))
        bad(&r, "out of memory");
    for (uint32_t i = 0; i < nb && !r.bad; i++) {
        req->binds[i] = get_str(&r, 4096, "a bind path");
        req->n_binds = i + 1;
        if (req->binds[i] && req->binds[i][0] != '/')
            bad(&r, "bind path '%.60s' is not absolute", req->binds[i]);
    }

    uint32_t nf = get_count(&r, SANDBOX_MAX_FILES, 20, "files");
    if (nf && !(req->files = calloc(nf, sizeof *req->files)))
        bad(&r, "out of memory");
    for (uint32_t i = 0; i < nf && !r.bad; i++) {
        sandbox_file *f = &req->files[i];
        req->n_files = i + 1;
        f->name = get_str(&r, SANDBOX_MAX_NAME, "a file name");
        if (f->name && !sandbox_file_name_ok(f->name))
            bad(&r, "file name '%.60s' is not a plain name", f->name);
        f->mode = get_u32(&r, "a file mode");
        if (!r.bad && (f->mode & ~0777u))
            bad(&r, "file mode %o is more than permission bits", f->mode);
        f->data = get_bytes(&r, &f->len, UINT64_MAX, "a file");
    }

    uint32_t ns = get_count(&r, SANDBOX_MAX_STEPS, 4 + 8 + 56 + 4, "steps");
    if (ns && !(req->steps = calloc(ns, sizeof *req->steps)))
        bad(&r, "out of memory");
    for (uint32_t i = 0; i < ns && !r.bad; i++) {
        sandbox_step *s = &req->steps[i];
        req->n_steps = i + 1;
        uint32_t argc = get_count(&r, SANDBOX_MAX_ARGS, 8, "arguments");
        if (!r.bad && argc == 0)
            bad(&r, "step %u has no program", i);
        if (argc && !(s->argv = calloc(argc + 1, sizeof *s->argv)))
            bad(&r, "out of memory");
        for (uint32_t a = 0; a < argc && !r.bad; a++) {
            s->argv[a] = get_str(&r, 4096, "an argument");
            s->argc = a + 1;
        }
        if (!r.bad && s->argv[0][0] != '/')
            bad(&r, "step %u: program '%.60s' is not an absolute path", i, s->argv[0]);
        s->stdin_data = get_bytes(&r, &s->stdin_len, UINT64_MAX, "a step's stdin");
        get_limits(&r, &s->limits);
        s->flags = get_u32(&r, "step flags");
    }
    if (!r.bad && r.left)
        bad(&r, "%zu bytes after the end of the request", r.left);
    if (r.bad) {
        sandbox_request_free(req);
        return -1;
    }
    return 0;
}

int sandbox_response_decode(const uint8_t *msg, size_t len, sandbox_response *res, char *why,
                            size_t why_cap)
{
    reader r = {msg, len, why, why_cap, 0};
    *res = (sandbox_response){0};
    check_header(&r, SANDBOX_RESPONSE_MAGIC);
    char *err = get_str(&r, sizeof res->error - 1, "the error");
    if (err) {
        memcpy(res->error, err, strlen(err) + 1);
        free(err);
    }
    uint32_t ns = get_count(&r, SANDBOX_MAX_STEPS, 4 + 4 + 24 + 24, "step results");
    if (ns && !(res->steps = calloc(ns, sizeof *res->steps)))
        bad(&r, "out of memory");
    for (uint32_t i = 0; i < ns && !r.bad; i++) {
        sandbox_step_result *s = &res->steps[i];
        res->n_steps = i + 1;
        s->outcome = get_u32(&r, "an outcome");
        if (!r.bad && s->outcome > SANDBOX_START_FAILED)
            bad(&r, "unknown outcome %u", s->outcome);
        s->code = (int32_t)get_u32(&r, "a code");
        s->cpu_us = get_u64(&r, "cpu_us");
        s->wall_us = get_u64(&r, "wall_us");
        s->max_rss_kb = get_u64(&r, "max_rss_kb");
        s->out = get_bytes(&r, &s->out_len, UINT64_MAX, "stdout");
        s->err = get_bytes(&r, &s->err_len, SANDBOX_STDERR_KEEP, "stderr");
        s->aux = get_bytes(&r, &s->aux_len, UINT64_MAX, "the result descriptor");
    }
    if (!r.bad && r.left)
        bad(&r, "%zu bytes after the end of the response", r.left);
    if (r.bad) {
        sandbox_response_free(res);
        return -1;
    }
    return 0;
}

void sandbox_request_free(sandbox_request *req)
{
    for (uint32_t i = 0; i < req->n_binds; i++)
        free(req->binds[i]);
    free(req->binds);
    for (uint32_t i = 0; i < req->n_files; i++) {
        free(req->files[i].name);
        free(req->files[i].data);
    }
    free(req->files);
    for (uint32_t i = 0; i < req->n_steps; i++) {
        for (uint32_t a = 0; a < req->steps[i].argc; a++)
            free(req->steps[i].argv[a]);
        free(req->steps[i].argv);
        free(req->steps[i].stdin_data);
    }
    free(req->steps);
    *req = (sandbox_request){0};
}

void sandbox_response_free(sandbox_response *res)
{
    for (uint32_t i = 0; i < res->n_steps; i++) {
        free(res->steps[i].out);
        free(res->steps[i].err);
        free(res->steps[i].aux);
    }
    free(res->steps);
    *res = (sandbox_response){0};
}

uint64_t sandbox_request_budget_ms(const sandbox_request *req)
{
    uint64_t ms = SANDBOX_SETUP_MS;
    for (uint32_t i = 0; i < req->n_steps; i++)
        ms += req->steps[i].limits.wall_ms + 100;
    return ms;
}

const sandbox_request *sandbox_check_request(void)
{
    static char *argv[] = {"/bin/true", NULL};
    static char *binds[] = {"/usr"};
    static sandbox_step step = {
        .argc = 1, .argv = argv,
        .limits = {.wall_ms = 5000, .cpu_ms = 5000, .memory_bytes = 256u << 20, .processes = 4,
                   .open_files = 64, .file_bytes = 1u << 20, .output_bytes = 4096},
    };
    static const sandbox_request req = {.tmpfs_bytes = 1u << 20, .n_binds = 1, .binds = binds,
                                        .n_steps = 1, .steps = &step};
    return &req;
}

int sandbox_check_response(const sandbox_response *res, char *why, size_t why_cap)
{
    if (res->error[0]) {
        snprintf(why, why_cap, "%s", res->error);
        return -1;
    }
    if (res->n_steps != 1 || res->steps[0].outcome != SANDBOX_EXITED || res->steps[0].code != 0) {
        snprintf(why, why_cap, "/bin/true in the sandbox did not succeed (%s, %d)",
                 res->n_steps ? sandbox_outcome_name(res->steps[0].outcome) : "no result",
                 res->n_steps ? res->steps[0].code : 0);
        return -1;
    }
    return 0;
}

const char *sandbox_outcome_name(uint32_t outcome)
{
    switch (outcome) {
    case SANDBOX_EXITED: return "exited";
    case SANDBOX_SIGNALED: return "killed by a signal";
    case SANDBOX_WALL_LIMIT: return "wall time limit";
    case SANDBOX_CPU_LIMIT: return "CPU time limit";
    case SANDBOX_OUTPUT_LIMIT: return "output limit";
    case SANDBOX_NOT_RUN: return "not run";
    case SANDBOX_START_FAILED: return "could not start";
    }
    return "unknown";
}
