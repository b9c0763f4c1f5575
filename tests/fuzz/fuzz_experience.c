/*
 * fuzz_experience.c: libFuzzer target for the experience decoder
 * (core/src/experience), the code that reads what a buffer hands back,
 * including a durable buffer's file written by another process. The input
 * is one record: a group (format 5, each response a trajectory of segments;
 * format 4, one-answer responses; format 3, without the image either), its
 * prompt and responses. Nothing may crash, leak or read out of bounds; a
 * format 5 record the decoder accepts must encode back to exactly the same
 * bytes (the encoding is canonical, so an accepted record is never a misread
 * one); an older one encodes as format 5, which must decode and encode again
 * to those same bytes; and either check reads every
 * array and name the decoded pointers point at. Each input is decoded twice: as it
 * is, and "resealed" (its length and checksum fields made right), so that
 * the fuzzer reaches the checks behind the checksum (sizes, names, finite
 * values, statistics).
 *
 *   build-fuzz/tests/fuzz/fuzz_experience -max_total_time=600 corpus tests/fuzz/corpus_experience
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "experience/crc32c.h"
#include "experience/experience.h"

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void decode_and_check(const uint8_t *copy, size_t size)
{
    tern_experience e;
    if (tern_experience_decode(copy, size, &e) == 0) {
        size_t n = tern_experience_bytes(&e);
        int current = copy[4] == TERN_EXPERIENCE_FORMAT;
        if (n == 0 || (current && n != size))
            abort();
        uint8_t *again = malloc(n);
        if (again) {
            tern_experience_encode(&e, again);
            if (current && memcmp(again, copy, n) != 0)
                abort();
            if (!current) { /* an older format, written again as format 5 */
                tern_experience f;
                if (tern_experience_decode(again, n, &f) != 0 || tern_experience_bytes(&f) != n)
                    abort();
                uint8_t *third = malloc(n);
                if (third) {
                    tern_experience_encode(&f, third);
                    if (memcmp(third, again, n) != 0)
                        abort();
                    free(third);
                }
                tern_experience_clear(&f);
            }
            free(again);
        }
        tern_experience_clear(&e);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, so that AddressSanitizer catches a read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    decode_and_check(copy, size);
    if (size >= 16 && size <= UINT32_MAX) {
        put_le32(copy + 8, (uint32_t)size);
        put_le32(copy + 12, tern_crc32c(0, copy + 16, size - 16));
        decode_and_check(copy, size);
    }
    free(copy);
    return 0;
}
