/* gguf_dequant.c: ggml's types and their conversion to floats (see gguf_dequant.h). */
#include "gguf/gguf_dequant.h"

#include <string.h>

#include "hf/safetensors.h"

/* ggml's numbering (ggml.h); sizes from its type traits. Types with
 * supported = 0 are known so that a refusal can name them and a file's
 * tensor table can still be checked against the file's length. */
static const struct {
    uint32_t type;
    ggml_type_info info;
} types[] = {
    {0, {"F32", 1, 4, 1}},        {1, {"F16", 1, 2, 1}},        {2, {"Q4_0", 32, 18, 1}},
    {3, {"Q4_1", 32, 20, 1}},     {6, {"Q5_0", 32, 22, 0}},     {7, {"Q5_1", 32, 24, 0}},
    {8, {"Q8_0", 32, 34, 1}},     {9, {"Q8_1", 32, 36, 0}},     {10, {"Q2_K", 256, 84, 0}},
    {11, {"Q3_K", 256, 110, 0}},  {12, {"Q4_K", 256, 144, 0}},  {13, {"Q5_K", 256, 176, 0}},
    {14, {"Q6_K", 256, 210, 0}},  {15, {"Q8_K", 256, 292, 0}},  {16, {"IQ2_XXS", 256, 66, 0}},
    {17, {"IQ2_XS", 256, 74, 0}}, {18, {"IQ3_XXS", 256, 98, 0}}, {19, {"IQ1_S", 256, 50, 0}},
    {20, {"IQ4_NL", 32, 18, 0}},  {21, {"IQ3_S", 256, 110, 0}}, {22, {"IQ2_S", 256, 82, 0}},
    {23, {"IQ4_XS", 256, 136, 0}}, {24, {"I8", 1, 1, 0}},       {25, {"I16", 1, 2, 0}},
    {26, {"I32", 1, 4, 0}},       {27, {"I64", 1, 8, 0}},       {28, {"F64", 1, 8, 0}},
    {29, {"IQ1_M", 256, 56, 0}},  {30, {"BF16", 1, 2, 1}},      {34, {"TQ1_0", 256, 54, 0}},
    {35, {"TQ2_0", 256, 66, 0}},
};

const char ggml_supported_names[] = "F32, F16, BF16, Q8_0, Q4_0 and Q4_1";

void ggml_type_describe(uint32_t type, ggml_type_info *out)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].type == type) {
            *out = types[i].info;
            return;
        }
    *out = (ggml_type_info){"unknown", 0, 0, 0};
}

static float bits_to_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static float f16(const uint8_t *p) { return st_half_to_float(u16(p)); }

int gguf_dequantize(uint32_t type, const uint8_t *src, size_t n, float *dst)
{
    ggml_type_info ti;
    ggml_type_describe(type, &ti);
    if (!ti.supported || n % ti.block_elems != 0)
        return -1;
    size_t nb = n / ti.block_elems; /* blocks */
    switch (type) {
    case GGML_TYPE_F32:
        for (size_t i = 0; i < n; i++, src += 4)
            dst[i] = bits_to_float((uint32_t)src[0] | (uint32_t)src[1] << 8 |
                                   (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24);
        return 0;
    case GGML_TYPE_F16:
        for (size_t i = 0; i < n; i++, src += 2)
            dst[i] = f16(src);
        return 0;
    case GGML_TYPE_BF16:
        for (size_t i = 0; i < n; i++, src += 2)
            dst[i] = bits_to_float((uint32_t)u16(src) << 16);
        return 0;
    case GGML_TYPE_Q8_0: /* {f16 d; i8 q[32]} */
        for (size_t b = 0; b < nb; b++, src += 34, dst += 32) {
            float d = f16(src);
            for (int i = 0; i < 32; i++)
                dst[i] = (float)(int8_t)src[2 + i] * d;
        }
        return 0;
    case GGML_TYPE_Q4_0: /* {f16 d; u8 q[16]}: low nibbles are weights 0..15, high 16..31 */
        for (size_t b = 0; b < nb; b++, src += 18, dst += 32) {
            float d = f16(src);
            const uint8_t *q = src + 2;
            for (int i = 0; i < 16; i++) {
                dst[i] = (float)((q[i] & 0x0f) - 8) * d;
                dst[i + 16] = (float)((q[i] >> 4) - 8) * d;
            }
        }
        return 0;
    case GGML_TYPE_Q4_1: /* {f16 d; f16 m; u8 q[16]} */
        for (size_t b = 0; b < nb; b++, src += 20, dst += 32) {
            float d = f16(src), m = f16(src + 2);
            const uint8_t *q = src + 4;
            for (int i = 0; i < 16; i++) {
                dst[i] = (float)(q[i] & 0x0f) * d + m;
                dst[i + 16] = (float)(q[i] >> 4) * d + m;
            }
        }
        return 0;
    default:
        return -1;
    }
}
