/* exec_protocol.h: the lines the `exec` reward and its command exchange
 * (docs/rewards.md, "exec"): one JSON object per response on the command's
 * standard input, one verdict per line on its standard output.
 *
 *   request  {"task": {...the task...}, "response": "...", "response_tokens": N}
 *   verdict  0.5
 *        or  {"reward": 0.5, "components": {"accuracy": 1}, "reason": "..."}
 *        or  {"error": "why this response could not be judged"}
 *
 * Kept apart from the process handling so that the tests and the fuzz target
 * (tests/fuzz/fuzz_exec.c) reach the parser. */
#ifndef TERN_EXEC_PROTOCOL_H
#define TERN_EXEC_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "tern/reward.h"

/* Component names given by a command, kept for the instance's life (a
 * result's component names must outlive the call). */
#define EXEC_MAX_NAMES 64
typedef struct exec_names {
    char *name[EXEC_MAX_NAMES];
    size_t n;
} exec_names;
void exec_names_free(exec_names *t);

/* The request line for one response, with its '\n': task_json is the task
 * object as JSON text; response[0..len) any bytes (those that are not UTF-8
 * are sent as U+FFFD). A malloc'd string (*n its length), or NULL without
 * memory or for a task_json that does not parse. */
char *exec_request(const char *task_json, const char *response, size_t len, uint32_t tokens,
                   size_t *n);

typedef enum exec_reply {
    EXEC_VERDICT, /* *r holds the verdict */
    EXEC_ERROR,   /* {"error": ...}: no verdict, r->reason says why */
    EXEC_GARBAGE  /* not a verdict: r->reason says what was wrong */
} exec_reply;

/* Parse one reply line (line[0..len), without the '\n') into *r (zeroed by
 * the caller). Component names are interned in *names; a name that is not
 * [a-z0-9_]+ (at most 64 bytes) or beyond the table's room is dropped. */
exec_reply exec_parse_reply(const char *line, size_t len, tern_reward_result *r,
                            exec_names *names);

#endif
