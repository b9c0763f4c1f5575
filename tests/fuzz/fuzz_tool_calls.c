/*
 * fuzz_tool_calls.c: libFuzzer target for the reader of the function calls
 * in a turn of the model (core/src/agent/tool_calls.c), which reads whatever
 * the policy wrote. The input is a turn's text. Nothing may crash, leak or
 * read out of bounds; every call is either a name with the arguments as a
 * JSON object's text, or an error (a malformed call the model is told of).
 *
 *   build-fuzz/tests/fuzz/fuzz_tool_calls -max_total_time=600 corpus tests/fuzz/corpus_tool_calls
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/tool_calls.h"
#include "tern/abi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    tern_parsed_call *calls = NULL;
    size_t n = 0;
    if (tern_tool_calls_parse(text, &calls, &n) == TERN_OK) {
        for (size_t i = 0; i < n; i++) {
            if (!calls[i].error && (!calls[i].name || !calls[i].arguments))
                abort(); /* neither a call nor an error */
            if (calls[i].arguments) {
                json_t *v = json_loads(calls[i].arguments, 0, NULL);
                if (!json_is_object(v))
                    abort(); /* arguments that are no JSON object */
                json_decref(v);
            }
        }
        tern_tool_calls_free(calls, n);
    }
    free(text);
    return 0;
}
