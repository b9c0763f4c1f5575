/* png_write.c: see png_write.h. The deflate stream (RFC 1951) is one final
 * block with the fixed Huffman codes of section 3.2.6: literals, and matches
 * at distance 1 (a run of the byte before) of 3 to 258 bytes. */
#include "data/png_write.h"

#include <stdlib.h>
#include <string.h>

#include "tern/abi.h"

uint32_t tern_png_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint32_t tern_png_adler32(uint32_t adler, const uint8_t *p, size_t n)
{
    uint32_t a = adler & 0xffff, b = adler >> 16;
    while (n) {
        size_t k = n < 5552 ? n : 5552; /* the most bytes before b can overflow */
        n -= k;
        while (k--) {
            a += *p++;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    return b << 16 | a;
}

/* ---- Bits, least significant first ---------------------------------------- */

typedef struct bits {
    uint8_t *p;     /* output */
    size_t n;       /* bytes written */
    uint64_t acc;   /* pending bits */
    int count;
} bits;

static void put_bits(bits *b, uint32_t v, int n)
{
    b->acc |= (uint64_t)v << b->count;
    b->count += n;
    while (b->count >= 8) {
        b->p[b->n++] = (uint8_t)b->acc;
        b->acc >>= 8;
        b->count -= 8;
    }
}

/* A Huffman code goes out most significant bit first. */
static void put_code(bits *b, uint32_t code, int n)
{
    uint32_t r = 0;
    for (int i = 0; i < n; i++)
        r |= ((code >> i) & 1u) << (n - 1 - i);
    put_bits(b, r, n);
}

static void put_symbol(bits *b, int sym)
{
    if (sym < 144)
        put_code(b, 0x30u + (uint32_t)sym, 8);
    else if (sym < 256)
        put_code(b, 0x190u + (uint32_t)(sym - 144), 9);
    else if (sym < 280)
        put_code(b, (uint32_t)(sym - 256), 7);
    else
        put_code(b, 0xC0u + (uint32_t)(sym - 280), 8);
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};

static void put_match(bits *b, int length)
{
    int k = 28;
    while (len_base[k] > length)
        k--;
    put_symbol(b, 257 + k);
    if (len_extra[k])
        put_bits(b, (uint32_t)(length - len_base[k]), len_extra[k]);
    put_code(b, 0, 5); /* distance code 0: distance 1 */
}

/* Deflate data[0..n) into b (room for n * 9 / 8 + 16 bytes). */
static void deflate_fixed(bits *b, const uint8_t *data, size_t n)
{
    put_bits(b, 1, 1); /* BFINAL */
    put_bits(b, 1, 2); /* BTYPE 01: fixed Huffman */
    size_t i = 0;
    while (i < n) {
        size_t run = 0;
        if (i > 0)
            while (i + run < n && run < 258 && data[i + run] == data[i - 1])
                run++;
        if (run >= 3) {
            put_match(b, (int)run);
            i += run;
        } else {
            put_symbol(b, data[i]);
            i++;
        }
    }
    put_symbol(b, 256);
    if (b->count)
        put_bits(b, 0, 8 - b->count);
}

/* ---- PNG ----------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A chunk of `len` data bytes already at p + 8: writes its length, type
 * and CRC around them; returns the bytes used. */
static size_t chunk(uint8_t *p, const char *type, size_t len)
{
    put32(p, (uint32_t)len);
    memcpy(p + 4, type, 4);
    put32(p + 8 + len, tern_png_crc32(0, p + 4, len + 4));
    return len + 12;
}

static unsigned cost(const uint8_t *row, size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c += row[i] < 128 ? row[i] : 256u - row[i];
    return c;
}

int tern_png_encode_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, uint8_t **out,
                        size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (w == 0 || h == 0 || w > (1u << 24) || h > (1u << 24))
        return TERN_EINVAL;
    /* one IDAT chunk holds at most 2^31 - 1 bytes */
    if (((uint64_t)w * 3 + 1) * h > ((uint64_t)1 << 30))
        return TERN_EINVAL;
    size_t stride = (size_t)w * 3, raw_len = (size_t)h * (stride + 1);
    uint8_t *raw = malloc(raw_len);
    uint8_t *cand = malloc(3 * stride);
    size_t cap = 8 + 25 + 12 + 2 + raw_len + raw_len / 8 + 16 + 4 + 12;
    uint8_t *png = malloc(cap);
    if (!raw || !cand || !png) {
        free(raw);
        free(cand);
        free(png);
        return TERN_ENOMEM;
    }
    /* filter each row: None, Sub or Up, whichever costs least */
    for (size_t y = 0; y < h; y++) {
        const uint8_t *row = rgb + y * stride, *up = y ? row - stride : NULL;
        uint8_t *sub = cand + stride, *upf = cand + 2 * stride;
        for (size_t i = 0; i < stride; i++) {
            sub[i] = (uint8_t)(row[i] - (i >= 3 ? row[i - 3] : 0));
            upf[i] = (uint8_t)(row[i] - (up ? up[i] : 0));
        }
        unsigned c0 = cost(row, stride), c1 = cost(sub, stride), c2 = cost(upf, stride);
        uint8_t *dst = raw + y * (stride + 1);
        if (c1 < c0 && c1 <= c2) {
            dst[0] = 1;
            memcpy(dst + 1, sub, stride);
        } else if (c2 < c0) {
            dst[0] = 2;
            memcpy(dst + 1, upf, stride);
        } else {
            dst[0] = 0;
            memcpy(dst + 1, row, stride);
        }
    }
    free(cand);

    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t o = 0;
    memcpy(png, signature, 8);
    o = 8;
    uint8_t *ihdr = png + o + 8;
    put32(ihdr, w);
    put32(ihdr + 4, h);
    ihdr[8] = 8;  /* bit depth */
    ihdr[9] = 2;  /* colour type: truecolour */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    o += chunk(png + o, "IHDR", 13);

    uint8_t *idat = png + o + 8;
    idat[0] = 0x78; /* zlib: deflate, 32K window */
    idat[1] = 0x01; /* no dictionary, check bits */
    bits b = {.p = idat + 2};
    deflate_fixed(&b, raw, raw_len);
    put32(idat + 2 + b.n, tern_png_adler32(1, raw, raw_len));
    free(raw);
    o += chunk(png + o, "IDAT", 2 + b.n + 4);
    o += chunk(png + o, "IEND", 0);
    *out = png;
    *out_len = o;
    return TERN_OK;
}
