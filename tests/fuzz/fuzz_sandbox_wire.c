/*
 * fuzz_sandbox_wire.c: libFuzzer target for the code reward's sandbox
 * messages (plugins/rewards/code/sandbox/wire.c). tern-sandbox decodes a
 * request from its standard input and the plugin decodes the helper's
 * response, so both decoders take any bytes: nothing may crash, read out of
 * bounds or leak, and whatever decodes must encode back to the same bytes.
 * The first input byte picks the decoder.
 *
 *   build-fuzz/tests/fuzz/fuzz_sandbox_wire -max_total_time=600 corpus tests/fuzz/corpus_sandbox_wire
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/wire.h"

static void same_bytes(const sandbox_buf *b, const uint8_t *msg, size_t len)
{
    if (b->oom)
        return;
    if (b->len != len || memcmp(b->data, msg, len) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    char why[160] = "";
    sandbox_buf out = {0};
    if (data[0] & 1) {
        sandbox_response res;
        if (sandbox_response_decode(msg, len, &res, why, sizeof why) == 0) {
            sandbox_response_encode(&res, &out);
            same_bytes(&out, msg, len);
            sandbox_response_free(&res);
        } else if (!why[0]) {
            abort(); /* a refusal always says why */
        }
    } else {
        sandbox_request req;
        if (sandbox_request_decode(msg, len, &req, why, sizeof why) == 0) {
            for (uint32_t i = 0; i < req.n_files; i++)
                if (!sandbox_file_name_ok(req.files[i].name))
                    abort();
            sandbox_request_encode(&req, &out);
            same_bytes(&out, msg, len);
            (void)sandbox_request_budget_ms(&req);
            sandbox_request_free(&req);
        } else if (!why[0]) {
            abort();
        }
    }
    sandbox_buf_free(&out);
    return 0;
}
