/* toolbox.h: a run's tools (the `tools` section, docs/agents.md "Tools"):
 * what the model is told of them, and their calls answered as the text of
 * a `tool` turn. */
#ifndef TERN_AGENT_TOOLBOX_H
#define TERN_AGENT_TOOLBOX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/tool_calls.h"
#include "tern/environment.h"
#include "tern/tool.h"

struct tern_session;

/* One tool: a tool plugin instance, or one of the environment's own. */
typedef struct tern_tool {
    const tern_tool_ops *ops;                 /* a plugin's; NULL for the environment's */
    const tern_environment_ops *env_ops;      /* the environment's, for its tools */
    void *state;                              /* the plugin's or the environment's */
    const char *plugin;   /* the plugin's name */
    const char *label;    /* "tools[0]", "environment" */
    char *name;           /* the function's name, from its schema */
    size_t output_max;    /* the slot's output_max: bytes of output the model sees at most */
    int thread_safe;
    pthread_mutex_t own_lock;
    pthread_mutex_t *lock; /* its calls one at a time unless thread_safe (an
                              environment's: the run's lock of its ops) */
} tern_tool;

/* The run's environment, whose own tools join the box. */
typedef struct tern_toolbox_env {
    const tern_environment_ops *ops;
    void *state;
    const char *plugin;
    int thread_safe;
    pthread_mutex_t *lock; /* held around its ops unless thread_safe */
} tern_toolbox_env;

typedef struct tern_toolbox {
    tern_tool *tool;
    size_t n;
    char *schemas;        /* a JSON array of every tool's schema (compact text) */
    /* Without a tool block in the model's template: the text tern puts in
     * the system turn instead (tern_toolbox_system_block), else NULL. */
    char *system_block;
} tern_toolbox;

/* Open the session's tools[...] instances (created), and env's own tools
 * (env NULL: no environment), into *box: their schemas checked (JSON, a
 * [A-Za-z0-9_-]+ name, unique) and gathered. TERN_ECONFIG with a message
 * naming the slot; a box with n == 0 when there are none. Close with
 * tern_toolbox_close. */
int tern_toolbox_open(tern_toolbox *box, struct tern_session *s, const tern_toolbox_env *env);
void tern_toolbox_close(tern_toolbox *box);

/* The Hermes tool block (Qwen2.5's wording) listing the schemas, which tern
 * appends to the system turn of a model whose template has no tool block:
 * box->system_block gets it. TERN_OK or TERN_ENOMEM. */
int tern_toolbox_make_system_block(tern_toolbox *box);

/* The text of the `tool` turn that answers call c: the tool's output, or
 * "invalid tool call: ..." / "tool error: ..." (an unknown tool, a
 * malformed call, the tool's own verdict), with "[output truncated to N
 * bytes]" after an output cut at the slot's output_max. *text is our own.
 * *status the tern_tool_status (TERN_TOOL_INVALID for a call no tool could
 * take). TERN_OK; a failure status with a message only when the tool plugin
 * itself failed (or out of memory). `seed` is the call's; `episode` the
 * trajectory's environment episode (NULL without one), which the
 * environment's own tools act on. Thread-safe. */
int tern_toolbox_answer(tern_toolbox *box, const tern_parsed_call *c, uint64_t seed,
                        void *episode, char **text, uint32_t *status);

#endif
