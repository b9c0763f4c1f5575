/* sha256.c: SHA-256 (see sha256.h), as FIPS 180-4 writes it out. */
#include "base/sha256.h"

#include <stdio.h>
#include <string.h>

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

#define ROR32(x, n) ((x) >> (n) | (x) << (32 - (n)))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25)) + ((e & f) ^ (~e & g)) +
                      sha_k[i] + w[i];
        uint32_t t2 = (ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void tern_sha256_init(tern_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->total = 0;
    s->n = 0;
}

void tern_sha256_update(tern_sha256 *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->total += len;
    if (s->n) { /* fill the partial block first */
        size_t take = 64 - s->n < len ? 64 - s->n : len;
        memcpy(s->buf + s->n, p, take);
        s->n += take, p += take, len -= take;
        if (s->n < 64)
            return;
        sha256_block(s->h, s->buf);
        s->n = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        sha256_block(s->h, p);
    memcpy(s->buf, p, len);
    s->n = len;
}

void tern_sha256_digest(tern_sha256 *s, unsigned char digest[32])
{
    /* the tail: 0x80, zeros, the bit length (big-endian), to whole blocks */
    uint64_t bits = s->total * 8;
    unsigned char t[128];
    memcpy(t, s->buf, s->n);
    size_t rest = s->n;
    t[rest++] = 0x80;
    size_t end = rest <= 56 ? 64 : 128;
    memset(t + rest, 0, end - rest);
    for (int i = 0; i < 8; i++)
        t[end - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < end; i += 64)
        sha256_block(s->h, t + i);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            digest[4 * i + b] = (unsigned char)(s->h[i] >> (24 - 8 * b));
}

void tern_sha256_to_hex(const unsigned char digest[32], char hex[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

void tern_sha256_hex(tern_sha256 *s, char hex[65])
{
    unsigned char d[32];
    tern_sha256_digest(s, d);
    tern_sha256_to_hex(d, hex);
}
