/* env_protocol.h: the lines the `python` environment and its worker
 * (env_runner.py) exchange over the worker's socket, one JSON object a line:
 *
 *   reset  {"op": "reset", "id": N, "seed": S, "task": {...the task...}}
 *      ->  {"observation": "..." | null}
 *   step   {"op": "step", "id": N, "action": "the model's turn"}
 *      ->  {"observation": "..." | null, "reward": 0.5, "done": false, "reason": "..."}
 *   close  {"op": "close", "id": N}          (no answer: it rides with the next request)
 *   call   {"op": "call", "id": N, "name": F, "arguments": {...}, "max": BYTES}
 *      ->  {"status": "ok" | "invalid" | "failed", "output": "...", "truncated": false}
 *
 * and, for either request, {"error": "Type: message (file:line)"} when the
 * user's code raised, {"garbage": "what is wrong"} when it answered the wrong
 * shape or type (the worker checks types: it knows Python's). N and S are
 * unsigned 64-bit integers. Kept apart from the process handling so that
 * tests reach the parser. */
#ifndef TERN_ENV_PROTOCOL_H
#define TERN_ENV_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "tern/environment.h"

/* A request line with its '\n': malloc'd, *n its length; NULL without
 * memory (or for a task_json that is not one JSON value). The action's bytes
 * that are not UTF-8 are sent as U+FFFD. */
char *env_request_reset(uint64_t id, uint64_t seed, const char *task_json, size_t *n);
char *env_request_step(uint64_t id, const char *text, size_t len, size_t *n);
/* The close line into buf[0..cap): its length (no NUL needed). */
size_t env_request_close(uint64_t id, char *buf, size_t cap);

/* One answer, parsed. */
typedef struct env_answer {
    char *observation; /* malloc'd, or NULL (null) */
    double reward;
    int done;
    uint32_t failure; /* TERN_ENV_OK, or TERN_ENV_ERROR / TERN_ENV_GARBAGE */
    char reason[TERN_ENV_REASON_MAX];
} env_answer;

typedef enum env_reply {
    ENV_ANSWERED,   /* *a holds the answer (failure TERN_ENV_OK, ERROR or GARBAGE) */
    ENV_NOT_A_REPLY /* not an answer: the worker is out of step; a->reason says what */
} env_reply;

/* Parse the answer line[0..len) (no '\n') to a reset (step = 0) or a step
 * into *a (zeroed here; env_answer_free after). An observation longer than
 * TERN_ENV_OBSERVATION_MAX is a garbage answer. */
env_reply env_parse_reply(const char *line, size_t len, int step, env_answer *a);
void env_answer_free(env_answer *a);

/* A call of tool `name` with the arguments' JSON object text on episode id,
 * its output at most `max` bytes: malloc'd with its '\n', *n its length;
 * NULL without memory or for arguments that are not a JSON object. */
char *env_request_call(uint64_t id, const char *name, const char *arguments, size_t max,
                       size_t *n);
/* Parse the answer line[0..len) to a call into *out (its output buffer,
 * output_cap bytes, cut there with truncated set): ENV_ANSWERED, or
 * ENV_NOT_A_REPLY with why[0..cap) saying what is wrong. */
env_reply env_parse_call_reply(const char *line, size_t len, tern_tool_result *out, char *why,
                               size_t cap);

#endif
