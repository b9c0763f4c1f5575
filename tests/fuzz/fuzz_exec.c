/*
 * fuzz_exec.c: libFuzzer target for the `exec` and `python` rewards' reply
 * parser (plugins/rewards/exec/exec_protocol.c): a command's output line is
 * any bytes. Nothing may crash or read out of bounds; a verdict keeps at most
 * TERN_REWARD_MAX_COMPONENTS components, each with a valid interned name;
 * the reason is always a terminated string. The request writer gets the
 * same bytes as a response and must give one valid line.
 *
 *   build-fuzz/tests/fuzz/fuzz_exec -max_total_time=600 corpus tests/fuzz/corpus_exec
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec_protocol.h"

static exec_names names; /* kept across inputs, as an instance keeps it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tern_reward_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    exec_reply k = exec_parse_reply((const char *)data, size, &r, &names);
    if (k != EXEC_VERDICT && k != EXEC_ERROR && k != EXEC_GARBAGE)
        abort();
    if (!memchr(r.reason, '\0', sizeof r.reason) || r.n_components > TERN_REWARD_MAX_COMPONENTS)
        abort();
    for (uint32_t c = 0; c < r.n_components; c++)
        if (!r.components[c].name || !*r.components[c].name)
            abort();
    size_t n = 0;
    char *line = exec_request("{}", (const char *)data, size, 1, &n);
    if (line && (n == 0 || line[n - 1] != '\n' || memchr(line, '\n', n - 1)))
        abort();
    free(line);
    return 0;
}
