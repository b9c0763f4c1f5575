/*
 * wire.h: what the code reward asks of tern-sandbox and what it answers.
 *
 * A request is a set of files to put in the sandbox's working directory
 * (/box) and a list of steps, each a program run with its own standard input
 * and limits; the answer is one result per step. Both travel as one binary
 * message: little-endian integers, byte strings as a u64 length then the
 * bytes, and a magic word and version in front. Both sides check every
 * length against what is left, so a truncated message is an error, never a
 * read past its end (docs/sandbox.md).
 *
 * The plugin writes a request into a memfd that becomes the helper's standard
 * input; the helper writes the response to its standard output (also a
 * memfd). Neither side trusts anything the sandboxed program produced: its
 * output bytes are data only, bounded by the step's output limit.
 */
#ifndef TERN_SANDBOX_WIRE_H
#define TERN_SANDBOX_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define SANDBOX_REQUEST_MAGIC 0x31425354u  /* "TSB1" */
#define SANDBOX_RESPONSE_MAGIC 0x31525354u /* "TSR1" */
#define SANDBOX_WIRE_VERSION 1u

/* Bounds a well-formed message keeps (both sides check them). */
#define SANDBOX_MAX_FILES 16
#define SANDBOX_MAX_STEPS 4096
#define SANDBOX_MAX_ARGS 64
#define SANDBOX_MAX_BINDS 32
#define SANDBOX_MAX_NAME 255        /* a file name in /box, a bind path: bytes */
#define SANDBOX_STDERR_KEEP 4096    /* stderr bytes kept per step: head and tail */

/* Limits of one step. Memory, processes and open files are rlimits of every
 * process of the step; cpu_ms is per process (RLIMIT_CPU) and checked again
 * on the step's main process after it ends. */
typedef struct sandbox_limits {
    uint64_t wall_ms;      /* wall clock from start to the main process's exit */
    uint64_t cpu_ms;       /* CPU time (user + system) */
    uint64_t memory_bytes; /* address space per process (RLIMIT_AS) */
    uint64_t processes;    /* processes and threads of the sandbox (RLIMIT_NPROC) */
    uint64_t open_files;   /* descriptors per process (RLIMIT_NOFILE) */
    uint64_t file_bytes;   /* largest file a process may write (RLIMIT_FSIZE) */
    uint64_t output_bytes; /* stdout (and the result descriptor) kept; more is a failure */
} sandbox_limits;

/* A file written into /box before the first step. */
typedef struct sandbox_file {
    char *name;    /* a plain name: no '/', not "." or ".." */
    uint32_t mode; /* permission bits, e.g. 0644 or 0755 */
    uint8_t *data;
    uint64_t len;
} sandbox_file;

/* Step flags. */
#define SANDBOX_STEP_REQUIRED 1u  /* later steps are not run unless this one exits 0 */
#define SANDBOX_STEP_RESULT_FD 2u /* the program gets a pipe on descriptor 3; what it
                                   * writes there comes back as `aux` */

typedef struct sandbox_step {
    uint32_t argc;
    char **argv;        /* argv[0] is an absolute path inside the sandbox */
    uint8_t *stdin_data; /* the program's standard input (then end of file) */
    uint64_t stdin_len;
    sandbox_limits limits;
    uint32_t flags;     /* SANDBOX_STEP_* */
} sandbox_step;

typedef struct sandbox_request {
    uint64_t tmpfs_bytes; /* size of the writable filesystem holding /box and /tmp */
    uint32_t n_binds;
    char **binds;         /* host paths shown read-only at the same path */
    uint32_t n_files;
    sandbox_file *files;
    uint32_t n_steps;
    sandbox_step *steps;
} sandbox_request;

/* How a step ended. */
typedef enum sandbox_outcome {
    SANDBOX_EXITED = 0,       /* code = exit status */
    SANDBOX_SIGNALED = 1,     /* code = the signal */
    SANDBOX_WALL_LIMIT = 2,   /* killed at wall_ms */
    SANDBOX_CPU_LIMIT = 3,    /* used more than cpu_ms */
    SANDBOX_OUTPUT_LIMIT = 4, /* wrote more than output_bytes */
    SANDBOX_NOT_RUN = 5,      /* an earlier required step failed */
    SANDBOX_START_FAILED = 6, /* could not be started; code = errno */
} sandbox_outcome;

typedef struct sandbox_step_result {
    uint32_t outcome;    /* sandbox_outcome */
    int32_t code;
    uint64_t cpu_us, wall_us;
    uint64_t max_rss_kb; /* peak resident memory of the main process */
    uint8_t *out;        /* stdout, at most output_bytes */
    uint64_t out_len;
    uint8_t *err;        /* stderr: the first and last bytes, at most SANDBOX_STDERR_KEEP */
    uint64_t err_len;
    uint8_t *aux;        /* what was written to descriptor 3 (SANDBOX_STEP_RESULT_FD) */
    uint64_t aux_len;
} sandbox_step_result;

typedef struct sandbox_response {
    char error[256];      /* non-empty: the sandbox itself failed (not the program) */
    uint32_t n_steps;     /* results for steps[0..n_steps) */
    sandbox_step_result *steps;
} sandbox_response;

/* A growing byte buffer. */
typedef struct sandbox_buf {
    uint8_t *data;
    size_t len, cap;
    int oom; /* an append failed: the content is incomplete */
} sandbox_buf;

void sandbox_buf_free(sandbox_buf *b);
/* Appends p[0..n): 0, or -1 out of memory (and b->oom set). */
int sandbox_buf_append(sandbox_buf *b, const void *p, size_t n);

/* Serialize into *out (appended): 0, or -1 out of memory. */
int sandbox_request_encode(const sandbox_request *req, sandbox_buf *out);
int sandbox_response_encode(const sandbox_response *res, sandbox_buf *out);

/* Parse msg[0..len): 0, or -1 with `why` (a phrase, cap >= 80) when the
 * message is malformed or breaks a bound above. On success the result owns
 * copies of everything (free with the *_free below). */
int sandbox_request_decode(const uint8_t *msg, size_t len, sandbox_request *req, char *why,
                           size_t why_cap);
int sandbox_response_decode(const uint8_t *msg, size_t len, sandbox_response *res, char *why,
                            size_t why_cap);

void sandbox_request_free(sandbox_request *req);
void sandbox_response_free(sandbox_response *res);

/* Whether `name` is a plain file name for /box (no '/', not ".", "..", empty
 * or longer than SANDBOX_MAX_NAME). */
int sandbox_file_name_ok(const char *name);

/* The most time a run of req may take, in ms: every step's wall limit, a
 * little per step for starting it, and SANDBOX_SETUP_MS for building the
 * sandbox. tern-sandbox kills init past it; the plugin kills tern-sandbox a
 * little later still. */
#define SANDBOX_SETUP_MS 5000
uint64_t sandbox_request_budget_ms(const sandbox_request *req);

/* The smallest real run: `true` in a sandbox with /usr. Used to check that
 * sandboxes can be made here (tern-sandbox --check, the plugin's create). */
const sandbox_request *sandbox_check_request(void);
/* 0 when res is the answer of a sandbox that worked, else -1 with why. */
int sandbox_check_response(const sandbox_response *res, char *why, size_t why_cap);

/* A short phrase for an outcome: "exited", "killed by a signal", ... */
const char *sandbox_outcome_name(uint32_t outcome);

#endif /* TERN_SANDBOX_WIRE_H */
