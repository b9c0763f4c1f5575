/*
 * simd.c: the CPU's vector level and the TERN_SIMD cap (simd.h).
 */
#include "layers/simd.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TERN_SIMD's values and the level each allows */
static const struct {
    const char *name;
    simd_level level;
} caps[] = {
    {"avx2", SIMD_AVX2},
    {"none", SIMD_PLAIN},
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static simd_level cpu, in_force;
static const char *cap_name; /* the TERN_SIMD value that lowered the level, or NULL */
static int env_bad;
static char env_value[64]; /* TERN_SIMD as read, for the message */

static simd_level probe_cpu(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TERN_NO_SIMD)
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return SIMD_PLAIN;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        return SIMD_AVX512_BF16;
    return SIMD_AVX2;
#else
    return SIMD_PLAIN;
#endif
}

static void decide(void)
{
    cpu = in_force = probe_cpu();
    const char *v = getenv("TERN_SIMD");
    if (!v || !*v)
        return;
    snprintf(env_value, sizeof env_value, "%s", v);
    simd_level cap = SIMD_PLAIN;
    env_bad = 1;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        if (strcmp(v, caps[i].name) == 0) {
            cap = caps[i].level;
            env_bad = 0;
        }
    if (cap < in_force) {
        in_force = cap;
        cap_name = env_bad ? "none" : env_value;
    }
}

simd_level simd_cpu_level(void)
{
    pthread_once(&once, decide);
    return cpu;
}

simd_level simd_level_in_force(void)
{
    pthread_once(&once, decide);
    return in_force;
}

const char *simd_env_cap(void)
{
    pthread_once(&once, decide);
    return cap_name;
}

int simd_env_check(char *err, size_t n)
{
    pthread_once(&once, decide);
    if (!env_bad)
        return 0;
    snprintf(err, n, "TERN_SIMD=%s in the environment: unknown value; it takes avx2 (AVX2 "
             "paths at most) or none (plain C), or unset it for the best this CPU has",
             env_value);
    return -1;
}
