/*
 * tern/tool.h: the ops table of a tool plugin (TERN_KIND_TOOL, ABI 1.14):
 * a function the policy may call in the middle of a trajectory
 * (docs/agents.md, "Tools").
 *
 * A run with a `tools` section describes each tool to the model in its chat
 * template's tool block (the function's JSON schema, describe()). When a
 * turn of the model holds calls, written the way its chat format writes
 * them (<tool_call>{"name": ..., "arguments": {...}}</tool_call>, or Llama
 * 3.1's bare {"name": ..., "parameters": {...}}), the core parses them,
 * calls each tool with the call's arguments as JSON text, and appends the
 * outputs as `tool` turns rendered by the template; the model then writes
 * its next turn. A turn without calls goes to the environment (or, without
 * one, is the trajectory's final answer).
 *
 * What the model sees: the output as the tool wrote it (TERN_TOOL_OK);
 * "invalid tool call: <output>" when the arguments are not what the tool
 * takes (TERN_TOOL_INVALID); "tool error: <output>" when it ran and failed
 * (TERN_TOOL_FAILED: an exception, a time limit). None of these ends the
 * trajectory: the model may try again. A status other than TERN_OK from
 * call() means the plugin itself is broken (it cannot start its sandbox),
 * and the explorer fails with the plugin's message.
 *
 * Thread-safety: without TERN_CAP_THREAD_SAFE the core never calls ops on
 * one instance concurrently.
 */
#ifndef TERN_TOOL_H
#define TERN_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most calls the core runs from one turn of the model; more are each
 * answered "invalid tool call: more than TERN_TOOL_MAX_CALLS calls in one
 * turn". */
#define TERN_TOOL_MAX_CALLS 8
/* The most bytes of a tool's name. */
#define TERN_TOOL_NAME_MAX 64
/* The longest output (bytes) a tool slot's output_max may allow. */
#define TERN_TOOL_OUTPUT_MAX (1u << 16)

/* How a call came out (tern_tool_result.status). */
typedef enum tern_tool_status {
    TERN_TOOL_OK = 0,      /* ran: the output is its result */
    TERN_TOOL_INVALID = 1, /* the arguments are not what the tool takes: the output says why */
    TERN_TOOL_FAILED = 2   /* ran and failed (raised, timed out): the output says how */
} tern_tool_status;

/* One call, as the core parsed it from the model's turn. */
typedef struct tern_tool_call {
    size_t size;           /* sizeof(tern_tool_call) as built by the core */
    const char *name;      /* the tool's name (describe()'s), NUL-terminated */
    const char *arguments; /* a JSON object's text, NUL-terminated; "{}" when the call gave none */
    uint64_t seed;         /* the call's own seed (same run seed, same call: same seed) */
} tern_tool_call;

/* What call() answers into. The core zeroes it and sets size, output and
 * output_cap. */
typedef struct tern_tool_result {
    size_t size;       /* sizeof(tern_tool_result) as built by the core */
    char *output;      /* the core's buffer of output_cap bytes: the plugin writes
                          UTF-8 text there, NUL-terminated */
    size_t output_cap; /* bytes of output, the NUL included (the slot's output_max + 1) */
    size_t output_len; /* bytes written, without the NUL */
    int truncated;     /* 1: the tool had more to say than output_cap - 1 bytes (the core
                          then tells the model its output was cut) */
    uint32_t status;   /* a tern_tool_status */
} tern_tool_result;

typedef struct tern_tool_ops {
    size_t size; /* sizeof(tern_tool_ops) as built */

    /* Make an instance from the settings in ctx (host->get_*). On failure a
     * status after host->fail(); *state is then unused. */
    int (*create)(tern_ctx *ctx, void **state);
    void (*destroy)(void *state);

    /* The function as the model is told of it: *schema points to JSON text
     * owned by the instance, valid until destroy, of the form chat templates
     * take: {"type": "function", "function": {"name": ..., "description":
     * ..., "parameters": {JSON schema of the arguments object}}}. The name
     * is [A-Za-z0-9_-]+, at most TERN_TOOL_NAME_MAX bytes, and unique within
     * a run. */
    int (*describe)(void *state, const char **schema);

    /* Run one call: TERN_OK with out filled (any tern_tool_status), or a
     * failure status after host->fail() when the plugin cannot run at all. */
    int (*call)(void *state, const tern_tool_call *call, tern_tool_result *out);
} tern_tool_ops;

#ifdef __cplusplus
}
#endif
#endif /* TERN_TOOL_H */
