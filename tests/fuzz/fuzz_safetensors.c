/*
 * fuzz_safetensors.c: libFuzzer target for the safetensors reader
 * (plugins/models/transformer/hf/safetensors.h). The input is a whole file
 * image: st_open_buffer validates it, and every tensor it accepts is looked
 * up and converted, so any byte the validation lets through is read. Nothing
 * may crash, leak, read out of bounds or overflow.
 *
 *   build-fuzz/tests/fuzz/fuzz_safetensors -max_total_time=600 corpus tests/fuzz/corpus_safetensors
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes, so that AddressSanitizer catches a read past the end */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    st_file f;
    char err[512];
    if (st_open_buffer(copy, size, "fuzz", &f, err, sizeof err) == 0) {
        for (size_t i = 0; i < f.n_tensors; i++) {
            const st_tensor *t = &f.tensors[i];
            if (st_find(&f, t->name) == NULL)
                abort(); /* every listed tensor is found by name */
            /* validation bounds nbytes by the input, and an element is at least 2 bytes
             * for the dtypes converted, so this allocation is at most 2x the input */
            if (t->dtype != ST_OTHER && t->nbytes < t->numel * 2)
                abort();
            float *dst = malloc((t->numel ? t->numel : 1) * sizeof *dst);
            if (!dst)
                continue;
            int rc = st_to_f32(t, dst, t->numel, err, sizeof err);
            if ((rc == 0) != (t->dtype != ST_OTHER))
                abort();
            free(dst);
        }
        for (size_t i = 0; i < f.n_meta; i++)
            if (st_metadata_get(&f, f.meta_keys[i]) == NULL)
                abort();
        st_close(&f);
    }
    free(copy);
    return 0;
}
