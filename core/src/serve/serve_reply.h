/* serve_reply.h: the JSON `tern serve` answers with, in OpenAI's shapes
 * (docs/serve.md): a chat.completion or text_completion body, the chunks of
 * a stream, and the model list. Model thread: token texts for log-probs come
 * from the model's detokenizer. */
#ifndef TERN_SERVE_REPLY_H
#define TERN_SERVE_REPLY_H

#include <stddef.h>

#include "model/model.h"
#include "serve/serve_job.h"

/* finish_reason of a choice: "stop", "length" or "tool_calls". */
const char *tern_serve_finish_reason(const tern_serve_choice *c);

/* The whole reply of a decoded job (malloc'd), NULL when out of memory or
 * the model failed (tern_error_message()). */
char *tern_serve_reply_body(const tern_serve_job *j, const tern_model *m);

/* A stream's event for choice k: its content text[0..n) (may be empty), the
 * log-probs of tokens [t0, t1) when asked for, its tool calls when
 * with_calls, finish_reason when `finish` is not NULL. Written to the job.
 * 0, or -1 (out of memory, or the model failed). */
int tern_serve_stream_chunk(tern_serve_job *j, const tern_model *m, size_t k, const char *text,
                            size_t n, size_t t0, size_t t1, int with_calls, const char *finish);
/* The usage event (stream_options.include_usage) and the closing [DONE]. */
int tern_serve_stream_end(tern_serve_job *j);

/* /v1/models, or /v1/models/NAME's object when one (malloc'd). */
char *tern_serve_models_body(const char *name, long long created, int one);

#endif
