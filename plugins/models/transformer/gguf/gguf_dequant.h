/*
 * gguf_dequant.h: ggml's tensor types, and turning the ones small models
 * ship in into floats. A quantised type stores blocks of 32 weights:
 *
 *   Q8_0  {f16 d; i8 q[32]}            34 bytes   x[i] = d * q[i]
 *   Q4_0  {f16 d; u8 q[16]}            18 bytes   x[i] = d * (lo(q[i]) - 8),
 *                                                 x[i + 16] = d * (hi(q[i]) - 8)
 *   Q4_1  {f16 d; f16 m; u8 q[16]}     20 bytes   x[i] = d * lo(q[i]) + m,
 *                                                 x[i + 16] = d * hi(q[i]) + m
 *
 * lo/hi are the low and high nibbles (i < 16). F32, F16 and BF16 are plain
 * little-endian arrays. Results equal ggml's dequantize_row_* (and the gguf
 * Python package's) exactly: each is one float multiply and, for Q4_1, one
 * add, in the order written above.
 */
#ifndef TERN_GGUF_DEQUANT_H
#define TERN_GGUF_DEQUANT_H

#include <stddef.h>
#include <stdint.h>

/* The ggml types tern reads (and the numbers of a few it names in refusals). */
typedef enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_BF16 = 30,
} ggml_type;

/* What a ggml type is: its name ("Q4_K"), the weights per block and the
 * bytes per block (0 when unknown), and whether gguf_dequantize reads it. */
typedef struct ggml_type_info {
    const char *name;
    size_t block_elems, block_bytes;
    int supported;
} ggml_type_info;

/* Describe `type`; an unknown number gets the name "unknown" and sizes 0. */
void ggml_type_describe(uint32_t type, ggml_type_info *out);
/* The names of the supported types, for messages: "F32, F16, BF16, Q8_0, Q4_0 and Q4_1". */
extern const char ggml_supported_names[];

/* Convert n weights (a whole number of blocks) of a supported `type` at
 * src into dst. 0, or -1 when the type is not supported or n is not a
 * multiple of its block. */
int gguf_dequantize(uint32_t type, const uint8_t *src, size_t n, float *dst);

#endif
