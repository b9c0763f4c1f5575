/*
 * fuzz_jinja.c: libFuzzer target for the Jinja interpreter
 * (plugins/models/transformer/jinja/). The input is a template, optionally
 * followed by a NUL and a JSON object of variables (else a conversation
 * with tools, tool calls and a system turn). It is parsed and rendered
 * under small limits; a render that fails must say why, and one that
 * succeeds must give NUL-terminated text of the length it reports. Nothing
 * may crash, leak, hang, read out of bounds or overflow.
 *
 *   build-fuzz/tests/fuzz/fuzz_jinja -max_total_time=600 corpus tests/fuzz/corpus_jinja
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja.h"

static const char default_vars[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Add 3 and 4 \\u00e9\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nsum\\n</think>\\n\\n\", \"tool_calls\":"
    " [{\"id\": \"call12345\", \"type\": \"function\", \"function\": {\"name\": \"add\","
    " \"arguments\": {\"a\": 3, \"b\": 4.5}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"call12345\", \"content\": \"7\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\":"
    " {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
    " \"enable_thinking\": false}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    /* an exact-size copy, so that AddressSanitizer catches a read past the end */
    char *src = malloc(tlen ? tlen : 1);
    if (!src)
        return 0;
    memcpy(src, data, tlen);
    json_t *ctx = NULL;
    if (nul)
        ctx = json_loadb((const char *)nul + 1, size - tlen - 1, 0, NULL);
    if (!json_is_object(ctx)) {
        json_decref(ctx);
        ctx = json_loads(default_vars, 0, NULL);
        if (!ctx)
            abort();
    }
    jinja_template *t;
    char err[512];
    if (jinja_parse(src, tlen, &t, err, sizeof err) == 0) {
        jinja_limits lim = {.max_output = 1 << 16, .max_depth = 64, .max_iterations = 10000,
                            .max_steps = 200000};
        char *text = NULL;
        size_t len = 0;
        err[0] = '\0';
        if (jinja_render(t, ctx, &lim, &text, &len, err, sizeof err) == 0) {
            if (!text || text[len] != '\0' || len > lim.max_output)
                abort();
        } else if (text || !err[0]) {
            abort(); /* a failure leaves no text and says why */
        }
        free(text);
        jinja_free(t);
    } else if (!err[0]) {
        abort();
    }
    json_decref(ctx);
    free(src);
    return 0;
}
