/*
 * runner.h: the sandbox as a plugin sets it up, shared by every plugin that
 * runs programs in tern-sandbox (the code reward, code.c; the python tool,
 * plugins/tools/python): the settings they all take, with the same names,
 * defaults and checks (docs/sandbox.md, "Limits"), where tern-sandbox is,
 * the pool, and one program run once.
 *
 * A runner is read-only after code_runner_start(), so code_runner_once() may
 * be called from several threads at once (the pool shares its slots).
 */
#ifndef TERN_CODE_RUNNER_H
#define TERN_CODE_RUNNER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <tern/host.h>
#include <tern/settings.h>

#include "pool.h"
#include "sandbox/wire.h"

/* The most host paths a sandbox shows: the defaults and `binds` together. */
#define CODE_RUNNER_MAX_BINDS 24

/* The `python` setting's spec entry. */
#define CODE_RUNNER_PYTHON_SETTING                                                             \
    TERN_SETTING(.name = "python", .type = TERN_SETTING_STRING, .def = "\"/usr/bin/python3\"", \
                 .doc = "the Python interpreter (inside binds)")

/* The spec entries of one program's limits, for a plugin's settings table;
 * `what` (a string literal) names one run of a program in their docs:
 * "each test run", "each call". */
#define CODE_RUNNER_LIMIT_SETTINGS(what)                                                       \
    TERN_SETTING(.name = "time_ms", .type = TERN_SETTING_INT, .def = "5000", .min = 1,         \
                 .max = 600000, .doc = "wall-clock limit of " what ", ms"),                    \
    TERN_SETTING(.name = "cpu_ms", .type = TERN_SETTING_INT, .def = "0", .min = 0,             \
                 .max = 600000, .doc = "CPU-time limit of " what ", ms (0: time_ms)"),         \
    TERN_SETTING(.name = "memory_mb", .type = TERN_SETTING_INT, .def = "512", .min = 16,       \
                 .max = 1048576, .doc = "address space of each process, MiB"),                 \
    TERN_SETTING(.name = "processes", .type = TERN_SETTING_INT, .def = "16", .min = 1,         \
                 .max = 4096, .doc = "processes and threads a run may have at once"),          \
    TERN_SETTING(.name = "open_files", .type = TERN_SETTING_INT, .def = "64", .min = 8,        \
                 .max = 65536, .doc = "open descriptors per process"),                         \
    TERN_SETTING(.name = "file_mb", .type = TERN_SETTING_INT, .def = "16", .min = 1,           \
                 .max = 1048576, .doc = "largest file a program may write, MiB"),              \
    TERN_SETTING(.name = "output_kb", .type = TERN_SETTING_INT, .def = "1024", .min = 1,       \
                 .max = 1048576, .doc = "stdout " what " may write, KiB; more fails it"),      \
    TERN_SETTING(.name = "tmpfs_mb", .type = TERN_SETTING_INT, .def = "64", .min = 1,          \
                 .max = 1048576, .doc = "writable space (/box and /tmp together), MiB")

/* The spec entries of where and how many sandboxes run. */
#define CODE_RUNNER_HOST_SETTINGS                                                              \
    TERN_SETTING(.name = "pool", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1024,  \
                 .doc = "sandboxes running at once (0: one per online CPU)"),                  \
    TERN_SETTING(.name = "binds", .type = TERN_SETTING_STRINGS,                                \
                 .doc = "host paths shown read-only inside, besides /usr, /etc/alternatives "  \
                        "and /etc/ld.so.cache"),                                               \
    TERN_SETTING(.name = "helper", .type = TERN_SETTING_STRING,                                \
                 .doc = "path of tern-sandbox (default: beside this plugin)")

/* What the settings above say, and the pool they make. */
typedef struct code_runner {
    const char *python;     /* the interpreter, checked to be inside binds */
    sandbox_limits limits;  /* of each run of a program */
    uint64_t tmpfs_bytes;
    const char *binds[CODE_RUNNER_MAX_BINDS]; /* host paths shown (point into ctx or statics) */
    size_t n_binds;
    unsigned slots;         /* sandboxes at once */
    char helper[PATH_MAX + 16];
    sandbox_pool *pool;     /* NULL until code_runner_start */
} code_runner;

/* Reads the settings above from ctx into r, checking binds and the
 * interpreter. TERN_OK, or a status after host->setting_error. Nothing to
 * free yet. */
int code_runner_read(const tern_host *host, tern_ctx *ctx, code_runner *r);

/* A program the sandbox runs (setting `key`, value `path`): it is an
 * absolute path, exists here, is executable, and it and what its links lead
 * to lie inside r's binds. TERN_OK or a status after host->setting_error. */
int code_runner_check_program(const tern_host *host, tern_ctx *ctx, const code_runner *r,
                              const char *key, const char *path);

/* Finds tern-sandbox (`helper`, else beside the plugin's .so), makes the
 * pool and runs one real sandbox in it, so a machine that cannot make them
 * is told at create() ("<plugin>: cannot run sandboxes here: ..." with what
 * to fix), not at the first run. TERN_OK, or a status after host->fail
 * (then nothing is held). */
int code_runner_start(const tern_host *host, tern_ctx *ctx, const char *plugin, code_runner *r);

/* Frees the pool; r may be partly set up. */
void code_runner_close(code_runner *r);

/* Runs argv (argv[0] an absolute path inside the sandbox, NULL-terminated)
 * once in a fresh sandbox holding files[0..n_files) in /box, with empty
 * standard input and `limits`, into *res: the program's stdout, stderr and
 * how it ended (res->steps[0]), or res->error when the sandbox itself failed.
 * 0, or -1 with why when nothing could be run here (out of memory, no
 * memfds); free res with sandbox_response_free either way. Thread-safe. */
int code_runner_once(const code_runner *r, const sandbox_file *files, uint32_t n_files,
                     char **argv, const sandbox_limits *limits, sandbox_response *res, char *why,
                     size_t why_cap);

/* Whether step result res, run under limits l, died of its memory limit: a
 * Python MemoryError, or a crash or failure with most of the address space
 * resident (a C program whose malloc() failed, the kernel's OOM killer). */
int code_runner_out_of_memory(const sandbox_limits *l, const sandbox_step_result *res);

#endif /* TERN_CODE_RUNNER_H */
