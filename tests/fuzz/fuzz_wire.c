/*
 * fuzz_wire.c: libFuzzer target for the decoder of the roles' messages
 * (core/src/channel/wire.c), which reads what another MPI rank sent. The
 * input is one encoded message of any kind. Nothing may crash, leak, read
 * out of bounds or allocate far more than the input's size; a message the
 * decoder accepts must encode again (so it is whole: every array and string
 * the decoded pointers point at is read), that encoding must decode, and
 * encoding the result must give the same bytes (JSON text is re-spelt once,
 * then stays).
 *
 *   build-fuzz/tests/fuzz/fuzz_wire -max_total_time=600 corpus tests/fuzz/corpus_wire
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "channel/messages.h"
#include "channel/wire.h"
#include "tern/abi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, so that AddressSanitizer catches a read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    void *m = NULL, *m2 = NULL;
    unsigned char *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    int rc = tern_wire_decode(copy, size, &m);
    if (rc == TERN_OK) {
        rc = tern_wire_encode(m, &b1, &n1);
        if (rc != TERN_OK && rc != TERN_ENOMEM)
            abort(); /* decoded, but not whole */
        if (rc == TERN_OK) {
            rc = tern_wire_decode(b1, n1, &m2);
            if (rc != TERN_OK && rc != TERN_ENOMEM)
                abort(); /* the encoder wrote what the decoder refuses */
            if (rc == TERN_OK && tern_wire_encode(m2, &b2, &n2) == TERN_OK &&
                (n2 != n1 || memcmp(b1, b2, n1) != 0))
                abort(); /* the second trip changed the message */
        }
    } else if (rc != TERN_EINVAL && rc != TERN_ENOMEM) {
        abort();
    }
    free(b2);
    free(b1);
    tern_msg_free(m2);
    tern_msg_free(m);
    free(copy);
    return 0;
}
