/*
 * tern/rng.h: a small deterministic random number generator (xoshiro256**),
 * header-only so that plugins get reproducible streams without linking libtern.
 *
 * Seed it from host->rng_seed(ctx, "stream") so that a run's `run.seed` decides
 * every random choice. Not thread-safe: give each thread its own tern_rng.
 * Not for cryptography.
 */
#ifndef TERN_RNG_H
#define TERN_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tern_rng {
    uint64_t s[4];
} tern_rng;

/* splitmix64 step: expands one 64-bit seed into well-mixed state words. */
static inline uint64_t tern_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Any seed, 0 included, gives a valid (never all-zero) state. */
static inline void tern_rng_seed(tern_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = tern_splitmix64(&seed);
}

static inline uint64_t tern_rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Next 64 uniformly distributed bits. */
static inline uint64_t tern_rng_u64(tern_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = tern_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = tern_rng_rotl(s[3], 45);
    return result;
}

/* Uniform whole number in [0, m), m >= 1, without modulo bias: draws below
 * 2^64 mod m are rejected, so each residue is equally likely. */
static inline uint64_t tern_rng_below(tern_rng *r, uint64_t m)
{
    uint64_t threshold = (0 - m) % m; /* 2^64 mod m */
    for (;;) {
        uint64_t x = tern_rng_u64(r);
        if (x >= threshold)
            return x % m;
    }
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double tern_rng_uniform(tern_rng *r)
{
    return (double)(tern_rng_u64(r) >> 11) * 0x1.0p-53;
}

#ifdef __cplusplus
}
#endif
#endif /* TERN_RNG_H */
