/* tool_calls.h: the function calls in a turn of the model, written the way
 * its chat format writes them (docs/agents.md, "Tools"):
 *
 *   Hermes / ChatML (Qwen2.5, SmolLM2, Hermes): any number of
 *       <tool_call>{"name": "calculator", "arguments": {"expression": "2*3"}}</tool_call>
 *   Llama 3.1 JSON: the whole turn one object, optionally after <|python_tag|>:
 *       {"name": "calculator", "parameters": {"expression": "2*3"}}
 *
 * "arguments" and "parameters" are the same; arguments given as a string
 * holding a JSON object are taken as that object. A turn with a
 * <tool_call> tag calls tools even when a call in it is malformed (that call
 * is answered "invalid tool call: ..."); a turn without one calls a tool
 * only when it is, whole, a Llama 3.1 call, so an answer that merely holds
 * braces is an answer. */
#ifndef TERN_AGENT_TOOL_CALLS_H
#define TERN_AGENT_TOOL_CALLS_H

#include <stddef.h>

/* One call. A malformed one has name NULL (or a name and arguments NULL)
 * and error set. */
typedef struct tern_parsed_call {
    char *name;      /* the function's name */
    char *arguments; /* a JSON object's compact text ("{}" when the call gave none) */
    char *error;     /* NULL, or why the call cannot be made (one line) */
} tern_parsed_call;

/* The calls in `text` (a turn of the model, NUL-terminated) into *calls (our
 * own array of *n, NULL when none; free with tern_tool_calls_free). TERN_OK,
 * or TERN_ENOMEM with a message. */
int tern_tool_calls_parse(const char *text, tern_parsed_call **calls, size_t *n);

void tern_tool_calls_free(tern_parsed_call *calls, size_t n);

#endif
