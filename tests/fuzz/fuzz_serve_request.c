/*
 * fuzz_serve_request.c: libFuzzer target for the request path of `tern
 * serve` (core/src/serve/serve_request.c), which reads whatever a client
 * sends. The input's first byte picks the endpoint (chat or completions);
 * the rest is the body. Nothing may crash, leak or read out of bounds; a
 * body is either a request within the limits, or an error with an HTTP
 * status of 4xx or 5xx, a type and a message, whose JSON is OpenAI's error
 * object.
 *
 *   build-fuzz/tests/fuzz/fuzz_serve_request -max_total_time=600 corpus tests/fuzz/corpus_serve_request
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_job.h"
#include "serve/serve_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    tern_serve_kind kind = data[0] & 1 ? TERN_SERVE_COMPLETION : TERN_SERVE_CHAT;
    tern_serve_limits lim = tern_serve_default_limits();
    tern_serve_request r;
    tern_serve_error e;
    if (tern_serve_parse(kind, (const char *)data + 1, size - 1, &lim, &r, &e) == 0) {
        if (r.n < 1 || r.n > lim.n || r.max_tokens > lim.max_tokens || r.n_stop > 4 ||
            !(r.temperature >= 0 && r.temperature <= 2) || !(r.top_p > 0 && r.top_p <= 1) ||
            r.top_logprobs > (kind == TERN_SERVE_CHAT ? 20u : 5u) ||
            (r.top_logprobs > 0 && !r.logprobs))
            abort(); /* a request outside its limits */
        if ((r.call_required || r.call_name) && !r.tools)
            abort(); /* a forced call with no function to call */
        if (kind == TERN_SERVE_CHAT) {
            json_t *m = json_loads(r.messages, 0, NULL);
            if (!json_is_array(m) || json_array_size(m) == 0 ||
                json_array_size(m) > lim.messages)
                abort(); /* the conversation the template gets is no array of messages */
            json_decref(m);
            if (r.tools) {
                json_t *t = json_loads(r.tools, 0, NULL);
                if (!json_is_array(t))
                    abort();
                json_decref(t);
            }
        } else if (r.n_prompts < 1 || r.n_prompts > lim.prompts) {
            abort();
        }
        tern_serve_request_free(&r);
    } else {
        if (e.status < 400 || e.status > 599 || !e.type[0] || !e.message[0])
            abort(); /* an error without its status, type or words */
        char *body = tern_serve_error_body(&e);
        json_t *v = body ? json_loads(body, 0, NULL) : NULL;
        if (!json_is_object(json_object_get(v, "error")))
            abort();
        json_decref(v);
        free(body);
    }
    return 0;
}
